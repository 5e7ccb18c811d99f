"""A local Apache Kafka (KRaft) started from Maven Central jars: one node, or a cluster of three.

Nodes outlive the command that started them and are tracked by a state file; stop, kill and freeze
only ever signal a process recorded there and checked to be this directory's node. A cluster is three
combined broker+controller nodes (docs/design/test-bed.md says why that keeps the faults real).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel

import kafka_coop.sandbox._security as sec
from kafka_coop.errors import ClusterUnavailable, InvalidInput
from kafka_coop.sandbox._jars import check_kafka_version, require_java, resolve_kafka_jars
from kafka_coop.sandbox._node_config import (
    PROXIED_LISTENER,
    SECURITY_CHOICES,
    Security,
    node_config,
    parse_overrides,
    random_cluster_id,
)
from kafka_coop.sandbox._paths import state_dir
from kafka_coop.sandbox._ports import free_ports, port_is_free

DEFAULT_KAFKA_VERSION = "4.4.0"
DEFAULT_PORT = 9092
DEFAULT_START_TIMEOUT_S = 120.0
DEFAULT_STOP_TIMEOUT_S = 30.0
MAX_BROKERS = 5
BROKER_HEAP = "-Xmx768m"
# A sandbox broker serves a laptop's or a test's load, never a benchmark of Kafka itself: C1 alone
# compiles its code (no C2), which measured here a third less CPU to start (6.3 -> 4.1 s) and to idle.
SANDBOX_JIT = "-XX:TieredStopAtLevel=1"
BROKER_JVM = (BROKER_HEAP, "-Xms256m", "-XX:+UseG1GC", SANDBOX_JIT)
# Per node of a cluster: small heaps and few JVM threads, so three nodes fit next to the member processes.
CLUSTER_JVM = ("-Xmx384m", "-Xms128m", "-XX:+UseSerialGC", "-XX:CICompilerCount=2", SANDBOX_JIT)
STATE_FILE = "sandbox.json"
LOG_FILE = "broker.log"

Progress = Callable[[str], None]


WARM_ATTEMPT_S = 5.0

NodeStatus = Literal["running", "frozen", "stopped"]


class NodeState(BaseModel):
    """One KRaft node (broker and controller) of the sandbox."""

    node_id: int
    pid: int
    port: int
    controller_port: int
    proxied_port: int | None = None  # where the PROXIED listener really listens (toxiproxy's upstream)
    proxy_port: int | None = None  # what the PROXIED listener advertises (toxiproxy listens there)
    dir: str
    log: str
    started_at: float
    status: NodeStatus = "running"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


class SandboxState(BaseModel):
    """What `status` reports; persisted as sandbox.json next to the brokers' data (secrets redacted)."""

    pid: int  # node 1's (the single node's) process
    kafka_version: str
    bootstrap: str
    port: int
    controller_port: int
    cluster_id: str
    started_at: float
    dir: str
    log: str
    config: dict[str, str]
    brokers: int = 1
    security: Security = "plaintext"
    nodes: list[NodeState] = []
    client_properties: dict[str, str] = {}  # user -> properties file for --command-config
    proxied_bootstrap: str | None = None

    @property
    def uptime_s(self) -> float:
        return max(0.0, time.time() - self.started_at)


def _no_progress(_: str) -> None:
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    return _proc_state(pid) != "Z"


def _proc_state(pid: int) -> str | None:
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[-1].split()[0]
    return None


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _quiet_logger() -> logging.Logger:
    quiet = logging.getLogger("kafka_coop.sandbox.probe")
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return quiet


def _brokers_answering(bootstrap: str, conf: Mapping[str, str], timeout_s: float) -> set[int]:
    """The broker ids the metadata from `bootstrap` names (empty if it does not answer)."""
    from confluent_kafka.admin import AdminClient  # the shell talks to Kafka; imported lazily

    settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _quiet_logger(), "log_level": 0}
    settings.update(conf)
    admin = AdminClient(settings)
    try:
        md = admin.list_topics(timeout=timeout_s)
    except Exception:
        return set()
    return {int(b) for b in md.brokers}


def _broker_answers(bootstrap: str, timeout_s: float) -> bool:
    """True once the broker returns metadata naming at least one broker."""
    return bool(_brokers_answering(bootstrap, {}, timeout_s))


class Sandbox:
    """A local Kafka: `with Sandbox(port=...) as sb: sb.bootstrap`; `Sandbox(brokers=3)` for a cluster.

    `start()` is idempotent for the sandbox of this directory; `restart()` keeps the data (topics,
    committed offsets, groups survive), which is what fault tests need. Per node: `stop(node)`,
    `kill(node)` (SIGKILL), `freeze(node)` (SIGSTOP: alive but silent, like a long GC pause or a stuck
    VM), `thaw(node)`, `restart(node)`; `coordinator_of(group)` says which node a group's coordinator is.
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
        brokers: int = 1,
        security: Security = "plaintext",
        proxied: bool = False,
        passwords: Mapping[str, str] | None = None,
        controller_port: int | None = None,
    ) -> None:
        if not 1 <= port <= 65535 - (brokers - 1):
            raise InvalidInput(f"Port {port} is outside 1-65535.", hint="Pass a free TCP port to --port.")
        if not 1 <= brokers <= MAX_BROKERS:
            raise InvalidInput(
                f"A sandbox runs 1 to {MAX_BROKERS} brokers, not {brokers}.", hint="Pass --brokers 1 or 3."
            )
        if security not in SECURITY_CHOICES:
            raise InvalidInput(
                f"Unknown sandbox security {security!r}.", hint="Pass --security plaintext or sasl_ssl."
            )
        self.dir = Path(dir).expanduser() if dir is not None else state_dir()
        if controller_port is not None and not 1 <= controller_port <= 65535 - (brokers - 1):
            raise InvalidInput(
                f"Controller port {controller_port} is outside 1-65535.",
                hint="Pass a free TCP port to --controller-port, or leave it out for a free one.",
            )
        self.port = port
        self.controller_port = controller_port
        self.kafka_version = check_kafka_version(kafka_version)
        self.overrides = parse_overrides(config)
        self.cache = cache
        self.progress: Progress = progress or _no_progress
        self.brokers = brokers
        self.security: Security = security
        self.proxied = proxied
        self._passwords = dict(passwords or {})
        self._started_here = False
        self._secrets: sec.Secrets | None = None

    @classmethod
    def attach(cls, dir: Path | str, *, progress: Progress | None = None) -> Sandbox:
        """The sandbox already started in `dir`, with the shape it was started with."""
        state = SandboxState.model_validate_json((Path(dir).expanduser() / STATE_FILE).read_text())
        return cls(
            dir=dir,
            port=state.port,
            kafka_version=state.kafka_version,
            brokers=state.brokers,
            security=state.security,
            proxied=state.proxied_bootstrap is not None,
            progress=progress,
        )

    # --- paths -------------------------------------------------------------------------------------
    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def node_port(self, node: int) -> int:
        return self.port + node - 1

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.node_port(n)}" for n in self.node_ids)

    def node_dir(self, node: int) -> Path:
        """A single node keeps the flat layout; cluster nodes get node-<id>/ each."""
        return self.dir if self.brokers == 1 else self.dir / f"node-{node}"

    @property
    def log_path(self) -> Path:
        return self.node_dir(1) / LOG_FILE

    def _node_log(self, node: int) -> Path:
        return self.node_dir(node) / LOG_FILE

    @property
    def _state_path(self) -> Path:
        return self.dir / STATE_FILE

    def _props(self, node: int) -> Path:
        return self.node_dir(node) / "server.properties"

    @property
    def _props_path(self) -> Path:
        return self._props(1)

    # --- clients -----------------------------------------------------------------------------------
    def client_conf(self, user: str = sec.SUPER_USER) -> dict[str, str]:
        """librdkafka settings a client of this sandbox needs besides bootstrap.servers (security)."""
        if self.security == "plaintext":
            return {}
        return sec.client_conf(self._load_secrets(), sec.tls_files(self.dir), user)

    def properties_path(self, user: str = sec.SUPER_USER) -> Path | None:
        """The `--command-config` file of `user` (None for a plaintext sandbox)."""
        if self.security == "plaintext":
            return None
        return self.dir / f"{user}.properties"

    def admin(self, user: str = sec.SUPER_USER) -> Any:
        from kafka_coop.admin import ClusterAdmin

        return ClusterAdmin(self.bootstrap, self.client_conf(user), wait_for_brokers=True)

    def _load_secrets(self) -> sec.Secrets:
        if self._secrets is None:
            self._secrets = sec.load_or_make_secrets(self.dir, self._passwords)
        return self._secrets

    # --- state -------------------------------------------------------------------------------------
    def status(self) -> SandboxState | None:
        """The sandbox of this directory with each node's status, or None if no node of it runs."""
        state = self._read_state()
        if state is None:
            return None
        nodes = [n.model_copy(update={"status": self._node_status(n)}) for n in _nodes_of(state)]
        if all(n.status == "stopped" for n in nodes):
            return None
        return state.model_copy(update={"nodes": nodes})

    def _read_state(self) -> SandboxState | None:
        try:
            return SandboxState.model_validate_json(self._state_path.read_text())
        except (OSError, ValueError):
            return None

    def _node_status(self, node: NodeState) -> NodeStatus:
        if not self._is_our_node(node.pid, Path(node.dir) / "server.properties"):
            return "stopped"
        return "frozen" if _proc_state(node.pid) == "T" else "running"

    def _is_our_node(self, pid: int, props: Path) -> bool:
        if not _pid_alive(pid):
            return False
        cmd = _cmdline(pid)
        return "kafka.Kafka" in cmd and str(props) in cmd

    def _node(self, node: int) -> NodeState:
        state = self.status()
        if state is None:
            raise InvalidInput(
                f"No sandbox runs in {self.dir}.", hint="Start it first with `kafka-coop sandbox start`."
            )
        for n in state.nodes:
            if n.node_id == node:
                return n
        raise InvalidInput(
            f"The sandbox in {self.dir} has no node {node}.",
            hint=f"Its nodes are {', '.join(str(n.node_id) for n in state.nodes)}.",
        )

    def _save_node(self, updated: NodeState) -> None:
        state = self._read_state()
        if state is None:
            return
        nodes = [updated if n.node_id == updated.node_id else n for n in _nodes_of(state)]
        pid = next(n.pid for n in nodes if n.node_id == 1)
        self._write_state(state.model_copy(update={"nodes": nodes, "pid": pid}))

    def _write_state(self, state: SandboxState) -> None:
        tmp = self._state_path.with_suffix(".tmp")
        tmp.write_text(state.model_dump_json(indent=2))
        tmp.replace(self._state_path)

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> SandboxState:
        running = self.status()
        if running is not None:
            if running.port != self.port or running.brokers != self.brokers:
                raise InvalidInput(
                    f"The sandbox in {self.dir} already runs {running.brokers} broker(s) on port "
                    f"{running.port}, not {self.brokers} on {self.port}.",
                    hint="Stop it first (`kafka-coop sandbox stop`) or use another --dir.",
                )
            return running
        java = require_java()
        for node in self.node_ids:
            if not port_is_free(self.node_port(node)):
                raise InvalidInput(
                    f"Port {self.node_port(node)} on 127.0.0.1 is already in use, "
                    "so the sandbox broker cannot listen there.",
                    hint="Stop whatever holds it or pass another --port"
                    + (
                        f" (a cluster uses {self.brokers} ports from --port on)." if self.brokers > 1 else "."
                    ),
                )
        self.progress(f"Resolving Apache Kafka {self.kafka_version} jars (cached after the first time)")
        lib = resolve_kafka_jars(self.kafka_version, cache=self.cache)
        self.dir.mkdir(parents=True, exist_ok=True)
        controller_ports = self._controller_ports()
        proxied = self._proxied_ports(set(controller_ports.values()))
        config: dict[str, str] = {}
        for node in self.node_ids:
            self.node_dir(node).mkdir(parents=True, exist_ok=True)
            node_conf = self._write_properties(node, controller_ports, proxied.get(node))
            config = config or node_conf
        cluster_id = self._cluster_id()
        for node in self.node_ids:
            self._format_storage(java, lib, node, cluster_id)
        what = f"{self.brokers} nodes" if self.brokers > 1 else "KRaft"
        self.progress(f"Starting Kafka {self.kafka_version} ({what}, {self.security}) on {self.bootstrap}")
        now = time.time()
        procs: dict[int, subprocess.Popen[bytes]] = {}
        try:
            state = self._launch_all(java, lib, procs, controller_ports, proxied, config, cluster_id, now)
            self._wait_ready(procs, timeout_s)
            if self.security == "sasl_ssl":
                self._grant_restricted_acls(timeout_s)
        except BaseException:
            # Ctrl-C (or any error) while starting: the nodes run in sessions of their own and would
            # outlive this process, so the start ends every node it launched and forgets the state.
            self._abandon(procs)
            raise
        self._started_here = True
        return state

    def _launch_all(
        self,
        java: str,
        lib: Path,
        procs: dict[int, subprocess.Popen[bytes]],
        controller_ports: Mapping[int, int],
        proxied: Mapping[int, tuple[int, int]],
        config: dict[str, str],
        cluster_id: str,
        now: float,
    ) -> SandboxState:
        """Launch every node (recorded in `procs` as it starts) and write the state file."""
        nodes: list[NodeState] = []
        for node in self.node_ids:
            procs[node] = self._launch(java, lib, node)
            nodes.append(
                NodeState(
                    node_id=node,
                    pid=procs[node].pid,
                    port=self.node_port(node),
                    controller_port=controller_ports[node],
                    proxied_port=proxied[node][0] if node in proxied else None,
                    proxy_port=proxied[node][1] if node in proxied else None,
                    dir=str(self.node_dir(node)),
                    log=str(self._node_log(node)),
                    started_at=now,
                )
            )
        client_properties: dict[str, str] = {}
        if self.security == "sasl_ssl":
            client_properties = sec.write_client_properties(
                self.dir, self._load_secrets(), sec.tls_files(self.dir)
            )
        state = SandboxState(
            pid=procs[1].pid,
            kafka_version=self.kafka_version,
            bootstrap=self.bootstrap,
            port=self.port,
            controller_port=controller_ports[1],
            cluster_id=cluster_id,
            started_at=now,
            dir=str(self.dir),
            log=str(self.log_path),
            config=sec.redact(config),
            brokers=self.brokers,
            security=self.security,
            nodes=nodes,
            client_properties=client_properties,
            proxied_bootstrap=",".join(f"127.0.0.1:{q}" for _, q in proxied.values()) or None,
        )
        self._write_state(state)
        return state

    def stop(self, node: int | None = None, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> bool:
        """End one node (`node`) or all: SIGTERM, then SIGKILL after `timeout_s`. False if none ran."""
        state = self.status()
        if state is None:
            return False
        targets = [n for n in state.nodes if n.status != "stopped" and node in (None, n.node_id)]
        if node is not None and not targets:
            self._node(node)  # an unknown node id is bad input; a stopped one is a no-op
            return False
        for n in targets:
            self.progress(f"Stopping Kafka node {n.node_id} (pid {n.pid})")
            with contextlib.suppress(ProcessLookupError):
                os.kill(n.pid, signal.SIGTERM)
                os.kill(n.pid, signal.SIGCONT)  # a frozen node must run to handle its SIGTERM
        deadline = time.monotonic() + timeout_s
        for n in targets:
            while time.monotonic() < deadline and _pid_alive(n.pid):
                _reap(n.pid)
                time.sleep(0.1)
            if _pid_alive(n.pid):
                self._kill_pid(n.pid)
            _reap(n.pid)
        if node is None:
            with contextlib.suppress(OSError):
                self._state_path.unlink()
        return True

    def kill(self, node: int) -> None:
        """SIGKILL one node: no controlled shutdown, its leaderships and coordinators move on timeout."""
        n = self._node(node)
        if n.status != "stopped":
            self.progress(f"Killing Kafka node {node} (pid {n.pid})")
            self._kill_pid(n.pid)

    def freeze(self, node: int) -> None:
        """SIGSTOP one node: sockets stay open but nothing answers, like a JVM stuck in a long GC."""
        n = self._node(node)
        if n.status == "running":
            os.kill(n.pid, signal.SIGSTOP)
            _wait_for(lambda: _proc_state(n.pid) == "T")  # signals are delivered asynchronously

    def thaw(self, node: int) -> None:
        n = self._node(node)
        if n.status == "frozen":
            os.kill(n.pid, signal.SIGCONT)
            _wait_for(lambda: _proc_state(n.pid) != "T")

    def restart(self, node: int | None = None, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> SandboxState:
        """Restart one node (data kept, same ports) and wait until the cluster sees it; or all nodes."""
        if node is None or self.brokers == 1:
            if node is not None:
                self._node(node)
            self.stop()
            return self.start(timeout_s)
        self.stop(node)
        n = self._node(node) if self.status() is not None else None
        if n is None:
            raise InvalidInput(
                f"No sandbox runs in {self.dir}.", hint="Start it with `kafka-coop sandbox start`."
            )
        java = require_java()
        lib = resolve_kafka_jars(self.kafka_version, cache=self.cache)
        self.progress(f"Restarting Kafka node {node}")
        proc = self._launch(java, lib, node)
        self._save_node(
            n.model_copy(update={"pid": proc.pid, "started_at": time.time(), "status": "running"})
        )
        self._wait_ready({node: proc}, timeout_s, whole_cluster=False)
        state = self.status()
        assert state is not None
        return state

    def coordinator_of(self, group: str, *, timeout_s: float = 30.0) -> int:
        """The node id of `group`'s coordinator (what FindCoordinator answers now)."""
        described = self.admin().describe_group(group, timeout_s=timeout_s)
        if described.coordinator is None:
            raise ClusterUnavailable(f"The cluster named no coordinator for group {group!r}.")
        return int(described.coordinator)

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- steps ----------------------------------------------------------------------------------
    def _kill_pid(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while _pid_alive(pid):
            _reap(pid)
            time.sleep(0.05)
        _reap(pid)

    def _controller_ports(self) -> dict[int, int]:
        """Each node's KRaft controller port: from `controller_port` on when given (node N: +N-1), else
        the previous one when free (a restart keeps it), else a free one below the ephemeral range."""
        if self.controller_port is not None:
            wanted = {node: self.controller_port + node - 1 for node in self.node_ids}
            taken = [
                p for p in wanted.values() if not port_is_free(p) or p in map(self.node_port, self.node_ids)
            ]
            if taken:
                raise InvalidInput(
                    f"Controller port {taken[0]} on 127.0.0.1 is already in use.",
                    hint="Pass another --controller-port, or leave it out for a free one.",
                )
            return wanted
        previous: dict[int, int] = {}
        state = self._read_state()
        if state is not None:
            previous = {n.node_id: n.controller_port for n in _nodes_of(state)}
        used = set(map(self.node_port, self.node_ids))
        ports: dict[int, int] = {}
        for node in self.node_ids:
            old = previous.get(node)
            if old is not None and old not in used and port_is_free(old):
                used.add(old)
                ports[node] = old
            else:
                ports[node] = _other_free(used)
        return ports

    def _proxied_ports(self, controllers: set[int]) -> dict[int, tuple[int, int]]:
        if not self.proxied:
            return {}
        used = set(map(self.node_port, self.node_ids)) | controllers
        return {node: (_other_free(used), _other_free(used)) for node in self.node_ids}

    def _write_properties(
        self, node: int, controller_ports: Mapping[int, int], proxied: tuple[int, int] | None
    ) -> dict[str, str]:
        wiring = {n: (self.node_port(n), controller_ports[n]) for n in self.node_ids}
        config = node_config(
            node, wiring, data_dir=str(self.node_dir(node) / "data"), security=self.security, proxied=proxied
        )
        if self.security == "sasl_ssl":
            made = self._load_secrets()
            files = sec.ensure_tls(self.dir, made.store_password)
            listeners = ["SASL_SSL"] + ([PROXIED_LISTENER] if proxied else [])
            config.update(sec.server_config(self.dir, made, files, listeners))
        config.update(self.overrides)
        body = "".join(f"{key}={value}\n" for key, value in config.items())
        path = self._props(node)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it may hold passwords
        with os.fdopen(fd, "w") as out:
            out.write(body)
        tmp.replace(path)
        return config

    def _cluster_id(self) -> str:
        for node in self.node_ids:
            meta = self.node_dir(node) / "data" / "meta.properties"
            if meta.exists():
                for line in meta.read_text().splitlines():
                    if line.startswith("cluster.id="):
                        return line.split("=", 1)[1].strip()
        return random_cluster_id()

    def _format_storage(self, java: str, lib: Path, node: int, cluster_id: str) -> None:
        if (self.node_dir(node) / "data" / "meta.properties").exists():
            return
        self.progress(f"Formatting KRaft storage of node {node}")
        scram = sec.scram_format_args(self._load_secrets()) if self.security == "sasl_ssl" else []
        log_path = self._node_log(node)
        with log_path.open("a") as log:
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
                    str(self._props(node)),
                    "--ignore-formatted",
                    *scram,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if proc.returncode != 0:
            raise ClusterUnavailable(
                "Formatting the sandbox's KRaft storage failed.",
                hint="Check the broker overrides passed with --config.",
                log_path=log_path,
            )

    def _launch(self, java: str, lib: Path, node: int) -> subprocess.Popen[bytes]:
        heap = list(BROKER_JVM if self.brokers == 1 else CLUSTER_JVM)
        log = self._node_log(node).open("ab")
        try:
            return subprocess.Popen(
                [
                    java,
                    *heap,
                    "-Djava.awt.headless=true",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true",
                    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                    "-cp",
                    f"{lib}/*",
                    "kafka.Kafka",
                    str(self._props(node)),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.node_dir(node),
            )
        finally:
            log.close()

    def _warm_group_coordinator(self, deadline: float) -> None:
        """Describe a probe group once so __consumer_offsets exists and its coordinator is loaded.

        Without this the first group of every test races the offsets topic creation and sees
        COORDINATOR_LOAD_IN_PROGRESS; "ready" should mean ready for consumer groups.
        """
        # Short attempts, retried: one long request can hang on a coordinator lookup that failed while
        # __consumer_offsets was still being created (seen on a loaded machine: one request, no retry,
        # timed out after minutes although the coordinator had loaded in milliseconds).
        admin = self.admin()
        while True:
            try:
                admin.describe_group("_kafka_coop_sandbox_probe", timeout_s=WARM_ATTEMPT_S)
                return
            except ClusterUnavailable:
                if time.monotonic() + WARM_ATTEMPT_S > deadline:
                    raise
                admin = self.admin()  # a fresh client: no cached coordinator state

    def _wait_ready(
        self, procs: Mapping[int, subprocess.Popen[bytes]], timeout_s: float, *, whole_cluster: bool = True
    ) -> None:
        """Every started node answers and the cluster's metadata names it (a full start: every node,
        then a group coordinator answers, so "ready" means ready for consumer groups)."""
        deadline = time.monotonic() + timeout_s
        conf = self.client_conf()
        waiting = set(procs)
        while time.monotonic() < deadline:
            for node, proc in procs.items():
                code = proc.poll()
                if code is not None:
                    self._abandon(procs)
                    raise ClusterUnavailable(
                        f"Kafka node {node} exited during start-up with code {code}.",
                        hint=_last_error(self._node_log(node)),
                        log_path=self._node_log(node),
                    )
            for node in sorted(waiting):
                port = self.node_port(node)
                if not port_is_free(port) and node in _brokers_answering(f"127.0.0.1:{port}", conf, 2.0):
                    waiting.discard(node)
            if not waiting and set(procs) <= _brokers_answering(self.bootstrap, conf, 2.0):
                if whole_cluster:
                    self._warm_group_coordinator(deadline)
                self.progress(f"Kafka is up on {self.bootstrap}")
                return
            time.sleep(0.25)
        self._abandon(procs)
        raise ClusterUnavailable(
            f"The Kafka broker did not answer metadata requests within {timeout_s:.0f}s.",
            hint="Raise --timeout on a slow machine.",
            log_path=self.log_path,
        )

    def _abandon(self, procs: Mapping[int, subprocess.Popen[bytes]]) -> None:
        """A failed start: end what it launched; a full start also forgets the state file."""
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if len(procs) == self.brokers:
            with contextlib.suppress(OSError):
                self._state_path.unlink()

    def _grant_restricted_acls(self, timeout_s: float) -> None:
        from confluent_kafka import KafkaException

        admin = self.admin()
        futures = admin.client.create_acls(sec.restricted_acl_bindings(), request_timeout=timeout_s)
        for future in futures.values():
            try:
                future.result()
            except KafkaException as exc:
                raise ClusterUnavailable(
                    f"Granting the restricted user's ACLs failed: {exc.args[0] if exc.args else exc}.",
                    log_path=self.log_path,
                ) from None


def _nodes_of(state: SandboxState) -> list[NodeState]:
    """The nodes of a state file (one written before clusters existed describes a single node)."""
    if state.nodes:
        return list(state.nodes)
    return [
        NodeState(
            node_id=1,
            pid=state.pid,
            port=state.port,
            controller_port=state.controller_port,
            dir=state.dir,
            log=state.log,
            started_at=state.started_at,
        )
    ]


def _wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


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


def _other_free(used: set[int]) -> int:
    """A free port not in `used` (then added to it): ports are bound only when the nodes start, so a
    pick can repeat one already given to another node (two controllers on one port, seen in CI)."""
    while (port := free_ports()) in used:
        pass
    used.add(port)
    return port
