"""Shared fixtures: one real Kafka broker (the sandbox) per test session, fleets and topics per test.

There is no skip path: a missing Java, Maven or broker fails the run (docs/contributing.md, "Tests").
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from kafka_coop.admin import ClusterAdmin
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
from kafka_coop.sandbox import Sandbox, free_port
from kafka_coop.sandbox.testing import MemberProcesses
from testbed.faults import NetworkFaults, Toxiproxy
from testbed.interop import member_command

# Property tests judge what the code computes, not how fast a loaded two-core CI box runs it: Hypothesis'
# default 200 ms deadline per example failed a codec round trip while the suite ran on both cores.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

_counter = itertools.count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.fspath)
        if f"{os.sep}integration{os.sep}" in path:
            item.add_marker(pytest.mark.integration)
        elif f"{os.sep}e2e{os.sep}" in path:
            item.add_marker(pytest.mark.e2e)
        elif f"{os.sep}install{os.sep}" in path:
            item.add_marker(pytest.mark.install)
            # Under pytest-xdist (`make test` runs -n 3 --dist loadgroup) one worker builds the wheel and
            # its virtualenvs once; the min lane, a pytest run of its own, goes to a worker of its own.
            group = "min-lane" if item.fspath.basename == "test_min_versions.py" else "install"
            item.add_marker(pytest.mark.xdist_group(group))
        elif f"{os.sep}unit{os.sep}" in path:
            item.add_marker(pytest.mark.unit)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    # proxied: a PROXIED listener that toxiproxy can sit in front of (test_network_faults.py); costs
    # one more listener on the same broker, nothing else
    # group.consumer.min.session.timeout.ms lowered from 45 s: a KIP-848 test may give its own group a
    # 6 s session (group config consumer.session.timeout.ms); every other group keeps the 45 s default
    box = Sandbox(
        dir=tmp_path_factory.mktemp("kafka"),
        port=free_port(),
        proxied=True,
        config={"group.consumer.min.session.timeout.ms": "6000"},
    )
    box.start()
    try:
        yield box
    finally:
        box.stop()


# The SASL_SSL sandbox's passwords are canaries: no output, JSON, plan, event, manifest or log of any
# command may contain them (tests/integration/sandbox/test_security.py).
SECURE_CANARIES = {"admin": "CANARY-admin-5f1c9e7a", "app": "CANARY-app-0b7d3a62"}
SASL_GROUP = "sasl"  # the xdist group of every test on the SASL_SSL sandbox: one worker starts it


@pytest.fixture(scope="session")
def secure_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A SASL_SSL (SCRAM-SHA-512 over TLS) sandbox with ACLs: `admin` a super user, `app` restricted to
    `app*` topics and groups. Tests on it are in the xdist group SASL_GROUP."""
    box = Sandbox(
        dir=tmp_path_factory.mktemp("secure"),
        port=free_port(),
        security="sasl_ssl",
        passwords=SECURE_CANARIES,
    )
    box.start()
    try:
        yield box
    finally:
        box.stop()


@pytest.fixture(scope="session")
def bootstrap(sandbox: Sandbox) -> str:
    return sandbox.bootstrap


@pytest.fixture(scope="session")
def admin(bootstrap: str) -> ClusterAdmin:
    return ClusterAdmin(bootstrap)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Names unique across the session, so tests sharing one broker never see each other's groups."""
    run = uuid.uuid4().hex[:6]

    def make(prefix: str) -> str:
        return f"{prefix}-{run}-{next(_counter)}"

    return make


@pytest.fixture
def topic_factory(admin: ClusterAdmin, unique: Callable[[str], str]) -> Callable[[int], str]:
    def make(partitions: int) -> str:
        name = unique("topic")
        admin.ensure_topic(name, partitions)
        return name

    return make


@pytest.fixture
def processes(bootstrap: str, tmp_path: Path) -> Iterator[MemberProcesses]:
    with MemberProcesses(bootstrap, tmp_path / "fleet", families=member_command) as f:
        yield f


@pytest.fixture(scope="module")
def faults(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetworkFaults]:
    """A toxiproxy per test module in front of the sandbox broker, healed when the module ends, so a
    module's toxics never reach the next module's members."""
    with Toxiproxy(tmp_path_factory.mktemp("toxiproxy")) as proxy:
        net = NetworkFaults(sandbox, proxy)
        try:
            yield net
        finally:
            net.heal()


@pytest.fixture(scope="session")
def manifests_topic(admin: ClusterAdmin) -> str:
    """The compacted manifest topic, as an operator creates it once per cluster."""
    admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG)
    return DEFAULT_MANIFEST_TOPIC


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture(scope="session")
def run_cli() -> Callable[..., CliResult]:
    """The real `kafka-coop` in a subprocess: real exit codes, and any traceback shows up in stderr."""

    def run(*args: str, timeout: float = 180.0) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "kafka_coop.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
            check=False,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def invoke_cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """`kafka-coop` in this process through click.testing.CliRunner, for commands that need no broker.

    It goes through `main`, so errors become the same one sentence and exit code as the real command;
    only the interpreter exit is left out.
    """
    from click.testing import CliRunner

    from kafka_coop.cli import main as cli_main

    def exit_without_freeze(code: int, **_: object) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(cli_main, "_exit", exit_without_freeze)

    def run(*args: str) -> CliResult:
        runner = CliRunner()
        with runner.isolation(env={"COLUMNS": "200", "NO_COLOR": "1"}) as (out, err, _):
            try:
                cli_main.main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
        assert "Traceback" not in stderr, stderr
        return CliResult(code, stdout, stderr)

    return run
