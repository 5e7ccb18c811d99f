"""verify-group names a library defect on a live group: a real kafka-python member (its default client
id tells its version) in a group short of the members it expects."""

from __future__ import annotations

from collections.abc import Callable

from kafka_coop.families import catalog
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult


def test_a_group_short_of_members_holding_an_affected_kafka_python_member_names_the_defect(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    (defect,) = catalog()["kafka-python"].known_defects
    assert defect.applies_to(catalog()["kafka-python"].tested_with), "the test-bed member has the defect"
    group = unique("defect-gate")
    member = processes.add(
        MemberSpec(
            name="kp-0",
            kind="kafka-python",
            group=group,
            topics=(topic_factory(2),),
            client_id="default",  # kafka-python's own, which carries its version
            manifests=False,
        )
    )
    processes.wait_stable(group, joined=[member])
    result = run_cli(
        "verify-group", group, "--bootstrap-server", bootstrap, "--expect-members", "2", "-o", "json"
    )
    assert result.code == 1, result.stderr
    (count,) = [c for c in result.json()["checks"] if c["name"] == "member-count"]
    assert count["hint"].startswith(f"kafka-python (versions {defect.versions}; here 1 member: ")
    assert defect.remedy in count["hint"]
