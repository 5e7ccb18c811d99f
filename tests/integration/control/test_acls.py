"""Who may reconfigure a fleet, on the SASL_SSL sandbox with ACLs: only the operator's principal.

`app` (a service's principal) reads the control topic, as CONTROL_TOPIC_ACLS grants members; `admin`
stands for the operator. The broker itself refuses the member's write, so a compromised or buggy
service cannot reconfigure its peers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_coop.control import (
    CONTROL_TOPIC,
    CONTROL_TOPIC_CONFIG,
    CONTROL_TOPIC_PARTITIONS,
    ControlRecord,
    publish_control,
    read_outcomes,
)
from kafka_coop.errors import ClusterUnavailable
from kafka_coop.events import now_ms
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
from kafka_coop.rollout import Runner
from kafka_coop.rollout._protection import unprotected_reason
from kafka_coop.sandbox import MemberProcess, Sandbox
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import SASL_GROUP, CliResult

pytestmark = pytest.mark.xdist_group(SASL_GROUP)

TOPIC, GROUP, INSTANCE = "app-control-orders", "app-control", "app-control-0"


@pytest.fixture(scope="module")
def secured(secure_sandbox: Sandbox) -> Sandbox:
    admin = secure_sandbox.admin()
    admin.ensure_topic(TOPIC, 2)
    admin.ensure_topic(CONTROL_TOPIC, CONTROL_TOPIC_PARTITIONS, config=CONTROL_TOPIC_CONFIG)
    admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG)
    return secure_sandbox


@pytest.fixture(scope="module")
def member(secured: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemberProcess]:
    """One static member of GROUP, running as the restricted `app` user, following the control topic."""
    work: Path = tmp_path_factory.mktemp("control-acls")
    with MemberProcesses(secured.bootstrap, work, command_config=secured.properties_path("app")) as fleet:
        spec = MemberSpec(
            name="m0",
            kind="python",
            group=GROUP,
            topics=(TOPIC,),
            assignors=("range",),
            instance_id=INSTANCE,
            control=True,
        )
        joined = fleet.add(spec)
        fleet.wait_stable(GROUP, joined=[joined])
        yield joined


def record(plan_id: str, step: int) -> ControlRecord:
    return ControlRecord(
        plan_id=plan_id,
        group=GROUP,
        step=step,
        phase="1",
        kind="reconfigure",
        settings={"group.protocol": "consumer"},  # eager to KIP-848: a live path for librdkafka
        issued_at_ms=now_ms(),
    )


def conf(box: Sandbox, user: str) -> dict[str, str]:
    return {"bootstrap.servers": box.bootstrap, **box.client_conf(user)}


def test_the_broker_refuses_a_members_principal_writing_the_control_topic(
    secured: Sandbox, member: MemberProcess
) -> None:
    with pytest.raises(ClusterUnavailable) as refused:
        publish_control(conf(secured, "app"), record("from-a-member", 1))
    assert refused.value.exit_code == 3
    assert "may not WRITE the control topic" in str(refused.value)
    assert "TOPIC_AUTHORIZATION_FAILED" in str(refused.value)


def test_a_members_attempt_changes_nothing_and_the_operators_record_is_applied(
    secured: Sandbox, member: MemberProcess
) -> None:
    with pytest.raises(ClusterUnavailable):
        publish_control(conf(secured, "app"), record("from-a-member", 1))
    operator = conf(secured, "admin")
    assert read_outcomes(operator, GROUP, "from-a-member", 1, timeout_s=5) == {}
    assert not [e for e in member.events() if e["kind"] == "reconfigured"]
    publish_control(operator, record("from-the-operator", 1))
    answers = read_outcomes(operator, GROUP, "from-the-operator", 1, timeout_s=60, expect=[INSTANCE])
    assert answers[INSTANCE].outcome == "applied", answers
    assert [e["protocol"] for e in member.events() if e["kind"] == "reconfigured"] == ["consumer"]
    assert member.starts == 1 and member.alive


def _members_write_grant() -> list[Any]:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return [
        AclBinding(
            ResourceType.TOPIC,
            CONTROL_TOPIC,
            ResourcePatternType.LITERAL,
            "User:app",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        )
    ]


def test_rollout_run_refuses_a_control_topic_a_members_principal_may_write_and_takes_no_step(
    secured: Sandbox, member: MemberProcess, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """The sandbox's ACLs (members READ, the operator a super user) pass; one WRITE for `app` more is
    bad input naming it, before any step, the journal never written."""
    operator = secured.admin()
    to = "classic" if operator.describe_group(GROUP).group_type == "consumer" else "cooperative"
    runner = Runner(
        operator,
        GROUP,
        conf=secured.client_conf("admin"),
        hook=None,
        command_config=None,
        gate_timeout_s=15,
        apply_timeout_s=15,
    )
    assert unprotected_reason(runner.control_grants(), operator="User:admin") is None

    def reconfigured() -> int:
        return sum(e["kind"] == "reconfigured" for e in member.events())

    before = reconfigured()
    for future in operator.client.create_acls(_members_write_grant(), request_timeout=15).values():
        future.result()
    try:
        journal = tmp_path / "walk.jsonl"
        refused = run_cli(
            "rollout", "run", GROUP, "--to", to, "--bootstrap-server", secured.bootstrap,
            "--command-config", str(secured.properties_path("admin")), "--journal", str(journal),
            "-o", "json",
        )  # fmt: skip
        assert refused.code == 2, refused.stdout + refused.stderr
        error = json.loads(refused.stdout)["error"]
        assert error["message"].startswith("User:app may write the control topic"), error
        assert "DESCRIBE, WRITE" in error["hint"] and "--unprotected-control" in error["hint"]
        assert not journal.exists()
        assert reconfigured() == before, "no member was changed"
    finally:
        filters = [_as_filter(b) for b in _members_write_grant()]
        for future in operator.client.delete_acls(filters, request_timeout=15).values():
            future.result()


def _as_filter(binding: Any) -> Any:
    from confluent_kafka.admin import AclBindingFilter  # type: ignore[attr-defined]

    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )
