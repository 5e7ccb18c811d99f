"""docs/deploy.md, run: every kafka-coop command of the page, in its order, against a real broker.

The pods of examples/k8s/statefulset.yaml are its container command run as local processes with the
env the manifest gives them (POD_NAME); `kubectl scale` is played by stopping the last pod. Two things
are changed to run on one machine: the group/topic name `orders` (unique per test run) and the metrics
port (each pod gets a free one instead of 9464).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from kafka_coop.admin import ClusterAdmin
from tests.conftest import CliResult

ROOT = Path(__file__).parents[3]
DOC = ROOT / "docs" / "deploy.md"
FENCE = re.compile(r"^\s*```(\w*)\n(.*?)^\s*```", re.S | re.M)

DOCUMENTED = [
    "kafka-coop manifest-topic",
    "kafka-coop consume orders orders --instance-id '{pod}' --rebalance cooperative-sticky "
    "--conf session.timeout.ms=60000 --metrics-port 9464 --quiet",
    "kafka-coop verify-group orders --expect-members 3 --wait --timeout 300",
    "kafka-coop verify-group orders --expect-members 3 --wait --timeout 300",
    "kafka-coop verify-group orders --expect-members 3 --wait --timeout 300",
    "kafka-coop describe orders",
    "kafka-coop remove-members orders --instance-id orders-2",
    "kafka-coop verify-group orders --expect-members 2 --wait --timeout 120",
]


def doc_commands(text: str) -> tuple[list[str], list[str]]:
    """(kafka-coop commands, kubectl commands) of the page's sh and yaml blocks, in order."""
    lines: list[str] = []
    for lang, body in FENCE.findall(text):
        if lang == "sh":
            lines += [line.strip() for line in body.splitlines()]
        elif lang == "yaml":
            for step in yaml.safe_load(body) or []:
                lines += [line.strip() for line in str(step.get("run", "")).splitlines()]
    kafka_coop = [line for line in lines if line.startswith("kafka-coop ")]
    kubectl = [line for line in lines if line.startswith("kubectl ")]
    return kafka_coop, kubectl


def _manifest_command(name: str) -> str:
    spec = yaml.safe_load((ROOT / "examples" / "k8s" / name).read_text())["spec"]["template"]["spec"]
    return shlex.join(spec["containers"][0]["command"])


def test_the_page_lists_these_commands_and_the_manifests_run_the_same_ones() -> None:
    commands, kubectl = doc_commands(DOC.read_text())
    assert commands == DOCUMENTED
    assert shlex.split(_manifest_command("statefulset.yaml")) == shlex.split(DOCUMENTED[1])
    assert shlex.split(_manifest_command("helm-pre-upgrade-gate.yaml")) == shlex.split(DOCUMENTED[4])
    for line in kubectl:  # not run (no cluster); what they apply is validated in tests/unit
        for path in re.findall(r"-f (\S+)", line):
            assert (ROOT / path).is_file(), line


@pytest.fixture
def pods(
    bootstrap: str, unique: Callable[[str], str], admin: ClusterAdmin
) -> Iterator[tuple[str, dict[int, subprocess.Popen[bytes]]]]:
    name = unique("orders")
    admin.ensure_topic(name, 6)
    running: dict[int, subprocess.Popen[bytes]] = {}
    yield name, running
    for proc in running.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in running.values():
        proc.wait(60)


def _local(command: str, name: str) -> list[str]:
    argv = shlex.split(command.replace("orders", name))
    assert argv[0] == "kafka-coop"
    if "--metrics-port" in argv:
        argv[argv.index("--metrics-port") + 1] = "0"
    return argv[1:]


def test_every_command_of_the_page_runs_as_documented(
    bootstrap: str,
    manifests_topic: str,
    run_cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    pods: tuple[str, dict[int, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    name, running = pods
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", bootstrap)
    manifest_topic, consume, gate_before, gate_after_restart, helm_gate, describe, remove, gate_smaller = (
        DOCUMENTED
    )

    assert run_cli(*_local(manifest_topic, name)).code == 0

    for ordinal in range(3):  # the StatefulSet's pods: the container command, POD_NAME from the downward API
        env = {**os.environ, "POD_NAME": f"{name}-{ordinal}", "KAFKA_BOOTSTRAP_SERVERS": bootstrap}
        log = (tmp_path / f"pod-{ordinal}.log").open("wb")
        running[ordinal] = subprocess.Popen(
            [sys.executable, "-m", "kafka_coop.cli", *_local(consume, name)], env=env, stdout=log, stderr=log
        )

    for gate in (gate_before, gate_after_restart, helm_gate):
        result = run_cli(*_local(gate, name))
        assert result.code == 0, result.stdout + result.stderr
        assert "gate PASS" in result.stdout

    running[2].send_signal(signal.SIGTERM)  # kubectl scale statefulset orders --replicas=2
    assert running[2].wait(60) == 0

    listed = run_cli(*_local(describe, name))
    assert listed.code == 0
    assert f"{name}-2" in listed.stdout, "a stopped static member stays in the group"

    removed = run_cli(*_local(remove, name), "-o", "json")
    assert removed.code == 0, removed.stderr
    assert removed.json()["removed"] == [f"{name}-2"]

    result = run_cli(*_local(gate_smaller, name))
    assert result.code == 0, result.stdout + result.stderr


def test_a_gate_that_keeps_failing_exits_1_as_the_pipeline_table_says(
    bootstrap: str, run_cli: Callable[..., CliResult], unique: Callable[[str], str]
) -> None:
    result = run_cli(
        "verify-group",
        unique("nobody"),
        "--bootstrap-server",
        bootstrap,
        "--expect-members",
        "3",
        "--wait",
        "--timeout",
        "1",
        "--interval",
        "0.5",
    )
    assert result.code == 1
