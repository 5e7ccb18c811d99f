"""Group members as processes: start N of any client family, stop, kill, reconfigure, rolling-bounce.

A bounce is a real process restart and a kill a real SIGKILL; every member writes RebalanceEvent lines
to its own file, read back for tests, the demo and benchmarks (docs/design/test-bed.md). The other
families' member commands come from the repository's testbed/, passed in as `families`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_coop._jvm import cache_options
from kafka_coop._vocab import GroupProtocol
from kafka_coop.admin import ClusterAdmin, GroupDescription
from kafka_coop.errors import InvalidInput, KafkaCoopError
from kafka_coop.events import PartitionKey, RebalanceEvent
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC
from kafka_coop.sandbox._broker import DEFAULT_KAFKA_VERSION
from kafka_coop.sandbox._java import (
    JVM_OPTIONS,
    MAIN_CLASS,
    java_member_archive,
    java_member_classpath,
)

ClientKind = Literal["java", "python"]
"""The members the wheel runs: the Java member and `kafka-coop consume`."""
CLIENT_KINDS: tuple[str, ...] = get_args(ClientKind)
# kind -> the argv prefix that runs one member of another client family (the Java member's options
# follow it). The other families' members live with the test bed that runs them: the repository's
# testbed/interop/ builds them (`InteropKind`), and tests and benchmarks pass its `member_command` in.
FamilyCommand = Callable[[str], list[str]]
DEFAULT_STABLE_TIMEOUT_S = 90.0
DEFAULT_STOP_TIMEOUT_S = 30.0

# librdkafka's rebalance choice for a single assignor list; a mixed list has no entry on purpose.
_PYTHON_REBALANCE = {
    ("range",): "eager-range",
    ("roundrobin",): "eager-roundrobin",
    ("cooperative-sticky",): "cooperative-sticky",
}


class MemberSpec(BaseModel):
    """How to run one member process; `replace(...)` between bounces is how a rollout changes config."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: str  # a ClientKind, or a family the member processes' `families` runs
    group: str
    topics: tuple[str, ...]
    assignors: tuple[str, ...] = ("range",)
    group_protocol: GroupProtocol = "classic"
    remote_assignor: str | None = None
    instance_id: str | None = None
    properties: Mapping[str, str] = Field(default_factory=dict)
    members: int = 1
    close: Literal["default", "leave", "remain"] = "default"
    process_ms: int = 0
    record_log: bool = False
    manifests: bool = True  # publish to _kafka_coop_manifests when that topic exists
    control: bool = False  # python members: follow the control topic (live reconfiguration)
    # None = the member's name, "default" = the library's own default client id (what a service that
    # never sets one sends, and what inference reads on the wire); a Python member takes any other
    # value as its client.id, e.g. "rdkafka" for instances of a service that sets none.
    client_id: str | None = None

    def replace(self, **changes: Any) -> MemberSpec:
        return self.model_validate({**self.model_dump(), **changes})


def unowned_partitions(live: GroupDescription, partitions: Mapping[str, int]) -> list[PartitionKey]:
    """Partitions of the subscribed topics that no member is assigned.

    A Stable group is not a settled one under the cooperative protocol: the first round of a rebalance
    revokes what must move and hands it to nobody, the group reads Stable, and only the second round gives
    the revoked partitions to their new owners. Every partition having an owner tells the two apart (an
    idle member alone does not: range over topics with few partitions leaves members idle for good).
    """
    owned = {tp for m in live.members for tp in m.assignment}
    return [(t, p) for t, n in sorted(partitions.items()) for p in range(n) if (t, p) not in owned]


def latest_owned(events: Sequence[Mapping[str, Any]]) -> frozenset[PartitionKey] | None:
    """What one consumer owns after its last assigned/revoked/lost event; None before its first."""
    for event in reversed(events):
        if event.get("kind") in ("assigned", "revoked", "lost"):
            return frozenset((str(t), int(p)) for t, p in event.get("owned") or ())
    return None


def ownership_settled(owned: Mapping[str, frozenset[PartitionKey] | None], partitions: int) -> bool:
    """Every member owns something, no partition is owned twice, and all `partitions` are owned."""
    seen: set[PartitionKey] = set()
    for parts in owned.values():
        if not parts or seen & parts:
            return False
        seen |= parts
    return len(seen) == partitions


class MemberProcessError(KafkaCoopError):
    """A member or group did not reach the state a test or rollout step waited for."""


def wait_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    """`proc.wait(timeout_s)`, but woken by the exit itself (a pidfd on Linux >= 5.3).

    Popen.wait with a timeout polls with sleeps growing to 50 ms, so a member that exits 70 ms after its
    SIGTERM is seen at 114 ms: a bounce would count up to 50 ms of the runner's polling as the member's
    restart.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here, or the process is already reaped
        return proc.wait(timeout_s)
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    if not ready:
        raise subprocess.TimeoutExpired(proc.args, timeout_s)
    return proc.wait()


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every RebalanceEvent line of one file, each validated as the report validates it.

    A member killed mid-write leaves a torn last line (no newline after it): that one event never
    finished, so it is skipped. Any other line that is not an event is an error naming file and line,
    because a test that silently drops events judges a stream other than the one that was written.
    """
    if not path.exists():
        return []
    *lines, last = path.read_text(encoding="utf-8", errors="replace").split("\n")
    events = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            RebalanceEvent.model_validate_json(line, strict=True)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first["loc"]) or "line"
            raise MemberProcessError(
                f"{path} line {number} is not a RebalanceEvent: {where}: {first['msg']}."
            ) from None
        events.append(json.loads(line))
    if last.strip():
        with contextlib.suppress(ValidationError):
            RebalanceEvent.model_validate_json(last, strict=True)
            events.append(json.loads(last))
    return events


class MemberProcess:
    """One member process and its files."""

    def __init__(
        self,
        spec: MemberSpec,
        workdir: Path,
        bootstrap: str,
        kafka_version: str,
        command_config: Path | None = None,
        families: FamilyCommand | None = None,
    ) -> None:
        self.spec = spec
        self.families = families
        self.bootstrap = bootstrap
        self.kafka_version = kafka_version
        self.command_config = command_config  # a secured cluster's client properties (python members)
        self.events_path = workdir / f"{spec.name}.events.jsonl"
        self.records_path = workdir / f"{spec.name}.records.txt"
        self.log_path = workdir / f"{spec.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._events_at_start = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        spec = self.spec
        if self.command_config is not None and spec.kind != "python":
            raise InvalidInput(
                f"Member {spec.name}: only python members take a client properties file (security).",
                hint="Run java and the other families' members against a plaintext cluster.",
            )
        if spec.kind == "java":
            return self._java_command()
        if spec.kind != "python":
            return self._interop_command()
        if spec.members != 1:
            raise InvalidInput(f"Python member {spec.name} runs one consumer per process; set members=1.")
        cmd = [
            sys.executable,
            "-m",
            "kafka_coop.cli",
            "consume",
            spec.group,
            *spec.topics,
            "--bootstrap-server",
            self.bootstrap,
            "--events",
            str(self.events_path),
            "--quiet",
        ]
        if spec.client_id != "default":  # "default": `consume`'s own, one per process
            cmd += ["--conf", f"client.id={spec.client_id or spec.name}"]
        if self.command_config is not None:
            cmd += ["--command-config", str(self.command_config)]
        if spec.group_protocol == "consumer":
            cmd += ["--rebalance", "consumer"]
            if spec.remote_assignor:
                cmd += ["--remote-assignor", spec.remote_assignor]
        elif spec.assignors in _PYTHON_REBALANCE:
            cmd += ["--rebalance", _PYTHON_REBALANCE[spec.assignors]]
        else:  # let librdkafka itself judge the list (it refuses mixed protocols)
            cmd += ["--conf", f"partition.assignment.strategy={','.join(spec.assignors)}"]
        if spec.instance_id:
            cmd += ["--instance-id", spec.instance_id]
        if spec.record_log:
            cmd += ["--records", str(self.records_path)]
        if not spec.manifests:
            cmd += ["--no-manifests"]
        if spec.control:
            cmd += ["--control"]
        if spec.process_ms:
            cmd += ["--process-ms", str(spec.process_ms)]
        if spec.close != "default":
            raise InvalidInput(
                f"Python member {spec.name}: librdkafka has no close option to leave or remain in the group.",
                hint="Use close='default' (static members remain, dynamic ones leave).",
            )
        for key, value in spec.properties.items():
            cmd += ["--conf", f"{key}={value}"]
        return cmd

    def _java_command(self) -> list[str]:
        spec = self.spec
        cp = java_member_classpath(self.kafka_version)
        archive = java_member_archive(self.kafka_version, group_protocol=spec.group_protocol)
        cmd = [
            "java",
            *JVM_OPTIONS,
            *cache_options(archive),
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            cp,
            MAIN_CLASS,
            "--bootstrap",
            self.bootstrap,
            "--group",
            spec.group,
            "--topics",
            ",".join(spec.topics),
            "--assignors",
            ",".join(spec.assignors),
            "--group-protocol",
            spec.group_protocol,
            "--members",
            str(spec.members),
            "--client-id",
            f"{spec.name}-{{i}}" if spec.members > 1 else spec.name,
            "--events",
            str(self.events_path),
            "--close",
            spec.close,
            "--process-ms",
            str(spec.process_ms),
        ]
        if spec.manifests:
            cmd += ["--manifests", DEFAULT_MANIFEST_TOPIC]
        if spec.remote_assignor:
            cmd += ["--remote-assignor", spec.remote_assignor]
        if spec.instance_id:
            cmd += ["--instance-id", spec.instance_id]
        if spec.record_log:
            cmd += ["--records", str(self.records_path)]
        for key, value in spec.properties.items():
            cmd += ["--prop", f"{key}={value}"]
        return cmd

    def _interop_command(self) -> list[str]:
        """The Java member's command line, run by another family's member (one consumer per process;
        no manifests: these stand for services that know nothing of kafka-coop)."""
        spec = self.spec
        if self.families is None:
            raise InvalidInput(
                f"Member {spec.name}: the package runs {' and '.join(CLIENT_KINDS)} members; {spec.kind} "
                "members are built from the kafka-coop repository's testbed/interop/ folder, which the "
                "installed package does not include.",
                hint="From a repository checkout: "
                "MemberProcesses(..., families=testbed.interop.member_command).",
            )
        if spec.members != 1:
            raise InvalidInput(
                f"{spec.kind} member {spec.name} runs one consumer per process; set members=1."
            )
        cmd = [
            *self.families(spec.kind),
            "--bootstrap",
            self.bootstrap,
            "--group",
            spec.group,
            "--topics",
            ",".join(spec.topics),
            "--assignors",
            ",".join(spec.assignors),
            "--group-protocol",
            spec.group_protocol,
            "--events",
            str(self.events_path),
            "--close",
            spec.close,
            "--process-ms",
            str(spec.process_ms),
        ]
        if spec.client_id != "default":
            cmd += ["--client-id", spec.client_id or spec.name]
        if spec.remote_assignor:
            cmd += ["--remote-assignor", spec.remote_assignor]
        if spec.instance_id:
            cmd += ["--instance-id", spec.instance_id]
        if spec.record_log:
            cmd += ["--records", str(self.records_path)]
        for key, value in spec.properties.items():
            cmd += ["--prop", f"{key}={value}"]
        return cmd

    def start(self) -> None:
        if self.alive:
            return
        self._events_at_start = len(read_events(self.events_path))
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        self.starts += 1

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> int | None:
        """Graceful stop (SIGTERM: final commit, close); SIGKILL if it does not end in time."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return wait_exit(self.proc, timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL: no leave, no commit; the broker notices only when the session times out."""
        if self.alive and self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.events_path)

    def events_since_start(self) -> list[dict[str, Any]]:
        return self.events()[self._events_at_start :]

    def has_joined(self) -> bool:
        """True once every consumer of this process got its first assignment since the last start."""
        assigned = {e["client_id"] for e in self.events_since_start() if e["kind"] == "assigned"}
        return len(assigned) >= self.spec.members

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""


def _connection_conf(command_config: Path | None) -> dict[str, str]:
    from kafka_coop._vocab import connection_conf
    from kafka_coop.settings import read_properties

    return connection_conf(read_properties(command_config)) if command_config is not None else {}


class MemberProcesses:
    """Member processes of one or more groups on one cluster; stops them all on exit."""

    def __init__(
        self,
        bootstrap: str,
        workdir: Path | str,
        *,
        kafka_version: str = DEFAULT_KAFKA_VERSION,
        command_config: Path | None = None,
        families: FamilyCommand | None = None,
        wait_for_brokers: bool = True,
    ) -> None:
        """`command_config`: a secured cluster's client properties (`--command-config`), for the
        admin client and every python member. `families`: how to run the other client families'
        members (`FamilyCommand`); without it only java and python members run. `wait_for_brokers`:
        the admin client waits for brokers that are down (tests restart them); False fails at once
        on a cluster that refuses its first connection (`ClusterAdmin`)."""
        self.families = families
        self.bootstrap = bootstrap
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kafka_version = kafka_version
        self.members: dict[str, MemberProcess] = {}
        self.command_config = command_config
        self.conf = _connection_conf(command_config)
        self.admin = ClusterAdmin(bootstrap, self.conf, wait_for_brokers=wait_for_brokers)

    def add(self, spec: MemberSpec, *, start: bool = True) -> MemberProcess:
        if spec.name in self.members:
            raise InvalidInput(f"A member named {spec.name!r} is already among these member processes.")
        member = MemberProcess(
            spec, self.workdir, self.bootstrap, self.kafka_version, self.command_config, self.families
        )
        self.members[spec.name] = member
        if start:
            member.start()
        return member

    def add_many(self, specs: Iterable[MemberSpec]) -> list[MemberProcess]:
        return [self.add(spec) for spec in specs]

    def __getitem__(self, name: str) -> MemberProcess:
        return self.members[name]

    def group_members(self, group: str) -> list[MemberProcess]:
        return [m for m in self.members.values() if m.spec.group == group]

    def expected_size(self, group: str) -> int:
        return sum(m.spec.members for m in self.group_members(group) if m.alive)

    def stop(self, name: str, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        self.members[name].stop(timeout_s)

    def kill(self, name: str) -> None:
        self.members[name].kill()

    def reconfigure(self, name: str, **changes: Any) -> MemberSpec:
        member = self.members[name]
        member.spec = member.spec.replace(**changes)
        return member.spec

    def stop_all(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S, *, group: str | None = None) -> None:
        """SIGTERM every member (of `group`, if given) at once, then wait for each, as a scale-to-0 does."""
        members = list(self.members.values()) if group is None else self.group_members(group)
        for member in members:
            if member.alive and member.proc is not None:
                member.proc.send_signal(signal.SIGTERM)
        for member in members:
            member.stop(timeout_s)

    def wait_stable(
        self,
        group: str,
        *,
        members: int | None = None,
        timeout_s: float = DEFAULT_STABLE_TIMEOUT_S,
        joined: Iterable[MemberProcess] = (),
        on_poll: Callable[[GroupDescription], None] | None = None,
        partitions: int | None = None,
    ) -> GroupDescription:
        """Wait until `group` has settled: Stable with the expected size, `joined` in, every partition owned.

        Ownership is the broker's view (each subscribed partition assigned to some member), unless
        `partitions` is given: then it is the members' own, from their events (every live member owns
        a partition and all `partitions` are owned exactly once): the benchmarks' readiness gate,
        stricter, and with no metadata request per poll.
        """
        expected = self.expected_size(group) if members is None else members
        must_join = list(joined)
        deadline = time.monotonic() + timeout_s
        last: GroupDescription | None = None
        while time.monotonic() < deadline:
            self._check_alive(group)
            last = self.admin.describe_group(group)
            if on_poll is not None:
                on_poll(last)
            if (
                last.state == "stable"
                and len(last.members) == expected
                and all(m.has_joined() for m in must_join)
                and self._all_owned(group, last, partitions)
            ):
                return last
            time.sleep(0.2)
        seen = "nothing" if last is None else f"state {last.state} with {len(last.members)} members"
        waiting = [m for m in self.group_members(group) if m.alive and not m.has_joined()]
        tails = "".join(f"\n{m.spec.name} (not joined), its log ends:\n{m.log_tail(8)}" for m in waiting)
        raise MemberProcessError(
            f"Group {group!r} did not settle with {expected} members within {timeout_s:.0f}s (saw {seen}).",
            hint="Check the member logs in " + str(self.workdir) + tails,
        )

    def _all_owned(self, group: str, live: GroupDescription, partitions: int | None) -> bool:
        if partitions is None:
            return not unowned_partitions(live, self._partition_counts(group))
        owned = {
            m.spec.name: latest_owned(m.events_since_start()) for m in self.group_members(group) if m.alive
        }
        return ownership_settled(owned, partitions)

    def _partition_counts(self, group: str) -> dict[str, int]:
        """Partitions of every topic the group's live members subscribe to, as the cluster has them now."""
        counts: dict[str, int] = {}
        for topic in sorted({t for m in self.group_members(group) if m.alive for t in m.spec.topics}):
            layout = self.admin.topic_layout(topic)
            if layout is not None:
                counts[topic] = layout[0]
        return counts

    def _check_alive(self, group: str) -> None:
        for member in self.group_members(group):
            if member.proc is not None and member.proc.poll() not in (
                None,
                0,
                -signal.SIGTERM,
                -signal.SIGKILL,
            ):
                raise MemberProcessError(
                    f"Member {member.spec.name} exited with code {member.proc.returncode}.",
                    hint=member.log_tail(5),
                    log_path=member.log_path,
                )

    def rolling_bounce(
        self,
        group: str,
        *,
        downtime_s: float = 0.0,
        reconfigure: Mapping[str, Any] | Callable[[MemberSpec], MemberSpec] | None = None,
        wait_stable: bool = True,
        timeout_s: float = DEFAULT_STABLE_TIMEOUT_S,
        on_member: Callable[[MemberProcess], None] | None = None,
    ) -> None:
        """Restart every member of `group` in turn, optionally with new config, like a deploy does.

        Between members it waits for the group to be Stable again with the restarted member assigned,
        which is what a careful deploy's readiness gate does; `wait_stable=False` bounces blindly.
        """
        for member in self.group_members(group):
            member.stop()
            if downtime_s > 0:
                time.sleep(downtime_s)
            if callable(reconfigure):
                member.spec = reconfigure(member.spec)
            elif reconfigure:
                member.spec = member.spec.replace(**reconfigure)
            member.start()
            if wait_stable:
                self.wait_stable(group, timeout_s=timeout_s, joined=[member])
            if on_member is not None:
                on_member(member)

    def __enter__(self) -> MemberProcesses:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.stop_all()
        else:
            for member in self.members.values():
                member.kill()
