"""The KIP-848 preflight on real groups the broker will not convert: refused by the plan and the phase-0
gate before any member is touched, then the broker's own refusal, as predicted (librdkafka 2.16: fatal)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, libversion

from kafka_coop.families import catalog
from kafka_coop.rollout import Plan
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult
from tests.integration.members import consumer_protocol_refusal, coop_consumer_refusal


class ForeignGroup:
    """A classic group of one testbed.foreign_member, whose wire bytes the test chooses."""

    def __init__(self, bootstrap: str, group: str, topic: str, *flags: str) -> None:
        self.group = group
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "testbed.foreign_member",
                "--bootstrap",
                bootstrap,
                "--group",
                group,
                "--topic",
                topic,
                "--partitions",
                "2",
                *flags,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.proc.stdout is not None
        self.joined = self.proc.stdout.readline()
        assert self.joined.startswith("joined"), self.joined

    def untouched(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


@pytest.fixture
def foreign(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> Iterator[Callable[..., ForeignGroup]]:
    made: list[ForeignGroup] = []

    def make(*flags: str) -> ForeignGroup:
        group = ForeignGroup(bootstrap, unique("foreign"), topic_factory(2), *flags)
        made.append(group)
        return group

    yield make
    for group in made:
        group.stop()


def _plan(run_cli: Callable[..., CliResult], bootstrap: str, group: str) -> tuple[int, Plan]:
    result = run_cli("upgrade-plan", group, "--to", "consumer", "--bootstrap-server", bootstrap, "-o", "json")
    return result.code, Plan.model_validate(result.json())


def _gate(run_cli: Callable[..., CliResult], bootstrap: str, group: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(
        "verify-group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--migration",
        "classic-to-consumer",
        "--phase",
        "0",
        "-o",
        "json",
    )
    return result.code, {c["name"]: c for c in result.json()["checks"]}


@pytest.mark.parametrize(
    ("flags", "check", "rule", "words"),
    [
        (("--assignment-user-data", "custom"), "no-custom-user-data", "fromClassicGroup", "carry userData"),
        (("--protocol-type", "connect"), "protocol-type", "usesConsumerGroupProtocol", "'connect'"),
    ],
    ids=["assignment-user-data", "connect-protocol-type"],
)
def test_the_preflight_refuses_what_the_broker_refuses_before_any_member_is_touched(
    foreign: Callable[..., ForeignGroup],
    bootstrap: str,
    run_cli: Callable[..., CliResult],
    flags: tuple[str, ...],
    check: str,
    rule: str,
    words: str,
) -> None:
    group = foreign(*flags)
    code, plan = _plan(run_cli, bootstrap, group.group)
    assert code == 1 and plan.status == "blocked"
    blocker = next(b for b in plan.blockers if b.name == check)
    assert words in blocker.reason
    precondition = next(c for c in plan.preconditions if c.name == check)
    assert rule in precondition.rule
    code, checks = _gate(run_cli, bootstrap, group.group)
    assert code == 1 and checks[check]["status"] == "fail"
    assert group.untouched(), "the plan and the gate only read"

    # what the broker then does to a first consumer-protocol member: it refuses it (GROUP_ID_NOT_FOUND),
    # and this librdkafka makes that fatal, as families.yaml (kip848_refused) says of its version
    topic = group.proc.args[group.proc.args.index("--topic") + 1]  # type: ignore[union-attr]
    error = consumer_protocol_refusal(bootstrap, group.group, topic)
    assert error is not None and error.code() == KafkaError._FATAL, error
    assert "group id does not exist" in error.str()
    refused = catalog()["librdkafka"].kip848_refused
    assert refused is not None and refused.at(libversion()[0]) == "fatal"
    assert group.untouched()


def test_a_java_consumer_protocol_member_refused_by_the_broker_stops(
    foreign: Callable[..., ForeignGroup], processes: MemberProcesses
) -> None:
    """families.yaml says Java (kafka-clients 4.1.1) makes GROUP_ID_NOT_FOUND fatal; a real one does."""
    group = foreign("--assignment-user-data", "custom")
    topic = group.proc.args[group.proc.args.index("--topic") + 1]  # type: ignore[union-attr]
    member = processes.add(
        MemberSpec(name="jv-848", kind="java", group=group.group, topics=(topic,), group_protocol="consumer")
    )
    deadline = time.monotonic() + 60
    while member.alive and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not member.alive, "the refused Java member stops"
    assert "GroupIdNotFoundException" in member.log_path.read_text(errors="replace")
    refused = catalog()["java"].kip848_refused
    assert refused is not None and refused.at("4.1.1") == "fatal"
    assert group.untouched()


def test_a_group_the_broker_would_convert_passes_the_preflight_and_says_what_a_refusal_would_do(
    foreign: Callable[..., ForeignGroup], bootstrap: str, run_cli: Callable[..., CliResult]
) -> None:
    group = foreign()
    _, checks = _gate(run_cli, bootstrap, group.group)
    for name in (
        "protocol-type",
        "no-custom-user-data",
        "metadata-decodes",
        "migration-policy",
        "group-size",
    ):
        assert checks[name]["status"] == "pass", checks[name]
    assert checks["consumer-protocol-enabled"]["status"] == "pass"
    assert "group.version = 1" in checks["consumer-protocol-enabled"]["reason"]
    assert checks["refusal-outcome"]["status"] == "pass"


@pytest.mark.parametrize(
    ("flags", "rule", "remedy"),
    [
        (
            ("--protocol-type", "connect"),
            "because the group's protocol type is 'connect', not 'consumer'",
            "give this consumer a group.id of its own",
        ),
        (
            ("--assignment-user-data", "custom"),
            "because the assignment of 1 member (",
            "cut the group over to range first",
        ),
    ],
    ids=["connect-protocol-type", "assignment-user-data"],
)
def test_a_kafka_coop_consumer_refused_an_online_upgrade_names_the_one_rule_that_refused_it(
    foreign: Callable[..., ForeignGroup], flags: tuple[str, ...], rule: str, remedy: str
) -> None:
    """librdkafka passes on only "The group id does not exist": the consumer reads the group and the
    broker's configs and names the rule at hand, with its remedy, in one sentence."""
    group = foreign(*flags)
    topic = group.proc.args[group.proc.args.index("--topic") + 1]  # type: ignore[union-attr]
    bootstrap = group.proc.args[group.proc.args.index("--bootstrap") + 1]  # type: ignore[union-attr]
    failed = coop_consumer_refusal(bootstrap, group.group, topic)
    assert "will not convert the classic group online " + rule in failed.message, failed.message
    assert "group.consumer.max.size" not in failed.message, "one rule, not four"
    assert failed.hint is not None and remedy in failed.hint
    assert group.untouched()
