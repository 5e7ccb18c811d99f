"""The one renderer of the commands a plan prints: every rendered spec parses back, through the real
click command, into the spec's own values, so the renderer and the CLI cannot drift apart."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click
import pytest

from kafka_coop.cli.plan import downgrade_plan, upgrade_plan
from kafka_coop.cli.remove_members import remove_members
from kafka_coop.cli.verify import verify_group
from kafka_coop.rollout import GateSpec, PlanSpec, RemoveStaticSpec, argv, render


def _parsed(command: click.Command, words: list[str]) -> dict[str, Any]:
    assert words[0] == "kafka-coop" and words[1] == command.name
    with command.make_context(command.name, words[2:]) as ctx:
        return dict(ctx.params)


@pytest.mark.parametrize(
    "spec",
    [
        GateSpec(group="orders", migration="eager-to-cooperative", phase=1, expect_members=3, timeout_s=120),
        GateSpec(group="my group", bootstrap="b:9092", command_config="/etc/c.properties", expect_members=2),
        GateSpec(group="g", migration="classic-to-consumer", phase=0),
    ],
)
def test_a_rendered_gate_is_the_verify_group_its_spec_says(
    spec: GateSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan made offline names no broker: the gate then reads KAFKA_BOOTSTRAP_SERVERS, as documented."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "env:9092")
    params = _parsed(verify_group, argv(spec))
    assert (params["group"], params["bootstrap"], params["migration"], params["phase"]) == (
        spec.group,
        spec.bootstrap or "env:9092",
        spec.migration,
        spec.phase,
    )
    assert params["command_config"] == (Path(spec.command_config) if spec.command_config else None)
    assert (params["expect_members"], params["wait"], params["timeout"]) == (
        spec.expect_members,
        True,
        spec.timeout_s,
    )


@pytest.mark.parametrize(
    "spec",
    [
        GateSpec(group="g", migration="classic-to-consumer", phase=1, events="kafka://ev", max_pause_ms=3000),
        GateSpec(group="g", migration="classic-to-consumer", phase=1, pipeline_out="/data/p", max_pause_ms=0),
        GateSpec(group="g", migration="classic-to-consumer", phase=0, events="kafka://ev"),
    ],
)
def test_a_rendered_pause_gate_is_the_verify_group_its_spec_says(
    spec: GateSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "env:9092")
    params = _parsed(verify_group, argv(spec))
    pipeline_out = Path(spec.pipeline_out) if spec.pipeline_out else None
    assert (params["events_source"], params["pipeline_out"], params["max_pause_ms"]) == (
        spec.events,
        pipeline_out,
        spec.max_pause_ms,
    )


@pytest.mark.parametrize("wait_stopped_s", [None, 60])
def test_a_rendered_removal_is_the_remove_members_its_spec_says(wait_stopped_s: int | None) -> None:
    spec = RemoveStaticSpec(group="orders", bootstrap="b:9092", wait_stopped_s=wait_stopped_s)
    params = _parsed(remove_members, argv(spec))
    assert (params["group"], params["bootstrap"], params["all_static"]) == ("orders", "b:9092", True)
    assert params["wait_stopped"] == (wait_stopped_s or 0)


@pytest.mark.parametrize(("command", "to"), [(upgrade_plan, "consumer"), (downgrade_plan, "eager")])
def test_a_rendered_alternative_is_the_plan_command_its_spec_says(command: click.Command, to: str) -> None:
    spec = PlanSpec(command=command.name, group="orders", to=to, migration="m", bootstrap="b:9092")  # type: ignore[arg-type]
    params = _parsed(command, argv(spec))
    assert (params["group"], params["to"], params["forced"], params["bootstrap"]) == (
        "orders",
        to,
        "m",
        "b:9092",
    )


def test_a_rendered_command_is_quoted_for_a_shell() -> None:
    assert (
        render(GateSpec(group="my group", timeout_s=5))
        == "kafka-coop verify-group 'my group' --wait --timeout 5"
    )


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"rebalance": "cooperative-sticky"}, {"rebalance": "cooperative-sticky"}),
        (
            {"rebalance": "consumer", "remote_assignor": "uniform", "instance_id": "svc-0"},
            {"rebalance": "consumer", "remote_assignor": "uniform", "instance_id": "svc-0"},
        ),
    ],
)
def test_the_kafka_coop_settings_are_the_consume_flags_a_user_types(
    settings: dict[str, str], expected: dict[str, str]
) -> None:
    from kafka_coop.cli.consume import consume
    from kafka_coop.rollout import consume_flags

    flags = consume_flags(settings)
    assert flags is not None
    words = ["kafka-coop", "consume", "g", "t", "--bootstrap-server", "b:9092", *shlex.split(flags)]
    params = _parsed(consume, words)
    assert {k: params[k] for k in expected} == expected


def test_an_assignor_list_has_no_consume_flag() -> None:
    from kafka_coop.rollout import consume_flags

    assert consume_flags({"assignors": "range,roundrobin"}) is None
