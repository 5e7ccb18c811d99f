"""The control record's rules: what parses, whom it addresses, which keys may change live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from kafka_coop.control import (
    CONTROL_TOPIC,
    CONTROL_TOPIC_ACLS,
    CONTROL_TOPIC_CONFIG,
    CONTROL_TOPIC_PARTITIONS,
    RECONFIGURABLE_KEYS,
    REMOVE,
    ControlKind,
    ControlOutcome,
    ControlRecord,
    Judgement,
    apply_settings,
    judge,
    member_conf,
    parse_control,
)
from kafka_coop.manifest import Manifest, parse_manifest
from kafka_coop.rollout import load_migration

MIGRATIONS = Path(__file__).resolve().parents[3] / "migrations"


def record(**changes: object) -> ControlRecord:
    fields: dict[str, object] = {
        "plan_id": "p1",
        "group": "orders",
        "step": 3,
        "phase": "2",
        "kind": "reconfigure",
        "members": None,
        "settings": {"partition.assignment.strategy": "cooperative-sticky"},
        "issued_at_ms": 1_700_000_000_000,
    }
    fields.update(changes)
    return ControlRecord.model_validate(fields)


def test_a_record_survives_its_own_json() -> None:
    original = record(members=["svc-0"])
    assert parse_control(original.model_dump_json().encode()) == original


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"not json",
        b"\xff\xfe",
        b"[]",
        json.dumps(
            {
                "v": 2,
                "plan_id": "p",
                "group": "g",
                "step": 1,
                "phase": "1",
                "kind": "reconfigure",
                "issued_at_ms": 1,
            }
        ).encode(),
        json.dumps(
            {
                "v": 1,
                "plan_id": "p",
                "group": "g",
                "step": 1,
                "phase": "1",
                "kind": "restart",
                "issued_at_ms": 1,
            }
        ).encode(),
        json.dumps(
            {
                "v": 1,
                "plan_id": "p",
                "group": "g",
                "step": -1,
                "phase": "1",
                "kind": "reconfigure",
                "issued_at_ms": 1,
            }
        ).encode(),
        json.dumps(
            {
                "v": 1,
                "plan_id": "p",
                "group": "g",
                "step": 1,
                "phase": "1",
                "kind": "reconfigure",
                "issued_at_ms": 1,
                "settings": {"group.protocol": 2},
            }
        ).encode(),
    ],
)
def test_anything_but_a_version_1_record_parses_to_none(value: bytes | None) -> None:
    assert parse_control(value) is None


def test_a_record_without_members_addresses_every_member() -> None:
    assert record(members=None).addresses(None, "anything")


def test_members_select_by_instance_id_or_client_id() -> None:
    chosen = record(members=["svc-1", "client-2"])
    assert chosen.addresses("svc-1", "c")
    assert chosen.addresses(None, "client-2")
    assert not chosen.addresses("svc-0", "client-0")
    assert not chosen.addresses(None, None)


def test_a_key_that_no_migration_sets_is_refused() -> None:
    assert record(
        settings={"group.protocol": "consumer", "bootstrap.servers": "evil:9092"}
    ).refused_keys() == ["bootstrap.servers"]


def test_the_reconfigurable_keys_are_the_keys_the_migrations_set_or_remove() -> None:
    touched: set[str] = set()
    for path in sorted(MIGRATIONS.glob("*.yaml")):
        spec = load_migration(str(path))
        configs = [spec.start_config, *(phase.config for phase in spec.phases)]
        for config in configs:
            member = config.get("librdkafka")
            if member is not None:
                touched |= set(member.librdkafka_conf()) | set(member.remove)
    assert touched == RECONFIGURABLE_KEYS


def test_a_remove_value_drops_the_key_and_any_other_sets_it() -> None:
    conf = {"group.id": "g", "partition.assignment.strategy": "range", "session.timeout.ms": "10000"}
    updated = apply_settings(
        conf,
        {"group.protocol": "consumer", "partition.assignment.strategy": REMOVE, "session.timeout.ms": REMOVE},
    )
    assert updated == {"group.id": "g", "group.protocol": "consumer"}
    assert conf["partition.assignment.strategy"] == "range"


def test_a_manifest_carries_the_members_answer_and_older_manifests_still_parse() -> None:
    fields = {
        "group": "orders",
        "member_id": "m",
        "instance_id": "svc-0",
        "client_id": "c",
        "host": "h",
        "libraries": {},
        "group_protocol": "classic",
        "assignors": ["range"],
        "rebalance_protocol": "eager",
        "remote_assignor": None,
        "started_ms": 1,
        "heartbeat_ms": 2,
    }
    assert parse_manifest(json.dumps(fields).encode()) == Manifest.model_validate(fields)
    answer = ControlOutcome(
        plan_id="p1", step=3, outcome="refused", reason="bootstrap.servers may not change"
    )
    with_answer = Manifest.model_validate({**fields, "control": answer.model_dump()})
    parsed = parse_manifest(with_answer.model_dump_json().encode())
    assert parsed is not None and parsed.control == answer


def test_only_the_operator_writes_the_control_topic_and_members_only_read_it() -> None:
    operator, members = CONTROL_TOPIC_ACLS
    assert set(operator.operations) == {"DESCRIBE", "WRITE"}
    assert "WRITE" not in members.operations and "READ" in members.operations
    assert "--operation Write" in operator.kafka_acls_command(CONTROL_TOPIC, "User:ops", "b:9092")


def test_the_control_topic_is_compacted_so_one_instruction_per_group_survives() -> None:
    assert CONTROL_TOPIC_CONFIG["cleanup.policy"] == "compact"
    assert CONTROL_TOPIC_PARTITIONS == 1
    assert record(group="orders").key == b"orders"


def test_the_kinds_are_the_three_the_runner_writes() -> None:
    assert set(get_args(ControlKind)) == {"reconfigure", "cutover-close", "cutover-rejoin"}


def verdict(
    rec: ControlRecord, *, answered: dict[str, int] | None = None, waiting: tuple[str, int] | None = None
) -> Judgement:
    return judge(
        rec, group="orders", instance_id="svc-0", client_id="c0", answered=answered or {}, waiting=waiting
    )


def test_a_new_step_of_a_plan_addressed_to_the_member_is_applied() -> None:
    assert verdict(record(step=3), answered={"p1": 2}).verdict == "apply"


def test_a_step_at_or_below_the_last_answered_is_stale() -> None:
    assert verdict(record(step=3), answered={"p1": 3}).verdict == "ignore"
    assert verdict(record(step=2), answered={"p1": 3}).verdict == "ignore"
    assert verdict(record(step=1), answered={"other-plan": 3}).verdict == "apply"


def test_another_groups_record_is_ignored() -> None:
    assert verdict(record(group="payments")).verdict == "ignore"


def test_while_closed_for_a_cutover_only_its_rejoin_of_the_next_step_counts() -> None:
    closed = ("p1", 3)
    assert verdict(record(step=4, kind="cutover-rejoin"), waiting=closed).verdict == "apply"
    assert verdict(record(step=5, kind="cutover-rejoin"), waiting=closed).verdict == "ignore"
    assert verdict(record(step=4, kind="reconfigure"), waiting=closed).verdict == "ignore"
    assert verdict(record(step=4, kind="cutover-rejoin", plan_id="p2"), waiting=closed).verdict == "ignore"


def test_a_rejoin_without_a_close_before_it_is_ignored() -> None:
    assert verdict(record(kind="cutover-rejoin")).verdict == "ignore"


def test_a_forbidden_key_is_refused_with_its_name() -> None:
    judged = verdict(record(settings={"group.id": "other"}))
    assert judged.verdict == "refuse" and judged.reason is not None and judged.reason.startswith("group.id")


def test_switching_to_the_consumer_protocol_drops_the_classic_keys_the_record_did_not_set() -> None:
    conf = {"group.id": "g", "partition.assignment.strategy": "range", "heartbeat.interval.ms": "3000"}
    assert member_conf(conf, {"group.protocol": "consumer"}) == {
        "group.id": "g",
        "group.protocol": "consumer",
    }


def test_switching_back_to_classic_drops_the_remote_assignor() -> None:
    conf = {"group.id": "g", "group.protocol": "consumer", "group.remote.assignor": "uniform"}
    updated = member_conf(
        conf, {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky"}
    )
    assert updated == {
        "group.id": "g",
        "group.protocol": "classic",
        "partition.assignment.strategy": "cooperative-sticky",
    }
