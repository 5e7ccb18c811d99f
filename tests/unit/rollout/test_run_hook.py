"""What `rollout run` hands a restart hook and a control record for one change (the shell's pure parts)."""

from __future__ import annotations

import json
import shlex

import pytest

from kafka_coop.control import REMOVE
from kafka_coop.errors import GateFailed
from kafka_coop.rollout import Step
from kafka_coop.rollout._spec import MemberConfig
from kafka_coop.rollout._walk import MemberChange, StepGate, Walk
from kafka_coop.rollout.live._run import RestartHook, control_step, hook_command, live_settings, settings_word


def _change(**kw: object) -> MemberChange:
    values: dict[str, object] = {
        "member": "svc-0; rm -rf /",
        "instance_id": None,
        "family": "librdkafka",
        "via": "hook",
        "settings": {"group.protocol": "consumer", "group.instance.id": "<unique>"},
        "remove": ("partition.assignment.strategy",),
        "config": MemberConfig(group_protocol="consumer"),
        **kw,
    }
    return MemberChange.model_validate(values)


def test_every_placeholder_is_filled_in_shell_quoted() -> None:
    command = hook_command("restart {member} {instance_id} {phase} {settings}", _change(), 2)
    words = shlex.split(command)
    assert words[:4] == ["restart", "svc-0; rm -rf /", "", "2"]
    assert json.loads(words[4])["group.protocol"] == "consumer"


def test_the_settings_word_is_one_json_object_with_removed_keys_null() -> None:
    assert json.loads(settings_word(_change())) == {
        "group.protocol": "consumer",
        "group.instance.id": "<unique>",
        "partition.assignment.strategy": None,
    }


def test_a_control_record_carries_only_reconfigurable_keys_and_removes_with_remove() -> None:
    assert live_settings(_change()) == {"group.protocol": "consumer", "partition.assignment.strategy": REMOVE}


def _walk(mode: str) -> tuple[Walk, Step]:
    step = Step(
        n=3, phase=1, phase_title="t", kind="member", changes=(_change(),), gate=StepGate(expect_members=1)
    )
    return Walk(plan_id="p", group="g", mode=mode, migration=None, steps=(step,)), step  # type: ignore[arg-type]


def test_control_steps_only_grow_over_a_plans_walks_forward_and_back() -> None:
    forward, step = _walk("forward")
    back, _ = _walk("rollback")
    assert control_step(forward, step, 0) < control_step(forward, step, 1) < control_step(back, step, 0)


def test_a_failing_hook_stops_the_step_naming_the_member_its_exit_code_and_its_output() -> None:
    _, step = _walk("forward")
    hook = RestartHook("echo no capacity for {member}; exit 7", timeout_s=10)
    with pytest.raises(GateFailed, match=r"failed for svc-0; rm -rf / \(exit 7\)") as failed:
        hook.apply(step, step.changes)
    assert "no capacity for svc-0; rm -rf /" in (failed.value.hint or "")


def test_a_hook_that_exits_0_applies_the_step() -> None:
    _, step = _walk("forward")
    RestartHook("test {phase} = 1", timeout_s=10).apply(step, step.changes)
