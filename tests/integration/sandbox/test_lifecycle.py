"""`kafka-coop sandbox` as a user drives it: start, status, restart, stop, start again offline."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_coop.sandbox import Sandbox, free_port
from tests.integration.members import wait_for
from tests.integration.sandbox.cli import sandbox_cli


@pytest.fixture
def box_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "box"
    yield directory
    Sandbox(dir=directory).stop()


def _java_only_path(tmp_path: Path) -> dict[str, str]:
    """A PATH with java but no Maven: a start that still works proves the jar cache was used."""
    bindir = tmp_path / "bin-no-maven"
    bindir.mkdir()
    java = shutil.which("java")
    assert java is not None
    (bindir / "java").symlink_to(os.path.realpath(java))
    return {**os.environ, "PATH": str(bindir)}


def test_start_status_restart_stop_and_start_again_offline(box_dir: Path, tmp_path: Path) -> None:
    port = str(free_port())
    started = sandbox_cli("start", "--dir", str(box_dir), "--port", port, "--output", "json")
    assert started.returncode == 0, started.stderr
    first = json.loads(started.stdout)
    assert first["bootstrap"] == f"127.0.0.1:{port}"

    status = sandbox_cli("status", "--dir", str(box_dir), "--output", "json")
    assert status.returncode == 0
    assert json.loads(status.stdout)["pid"] == first["pid"]

    restarted = Sandbox(dir=box_dir, port=int(port)).restart()
    assert restarted.pid != first["pid"]
    assert restarted.cluster_id == first["cluster_id"], "restart keeps the formatted storage"

    stopped = sandbox_cli("stop", "--dir", str(box_dir))
    assert stopped.returncode == 0
    assert sandbox_cli("status", "--dir", str(box_dir)).returncode == 1

    offline = sandbox_cli(
        "start", "--dir", str(box_dir), "--port", port, "--output", "json", env=_java_only_path(tmp_path)
    )
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["cluster_id"] == first["cluster_id"]


def test_start_on_a_busy_port_fails_with_one_clear_sentence_and_exit_2(box_dir: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = sandbox_cli("start", "--dir", str(box_dir), "--port", str(port))
    assert result.returncode == 2
    assert f"Port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (box_dir / "sandbox.json").exists()


def test_stop_never_signals_a_process_it_did_not_start(box_dir: Path) -> None:
    box_dir.mkdir(parents=True)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (box_dir / "sandbox.json").write_text(
            json.dumps(
                {
                    "pid": bystander.pid,
                    "kafka_version": "4.1.1",
                    "bootstrap": "127.0.0.1:1",
                    "port": 1,
                    "controller_port": 2,
                    "cluster_id": "x",
                    "started_at": 0,
                    "dir": str(box_dir),
                    "log": "broker.log",
                    "config": {},
                }
            )
        )
        result = sandbox_cli("stop", "--dir", str(box_dir))
        assert result.returncode == 0
        assert "No sandbox broker was running" in result.stderr
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_reserved_broker_setting_is_refused_as_bad_input(box_dir: Path) -> None:
    result = sandbox_cli(
        "start", "--dir", str(box_dir), "--port", str(free_port()), "--config", "log.dirs=/tmp/x"
    )
    assert result.returncode == 2
    assert "log.dirs is managed by the sandbox" in result.stderr


def _java_processes_of(directory: Path) -> list[int]:
    """Every process whose command line names this sandbox's directory (its broker's properties)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(directory) in cmdline and int(proc.name) != os.getpid():
                pids.append(int(proc.name))
    return pids


def test_a_start_whose_topic_the_broker_refuses_leaves_nothing_running(box_dir: Path) -> None:
    """Two legal names Kafka refuses together (`my.orders` and `my_orders` collide in metric names):
    the broker is up when the second is refused, so the start stops it again; bad input, exit 2."""
    result = sandbox_cli(
        "start",
        "--dir",
        str(box_dir),
        "--port",
        str(free_port()),
        "--topic",
        "my.orders",
        "--topic",
        "my_orders",
    )
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "my_orders" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert Sandbox(dir=box_dir).status() is None
    assert _java_processes_of(box_dir) == []


def test_the_demo_on_a_busy_port_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafka_coop.cli",
                "demo",
                "--port",
                str(port),
                "--dir",
                str(tmp_path / "d"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == [
        f"Error: Port {port} on 127.0.0.1 is already in use, so the sandbox broker cannot listen there."
    ]
    assert "Traceback" not in result.stderr


class _Stop(Exception):
    """Raised from the demo's first step: its topics are made, nothing else has run."""


def test_the_demo_removes_the_manifest_topic_it_created(box_dir: Path, tmp_path: Path) -> None:
    """On a cluster without `_kafka_coop_manifests` the demo makes one for its members; however it ends,
    it removes that topic with its own, so it leaves nothing on the cluster (a cluster's own is kept)."""
    from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
    from kafka_coop.sandbox import DemoHooks, run_demo

    box = Sandbox(dir=box_dir, port=free_port())
    bootstrap = box.start().bootstrap
    made: list[str] = []

    def first_step(_name: str, _text: str) -> None:
        made.extend(box.admin().client.list_topics(timeout=10).topics)
        raise _Stop

    with pytest.raises(_Stop):
        run_demo(bootstrap, tmp_path / "demo", hooks=DemoHooks(on_step=first_step))
    assert DEFAULT_MANIFEST_TOPIC in made, "the demo made the manifest topic for its members"

    def ours_left() -> set[str]:
        return {t for t in box.admin().client.list_topics(timeout=10).topics if not t.startswith("__")}

    # A deletion the controller accepted reaches the broker's metadata a moment later (seconds, on a
    # loaded CI machine): the demo's promise is that its topics are deleted, not that the metadata
    # says so at the instant it returns.
    wait_for(lambda: not ours_left(), timeout_s=15, what=f"the demo's topics to go ({ours_left()})")
