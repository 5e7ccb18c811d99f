"""Compile the Java test-bed member (interop/java) against the sandbox's kafka-clients, cached by hash."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from kafka_coop.errors import InvalidInput
from kafka_coop.sandbox._jars import resolve_kafka_jars
from kafka_coop.sandbox._paths import cache_dir

MAIN_CLASS = "CoopMember"


def _source() -> str:
    return (resources.files("kafka_coop.interop") / "java" / f"{MAIN_CLASS}.java").read_text()


def java_member_classpath(kafka_version: str, *, cache: Path | None = None) -> str:
    """Classpath that runs `CoopMember`; compiles once per (Kafka version, source) and reuses it."""
    lib = resolve_kafka_jars(kafka_version, cache=cache)
    source = _source()
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    classes = (cache or cache_dir()) / "java-member" / f"{kafka_version}-{digest}"
    if not (classes / f"{MAIN_CLASS}.class").exists():
        javac = shutil.which("javac")
        if javac is None:
            raise InvalidInput(
                "javac was not found on PATH; the Java test-bed member is compiled from source.",
                hint="Install a JDK 17+ (not only a JRE), e.g. `apt-get install openjdk-17-jdk-headless`.",
            )
        staging = classes.with_name(classes.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        src = staging / f"{MAIN_CLASS}.java"
        src.write_text(source)
        proc = subprocess.run(
            [javac, "-nowarn", "-cp", f"{lib}/*", "-d", str(staging), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise InvalidInput(
                f"Compiling the Java member against Kafka {kafka_version} failed: "
                f"{proc.stderr.strip()[:400]}",
                hint="This is a kafka-coop bug or an unsupported Kafka version; report it.",
            )
        shutil.rmtree(classes, ignore_errors=True)
        staging.rename(classes)
    return f"{classes}:{lib}/*"
