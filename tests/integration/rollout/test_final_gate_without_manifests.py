"""The cutover's final gate on a live group whose members publish no manifest: the broker's own view
settles their assignor list (librdkafka members seen running cooperative list only cooperative-sticky),
so the gate passes without a manifest topic."""

from __future__ import annotations

from collections.abc import Callable

from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult


def test_the_cutovers_final_gate_passes_on_cooperative_librdkafka_members_without_manifests(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    group, topic = unique("no-manifest"), topic_factory(2)
    for n in range(2):
        processes.add(
            MemberSpec(
                name=f"m{n}",
                kind="python",
                group=group,
                topics=(topic,),
                assignors=("cooperative-sticky",),
                instance_id=f"{group}-{n}",
                manifests=False,
            )
        )
    processes.wait_stable(group, members=2, partitions=2)
    result = run_cli(
        "verify-group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--migration",
        "eager-to-cooperative-cutover",
        "--phase",
        "2",
        "--expect-members",
        "2",
        "--manifests-topic",
        "",
        "-o",
        "json",
    )
    checks = {c["name"]: c for c in result.json()["checks"]}
    assert checks["member-config"]["status"] == "pass", checks["member-config"]
    assert result.code == 0, result.stdout
