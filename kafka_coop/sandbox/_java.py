"""Compile the Java test-bed member (java/CoopMember.java here) against kafka-clients, cached by hash.

A member is one JVM per process, so a bounce pays the JVM's start: loading and verifying kafka-clients'
classes is most of the ~1 s from `java` to the first assignment. The member therefore runs from a jar
(AppCDS takes jars only, no class directories) with a dynamic AppCDS archive of the classes it loads,
made once per (JDK, classpath, options, group protocol) by a short training run against a closed port
(no broker needed) and reused by every later start: the production practice for fast JVM restarts, and
about half the CPU of a start (measured: start to first assignment 775 ms -> 378-458 ms, CPU 1052 ->
563-666 ms).
"""

from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from kafka_coop._jvm import (
    CACHE_SUFFIX,
    CacheKind,
    cache_dir,
    cache_output_option,
    compile_java,
    jar_of,
    jdk_key,
    partial_path,
    publish_file,
)
from kafka_coop._vocab import GroupProtocol
from kafka_coop.sandbox._jars import resolve_kafka_jars
from kafka_coop.sandbox._ports import free_port

MAIN_CLASS = "CoopMember"
# The Java member closes through CloseOptions (KIP-1092), which kafka-clients has from 4.1: a release
# before that runs librdkafka members only (the cross-version lane's 3.7-4.0 brokers do).
JAVA_MEMBER_MIN_KAFKA = (4, 1)


def has_java_member(kafka_version: str) -> bool:
    major, minor = (int(p) for p in kafka_version.split(".")[:2])
    return (major, minor) >= JAVA_MEMBER_MIN_KAFKA


MEMBER_JAR = "coop-member.jar"
# Every member JVM runs with these; an AppCDS archive is only valid for the options it was made with.
JVM_OPTIONS: tuple[str, ...] = ("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
ARCHIVE_TRAINING_S = 2.5  # long enough for the consumer to start, subscribe and try to connect
ARCHIVE_TRAINING_TIMEOUT_S = 60.0


def _source() -> str:
    return (resources.files("kafka_coop.sandbox") / "java" / f"{MAIN_CLASS}.java").read_text()


def java_member_classpath(kafka_version: str, *, cache: Path | None = None) -> str:
    """Classpath that runs `CoopMember`: its jar, then every kafka-clients runtime jar in a fixed order
    (compiled once per Kafka version and source)."""
    lib = resolve_kafka_jars(kafka_version, cache=cache)
    classes = compile_java(
        {f"{MAIN_CLASS}.java": _source()},
        f"{lib}/*",
        (cache or cache_dir()) / "java-member" / kafka_version,
        what=f"the Java member against Kafka {kafka_version}",
    )
    return ":".join([str(jar_of(classes, MEMBER_JAR)), *sorted(str(jar) for jar in lib.glob("*.jar"))])


def java_member_archive(
    kafka_version: str,
    *,
    cache: Path | None = None,
    group_protocol: GroupProtocol = "classic",
    java: str | None = None,
    options: Sequence[str] = JVM_OPTIONS,
    kind: CacheKind = "cds",
) -> Path | None:
    """The member's AppCDS archive for the `java` on PATH, made on first use; None if this JDK cannot.

    The archive is keyed by the JDK binary, the classpath and the JVM options, so a changed JDK or jar gets a
    new one instead of a mismatch. A JDK that cannot make one (before 13, or a failed training run) is
    remembered by a marker file, so members start without an archive rather than retrying every time.
    One archive per group protocol: a `group.protocol=consumer` member runs another consumer
    (AsyncKafkaConsumer, its background thread and request managers: ~280 classes the classic training
    run never loads), so it gets an archive trained on its own start, as a KIP-848 service would.
    `java`, `options` and `kind` exist for the benchmarks that compare JVMs (another JDK binary, other
    options, a JDK 25 AOT cache instead of an AppCDS archive); the test bed's members use the defaults.
    """
    java = java or shutil.which("java")
    if java is None:
        return None
    classpath = java_member_classpath(kafka_version, cache=cache)
    key = f"{jdk_key(java)}:{classpath}:{' '.join(options)}"
    if group_protocol != "classic":  # the classic archive keeps its key: no retraining for it
        key += f":{group_protocol}"
    if kind != "cds":
        key += f":{kind}"
    classes = Path(classpath.split(":", 1)[0]).parent
    archive = classes / f"member-{hashlib.sha256(key.encode()).hexdigest()[:16]}{CACHE_SUFFIX[kind]}"
    failed = archive.with_name(archive.name + ".failed")
    if archive.exists():
        return archive
    if failed.exists():
        return None
    if _train_archive(
        str(Path(java).resolve()), classpath, archive, group_protocol, options=options, kind=kind
    ):
        return archive
    failed.touch()
    return None


def _train_archive(
    java: str,
    classpath: str,
    archive: Path,
    group_protocol: GroupProtocol,
    *,
    options: Sequence[str] = JVM_OPTIONS,
    kind: CacheKind = "cds",
) -> bool:
    """Run the member once against a closed port with -XX:ArchiveClassesAtExit (or, for an AOT cache,
    -XX:AOTCacheOutput); True if it wrote one."""
    partial = partial_path(archive)
    with tempfile.TemporaryDirectory(prefix="kafka-coop-cds-") as tmp:
        cmd = [
            java,
            *options,
            cache_output_option(partial, kind),
            "-cp",
            classpath,
            MAIN_CLASS,
            "--bootstrap",
            f"127.0.0.1:{free_port()}",  # nothing listens there: no cluster is touched
            "--group",
            "kafka-coop-cds-training",
            "--topics",
            "kafka-coop-cds-training",
            "--instance-id",
            "kafka-coop-cds-training",
            "--events",
            str(Path(tmp) / "events.jsonl"),
            "--group-protocol",
            group_protocol,
        ]
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            proc.wait(ARCHIVE_TRAINING_S)
        except subprocess.TimeoutExpired:  # still running, as it should: stop it the way a bounce does
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(ARCHIVE_TRAINING_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return publish_file(partial, archive)
