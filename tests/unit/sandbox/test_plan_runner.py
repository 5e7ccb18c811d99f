"""The pure parts of executing a plan: config onto member specs, gate commands, the record audit."""

from __future__ import annotations

import sys
from collections import Counter

import pytest
from pydantic import ValidationError

from kafka_coop.rollout import GateSpec, MemberConfig
from kafka_coop.rollout._plan import family_config
from kafka_coop.sandbox import MemberSpec, apply_config, audit
from kafka_coop.sandbox._rollout import command_argv

BASE = MemberSpec(
    name="py0",
    kind="python",
    group="g",
    topics=("t",),
    assignors=("range",),
    properties={"session.timeout.ms": "6000", "fetch.min.bytes": "1"},
)


def test_a_consumer_protocol_phase_drops_the_classic_only_keys_it_lists() -> None:
    config = MemberConfig(
        group_protocol="consumer", remote_assignor="uniform", remove=("session.timeout.ms",)
    )
    spec = apply_config(BASE, family_config("librdkafka", config))
    assert (spec.group_protocol, spec.remote_assignor) == ("consumer", "uniform")
    assert dict(spec.properties) == {"fetch.min.bytes": "1"}


def test_a_static_phase_gives_each_member_its_own_name_as_instance_id_and_keeps_an_existing_one() -> None:
    config = family_config(
        "librdkafka", MemberConfig(assignors=("cooperative-sticky",), static_membership=True)
    )
    assert apply_config(BASE, config).instance_id == "py0"
    assert apply_config(BASE.replace(instance_id="kept"), config).instance_id == "kept"


def test_a_classic_phase_without_a_list_keeps_the_members_list() -> None:
    spec = apply_config(BASE.replace(group_protocol="consumer"), family_config("librdkafka", MemberConfig()))
    assert (spec.group_protocol, spec.assignors) == ("classic", ("range",))


def test_printed_gates_run_with_this_interpreter_and_nothing_else_is_accepted() -> None:
    argv = command_argv(GateSpec(group="my group", migration="m", phase=1, timeout_s=5))
    assert argv == [
        sys.executable,
        "-m",
        "kafka_coop.cli",
        "verify-group",
        "my group",
        *("--migration", "m", "--phase", "1", "--wait", "--timeout", "5"),
    ]
    with pytest.raises(ValidationError):
        GateSpec.model_validate({"command": "rm -rf /", "group": "g"})


def test_the_audit_counts_lost_offsets_and_duplicate_deliveries() -> None:
    processed = Counter({("t", 0, 0): 1, ("t", 0, 1): 2, ("t", 1, 0): 1, ("other", 0, 0): 1})
    result = audit("t", {0: 3, 1: 1}, processed)
    assert (result.produced, result.processed, result.duplicates, result.lost) == (4, 3, 1, 1)
    assert result.lost_examples == [("t", 0, 2)]
