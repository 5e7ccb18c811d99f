"""Other JVMs for the restarted Java member in bench/restart_floor.py (`--param jvms=...`).

The Java member's restart is bounded by the JVM's start (docs/benchmarks.md, "Why Java cannot reach
20x"). These variants answer whether a newer JDK or a better-trained class cache moves that bound:
JDK 25's AOT cache (JEPs 483/514/515: classes loaded *and linked*, plus method profiles) against the
AppCDS archive the test bed uses on the default JDK, each trained either the test bed's way (a short run
against a closed port) or live (a member of its own group on the bed's broker and topic, so the
connect, join, fetch and commit paths are in the cache too). Restarts alternate between the chosen
variants in one bed, so they are compared under the same load.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from kafka_coop._jvm import CacheKind, cache_options, cache_output_option, partial_path, publish_file
from kafka_coop._vocab import GroupProtocol
from kafka_coop.sandbox import java_member_archive
from kafka_coop.sandbox.testing import JVM_OPTIONS

TEMURIN_25 = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"
LIVE_TRAINING_S = 6.0  # start, join, a few fetches and commits, then SIGTERM as a bounce stops it
_C1 = JVM_OPTIONS  # the test bed's options
_C2 = ("-Xmx192m", "-XX:+UseSerialGC")


class MemberJvm(NamedTuple):
    java: str | None  # None: the `java` on PATH, as the test bed runs it
    options: tuple[str, ...]
    kind: CacheKind
    live: bool  # trained on the live bed rather than against a closed port


MEMBER_JVMS: dict[str, MemberJvm] = {
    "default-cds": MemberJvm(None, _C1, "cds", live=False),
    "default-cds-live": MemberJvm(None, _C1, "cds", live=True),
    "25-cds": MemberJvm(TEMURIN_25, _C1, "cds", live=False),
    "25-aot": MemberJvm(TEMURIN_25, _C1, "aot", live=False),
    "25-aot-live": MemberJvm(TEMURIN_25, _C1, "aot", live=True),
    "25-cds-c2": MemberJvm(TEMURIN_25, _C2, "cds", live=False),
    "25-aot-c2": MemberJvm(TEMURIN_25, _C2, "aot", live=False),
}
_LIVE_ARCHIVES: dict[str, Path] = {}


def check_jvms(names: Sequence[str]) -> None:
    """Refuse unknown variants and variants whose JDK this machine lacks, before any bed starts."""
    unknown = [n for n in names if n not in MEMBER_JVMS]
    if unknown:
        raise ValueError(f"unknown jvm(s) {unknown}; known: {', '.join(MEMBER_JVMS)}")
    for name in names:
        java = MEMBER_JVMS[name].java
        if java is not None and not os.access(java, os.X_OK):
            raise ValueError(f"jvm {name!r} needs {java}, which this machine does not have")


def _jvm_free(cmd: Sequence[str]) -> tuple[list[str], list[str]]:
    """The test bed's member command split into (non-JVM options before -cp, -cp and everything after)."""
    cp = list(cmd).index("-cp")
    ours = [a for a in cmd[1:cp] if a not in JVM_OPTIONS and not a.startswith("-XX:SharedArchiveFile=")]
    return ours, list(cmd[cp:])


def train_live(name: str, member_cmd: Sequence[str], archive: Path) -> None:
    """Train `name`'s cache with a member running `member_cmd` (a group of its own) on the live bed."""
    jvm = MEMBER_JVMS[name]
    partial = partial_path(archive)
    ours, rest = _jvm_free(member_cmd)
    cmd = [jvm.java or "java", *jvm.options, cache_output_option(partial, jvm.kind), *ours, *rest]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(LIVE_TRAINING_S)
    proc.send_signal(signal.SIGTERM)
    proc.wait(120)  # the JVM writes the cache as it exits
    if publish_file(partial, archive):
        _LIVE_ARCHIVES[name] = archive


def closed_port_archive(name: str, kafka_version: str, protocol: GroupProtocol) -> Path | None:
    """`name`'s cache trained the test bed's way (made on first use, kept with its archives)."""
    jvm = MEMBER_JVMS[name]
    return java_member_archive(
        kafka_version, group_protocol=protocol, java=jvm.java, options=jvm.options, kind=jvm.kind
    )


def member_command(cmd: Sequence[str], name: str, kafka_version: str, protocol: GroupProtocol) -> list[str]:
    """The test bed's Java member command with the binary, options and cache of `name` instead."""
    jvm = MEMBER_JVMS[name]
    archive = _LIVE_ARCHIVES.get(name) if jvm.live else closed_port_archive(name, kafka_version, protocol)
    ours, rest = _jvm_free(cmd)
    return [jvm.java or "java", *jvm.options, *cache_options(archive, jvm.kind), *ours, *rest]
