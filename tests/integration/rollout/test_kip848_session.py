"""KIP-848's session rule in a plan, on a real broker: the command the plan prints to raise the group's
session is run with Kafka's own tool, and the next plan reads the group's override back."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable

from kafka_coop.rollout import Plan
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION, resolve_kafka_jars
from kafka_coop.sandbox._jars import require_java
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec
from tests.conftest import CliResult


def _session_check(run_cli: Callable[..., CliResult], bootstrap: str, group: str) -> tuple[str, str, str]:
    result = run_cli(
        "upgrade-plan",
        group,
        "--to",
        "consumer",
        "--bootstrap-server",
        bootstrap,
        "--restart-time",
        "50",
        "-o",
        "json",
    )
    assert result.code == 0, result.stdout + result.stderr
    check = next(c for c in Plan.model_validate(result.json()).preconditions if c.name == "session-timeout")
    return check.status, check.reason, check.hint


def _as_kafka_runs_it(command: str, bootstrap: str) -> list[str]:
    """kafka-configs.sh is `kafka-run-class.sh org.apache.kafka.tools.ConfigCommand "$@"` (4.4; before,
    kafka.admin.ConfigCommand); the sandbox keeps Kafka's jars, not its scripts. BROKER is the plan's
    placeholder for the bootstrap server."""
    words = shlex.split(command.replace("BROKER", bootstrap))
    assert words[0] == "kafka-configs.sh", command
    lib = resolve_kafka_jars(DEFAULT_KAFKA_VERSION)
    return [require_java(), "-cp", f"{lib}/*", "org.apache.kafka.tools.ConfigCommand", *words[1:]]


def test_the_printed_session_override_is_set_by_kafkas_tool_and_the_next_plan_holds_restarts_to_it(
    processes: MemberProcesses,
    bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    run_cli: Callable[..., CliResult],
) -> None:
    """A static member whose restart takes 50 s outlives the broker's 45 s session: the plan warns and
    prints the group override (55 s: the restart and one heartbeat, within the 60 s maximum)."""
    topic, group = topic_factory(2), unique("session")
    processes.add(MemberSpec(name="s0", kind="python", group=group, topics=(topic,), instance_id="s0"))
    processes.wait_stable(group, members=1)

    status, reason, hint = _session_check(run_cli, bootstrap, group)
    assert status == "warn", reason
    assert "group.consumer.session.timeout.ms = 45 s" in reason
    command = hint[hint.index("kafka-configs.sh") :]
    assert command.endswith(f"--entity-name {group} --add-config consumer.session.timeout.ms=55000"), hint
    argv = _as_kafka_runs_it(command, bootstrap)
    tool = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120)
    assert tool.returncode == 0, tool.stdout + tool.stderr

    status, reason, _ = _session_check(run_cli, bootstrap, group)
    assert status == "pass", reason
    assert "the group's consumer.session.timeout.ms = 55 s" in reason and "within it" in reason
