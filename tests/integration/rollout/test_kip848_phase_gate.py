"""verify-group between the gates of classic -> consumer on a real mixed group: the member types the
coordinator gives are held against the phase, and the reason says how far the rolling bounce got."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult
from tests.integration.members import wait_converted


def _member_type_check(run_cli: Callable[..., CliResult], bootstrap: str, group: str, phase: int) -> Any:
    result = run_cli(
        "verify-group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--migration",
        "classic-to-consumer",
        "--phase",
        str(phase),
        "-o",
        "json",
    )
    assert result.code == 1, result.stdout + result.stderr
    return next(c for c in result.json()["checks"] if c["name"] == "member-type")


def test_a_half_bounced_group_fails_both_phase_gates_naming_who_is_not_where_the_phase_wants(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    topic, group = topic_factory(4), unique("half-bounced")
    first = MemberSpec(name="rd-a", kind="python", group=group, topics=(topic,))
    processes.add(first)
    processes.wait_stable(group, members=1)
    processes.add(first.replace(name="rd-b", group_protocol="consumer"))  # the first member bounced
    wait_converted(bootstrap, group, members=2)  # the broker converted the group

    after = _member_type_check(run_cli, bootstrap, group, 1)
    assert after["status"] == "fail" and after["members"] == ["rd-a"]
    assert after["reason"].startswith("1 of 2 members is consumer; expected consumer; found rd-a=classic")
    before = _member_type_check(run_cli, bootstrap, group, 0)
    assert before["status"] == "fail" and before["members"] == ["rd-b"]
    assert before["reason"].startswith("1 of 2 members is classic"), before["reason"]
