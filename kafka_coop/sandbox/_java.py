"""Compile the Java test-bed member (interop/java) against the sandbox's kafka-clients, cached by hash."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from kafka_coop._javac import compile_java
from kafka_coop.sandbox._jars import resolve_kafka_jars
from kafka_coop.sandbox._paths import cache_dir

MAIN_CLASS = "CoopMember"


def _source() -> str:
    return (resources.files("kafka_coop.interop") / "java" / f"{MAIN_CLASS}.java").read_text()


def java_member_classpath(kafka_version: str, *, cache: Path | None = None) -> str:
    """Classpath that runs `CoopMember`; compiles once per (Kafka version, source) and reuses it."""
    lib = resolve_kafka_jars(kafka_version, cache=cache)
    classes = compile_java(
        _source(),
        f"{MAIN_CLASS}.java",
        f"{lib}/*",
        (cache or cache_dir()) / "java-member" / kafka_version,
        what=f"the Java member against Kafka {kafka_version}",
    )
    return f"{classes}:{lib}/*"
