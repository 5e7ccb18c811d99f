"""A local single-node Apache Kafka (KRaft) started from Maven Central jars.

The broker runs in its own session (it outlives the `kafka-coop sandbox start` process) and is tracked by
a state file in its directory; `stop` only ever signals the process recorded there, and only after
checking that process is the broker started from this directory.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel

from kafka_coop.errors import ClusterUnavailable, InvalidInput
from kafka_coop.sandbox._jars import require_java, resolve_kafka_jars
from kafka_coop.sandbox._paths import state_dir

DEFAULT_KAFKA_VERSION = "4.1.1"
DEFAULT_PORT = 9092
DEFAULT_START_TIMEOUT_S = 120.0
DEFAULT_STOP_TIMEOUT_S = 30.0
BROKER_HEAP = "-Xmx768m"
STATE_FILE = "sandbox.json"
LOG_FILE = "broker.log"

# Settings a single-node test cluster needs (docs/protocols.md "Test bed"); user overrides win.
_BASE_CONFIG: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.flush.interval.messages": "9223372036854775807",
}
# Keys the sandbox owns: overriding them would break the listener/quorum wiring.
_RESERVED = frozenset(
    {"listeners", "advertised.listeners", "controller.quorum.voters", "log.dirs", "node.id", "process.roles"}
)

Progress = Callable[[str], None]


WARM_ATTEMPT_S = 5.0


class SandboxState(BaseModel):
    """What `status` reports; persisted as sandbox.json next to the broker's data."""

    pid: int
    kafka_version: str
    bootstrap: str
    port: int
    controller_port: int
    cluster_id: str
    started_at: float
    dir: str
    log: str
    config: dict[str, str]

    @property
    def uptime_s(self) -> float:
        return max(0.0, time.time() - self.started_at)


def _no_progress(_: str) -> None:
    return None


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def random_cluster_id() -> str:
    """Kafka's Uuid text form: URL-safe base64 of 16 random bytes, unpadded, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def parse_overrides(pairs: Mapping[str, str] | list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """Accept {key: value} or ["key=value", ...]; reject keys the sandbox must own."""
    if pairs is None:
        return {}
    items: dict[str, str] = {}
    if isinstance(pairs, Mapping):
        items = {str(k): str(v) for k, v in pairs.items()}
    else:
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise InvalidInput(
                    f"Broker override {pair!r} is not of the form key=value.",
                    hint="Pass e.g. --config group.consumer.migration.policy=disabled.",
                )
            items[key.strip()] = value.strip()
    reserved = sorted(set(items) & _RESERVED)
    if reserved:
        raise InvalidInput(
            f"Broker setting {reserved[0]} is managed by the sandbox and cannot be overridden.",
            hint="Use --port to move the listener and --dir to move the data.",
        )
    return items


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
    return True


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _broker_answers(bootstrap: str, timeout_s: float) -> bool:
    """True once the broker returns metadata naming at least one broker."""
    from confluent_kafka.admin import AdminClient  # the shell talks to Kafka; imported lazily

    quiet = logging.getLogger("kafka_coop.sandbox.probe")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": quiet, "log_level": 0}
    admin = AdminClient(settings)
    try:
        md = admin.list_topics(timeout=timeout_s)
    except Exception:
        return False
    return bool(md.brokers)


class Sandbox:
    """A local Kafka broker: `with Sandbox(port=...) as sb: sb.bootstrap`.

    `start()` is idempotent for the broker of this directory; `restart()` keeps the data (topics,
    committed offsets, groups survive), which is what fault tests need.
    """

    def __init__(
        self,
        *,
        dir: Path | str | None = None,
        port: int = DEFAULT_PORT,
        kafka_version: str = DEFAULT_KAFKA_VERSION,
        config: Mapping[str, str] | list[str] | None = None,
        cache: Path | None = None,
        progress: Progress | None = None,
    ) -> None:
        if not 1 <= port <= 65535:
            raise InvalidInput(f"Port {port} is outside 1-65535.", hint="Pass a free TCP port to --port.")
        self.dir = Path(dir).expanduser() if dir is not None else state_dir()
        self.port = port
        self.kafka_version = kafka_version
        self.overrides = parse_overrides(config)
        self.cache = cache
        self.progress: Progress = progress or _no_progress
        self._started_here = False

    # --- paths -------------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_FILE

    @property
    def _state_path(self) -> Path:
        return self.dir / STATE_FILE

    @property
    def _props_path(self) -> Path:
        return self.dir / "server.properties"

    # --- state -------------------------------------------------------------------------------------
    def status(self) -> SandboxState | None:
        """The running broker of this directory, or None (a stale state file is ignored)."""
        try:
            state = SandboxState.model_validate_json(self._state_path.read_text())
        except (OSError, ValueError):
            return None
        if not self._is_our_broker(state.pid):
            return None
        return state

    def _is_our_broker(self, pid: int) -> bool:
        if not _pid_alive(pid):
            return False
        cmd = _cmdline(pid)
        return "kafka.Kafka" in cmd and str(self._props_path) in cmd

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> SandboxState:
        running = self.status()
        if running is not None:
            if running.port != self.port:
                raise InvalidInput(
                    f"The sandbox in {self.dir} already runs on port {running.port}, not {self.port}.",
                    hint="Stop it first (`kafka-coop sandbox stop`) or use another --dir.",
                )
            return running
        java = require_java()
        if not port_is_free(self.port):
            raise InvalidInput(
                f"Port {self.port} on 127.0.0.1 is already in use, "
                "so the sandbox broker cannot listen there.",
                hint="Stop whatever holds it or pass another --port.",
            )
        self.progress(f"Resolving Apache Kafka {self.kafka_version} jars (cached after the first time)")
        lib = resolve_kafka_jars(self.kafka_version, cache=self.cache)
        self.dir.mkdir(parents=True, exist_ok=True)
        controller_port = self._controller_port()
        config = self._write_properties(controller_port)
        cluster_id = self._format_storage(java, lib)
        self.progress(f"Starting Kafka {self.kafka_version} (KRaft) on {self.bootstrap}")
        proc = self._launch(java, lib)
        state = SandboxState(
            pid=proc.pid,
            kafka_version=self.kafka_version,
            bootstrap=self.bootstrap,
            port=self.port,
            controller_port=controller_port,
            cluster_id=cluster_id,
            started_at=time.time(),
            dir=str(self.dir),
            log=str(self.log_path),
            config=config,
        )
        self._state_path.write_text(state.model_dump_json(indent=2))
        self._wait_ready(proc, timeout_s)
        self._started_here = True
        return state

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> bool:
        """End this directory's broker: SIGTERM, then SIGKILL after `timeout_s`. False if none ran."""
        state = self.status()
        if state is None:
            return False
        self.progress(f"Stopping Kafka broker (pid {state.pid})")
        with contextlib.suppress(ProcessLookupError):
            os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and _pid_alive(state.pid):
            _reap(state.pid)
            time.sleep(0.1)
        if _pid_alive(state.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.pid, signal.SIGKILL)
            while _pid_alive(state.pid):
                _reap(state.pid)
                time.sleep(0.05)
        _reap(state.pid)
        with contextlib.suppress(OSError):
            self._state_path.unlink()
        return True

    def restart(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> SandboxState:
        self.stop()
        return self.start(timeout_s)

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- steps ----------------------------------------------------------------------------------
    def _controller_port(self) -> int:
        with contextlib.suppress(OSError, ValueError):
            previous = SandboxState.model_validate_json(self._state_path.read_text()).controller_port
            if port_is_free(previous):
                return previous
        return free_port()

    def _write_properties(self, controller_port: int) -> dict[str, str]:
        config = dict(_BASE_CONFIG)
        config.update(
            {
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
                "log.dirs": str(self.dir / "data"),
            }
        )
        config.update(self.overrides)
        body = "".join(f"{key}={value}\n" for key, value in config.items())
        tmp = self._props_path.with_suffix(".tmp")
        tmp.write_text(body)
        tmp.replace(self._props_path)
        return config

    def _format_storage(self, java: str, lib: Path) -> str:
        meta = self.dir / "data" / "meta.properties"
        if meta.exists():
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    return line.split("=", 1)[1].strip()
        cluster_id = random_cluster_id()
        self.progress("Formatting KRaft storage")
        with self.log_path.open("a") as log:
            proc = subprocess.run(
                [
                    java,
                    "-Xmx256m",
                    "-cp",
                    f"{lib}/*",
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(self._props_path),
                    "--ignore-formatted",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if proc.returncode != 0:
            raise ClusterUnavailable(
                "Formatting the sandbox's KRaft storage failed.",
                hint="Check the broker overrides passed with --config.",
                log_path=self.log_path,
            )
        return cluster_id

    def _launch(self, java: str, lib: Path) -> subprocess.Popen[bytes]:
        log = self.log_path.open("ab")
        try:
            return subprocess.Popen(
                [
                    java,
                    BROKER_HEAP,
                    "-Xms256m",
                    "-XX:+UseG1GC",
                    "-Djava.awt.headless=true",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true",
                    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                    "-cp",
                    f"{lib}/*",
                    "kafka.Kafka",
                    str(self._props_path),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.dir,
            )
        finally:
            log.close()

    def _warm_group_coordinator(self, deadline: float) -> None:
        """Describe a probe group once so __consumer_offsets exists and its coordinator is loaded.

        Without this the first group of every test races the offsets topic creation and sees
        COORDINATOR_LOAD_IN_PROGRESS; "ready" should mean ready for consumer groups.
        """
        from kafka_coop.admin import ClusterAdmin

        # Short attempts, retried: one long request can hang on a coordinator lookup that failed while
        # __consumer_offsets was still being created (seen on a loaded machine: one request, no retry,
        # timed out after minutes although the coordinator had loaded in milliseconds).
        admin = ClusterAdmin(self.bootstrap)
        while True:
            try:
                admin.describe_group("_kafka_coop_sandbox_probe", timeout_s=WARM_ATTEMPT_S)
                return
            except ClusterUnavailable:
                if time.monotonic() + WARM_ATTEMPT_S > deadline:
                    raise
                admin = ClusterAdmin(self.bootstrap)  # a fresh client: no cached coordinator state

    def _wait_ready(self, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = proc.poll()
            if code is not None:
                with contextlib.suppress(OSError):
                    self._state_path.unlink()
                raise ClusterUnavailable(
                    f"The Kafka broker exited during start-up with code {code}.",
                    hint=_last_error(self.log_path),
                    log_path=self.log_path,
                )
            if not port_is_free(self.port) and _broker_answers(self.bootstrap, 2.0):
                self._warm_group_coordinator(deadline)
                self.progress(f"Kafka is up on {self.bootstrap}")
                return
            time.sleep(0.25)
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(OSError):
            self._state_path.unlink()
        raise ClusterUnavailable(
            f"The Kafka broker did not answer metadata requests within {timeout_s:.0f}s.",
            hint="Raise --timeout on a slow machine.",
            log_path=self.log_path,
        )


def _reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _last_error(log: Path) -> str | None:
    with contextlib.suppress(OSError):
        lines = log.read_text(errors="replace").splitlines()
        for line in reversed(lines[-400:]):
            if "ERROR" in line or "Exception" in line:
                return line.strip()[:300]
    return None
