"""The jars the Spark session adds: our JVM code (the line decoder, the live step), compiled on first
use against this PySpark's jars, and the Kafka source (spark-sql-kafka), resolved once from Maven
Central with the ivy jar PySpark ships, in a child process (docs/design/analytics.md says why and how
versions are chosen).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Final

from kafka_coop._jvm import build_once, built_note, cache_dir, compile_java, is_built, jar_of
from kafka_coop.errors import InvalidInput

CONNECTOR: Final = ("org.apache.spark", "spark-sql-kafka-0-10_2.13")
FALLBACK_VERSIONS: Final = ("4.2.0", "4.1.1")
RESOLVE_TIMEOUT_S: Final = 600
_VERSIONED = re.compile(r"^(?P<name>.+?)-(?P<version>\d[\w.+-]*)\.jar$")


def pyspark_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def connector_versions() -> list[str]:
    forced = os.environ.get("KAFKA_COOP_SPARK_KAFKA_VERSION")
    if forced:
        return [forced]
    import pyspark

    return list(dict.fromkeys([pyspark.__version__, *FALLBACK_VERSIONS]))


DECODER_CLASS: Final = "kafkacoop.EventDecoder"
ANALYTICS_JAR: Final = "kafka-coop-spark.jar"


def analytics_jar() -> Path:
    """Our JVM code for Spark (the event decoder, the live pipeline's step), compiled against this
    PySpark's jars the first time."""
    java = resources.files("kafka_coop.analytics") / "java"
    sources = {f.name: f.read_text() for f in java.iterdir() if f.name.endswith(".java")}
    classes = compile_java(
        sources,
        f"{pyspark_dir() / 'jars'}/*",
        cache_dir() / "spark-decoder",
        what="kafka-coop's Spark code (event decoder, live step)",
    )
    return jar_of(classes, ANALYTICS_JAR)


def jar_dir(version: str) -> Path:
    return cache_dir() / f"spark-kafka-{version}"


def _artifact(jar: str) -> str:
    match = _VERSIONED.match(jar)
    return match.group("name") if match else jar


def cached_kafka_jars() -> list[Path] | None:
    """The connector jars if some candidate version was resolved before, else None (no network)."""
    for version in connector_versions():
        if is_built(jar_dir(version)):
            return [jar_dir(version) / name for name in built_note(jar_dir(version)).split()]
    return None


class _NotResolved(Exception):
    """Ivy could not fetch this connector version; the next candidate is tried."""


def resolve_kafka_jars() -> list[Path]:
    """Resolve (first time only) and return the jars the session adds for `kafka://` sources."""
    cached = cached_kafka_jars()
    if cached is not None:
        return cached
    java = shutil.which("java")
    if java is None:
        raise InvalidInput("Java was not found on PATH; Spark runs on a JVM.", hint="Install a JDK 17+.")
    shipped_dir = pyspark_dir() / "jars"
    ivy = next(iter(sorted(shipped_dir.glob("ivy-*.jar"))), None)
    if ivy is None:
        raise InvalidInput("This PySpark has no ivy jar to resolve the Kafka connector with.")
    shipped = {_artifact(p.name) for p in shipped_dir.glob("*.jar")}
    tried: list[str] = []
    for version in connector_versions():
        log = cache_dir() / f"spark-kafka-{version}.log"
        log.parent.mkdir(parents=True, exist_ok=True)

        def build(staging: Path, version: str = version, log: Path = log) -> str:
            with log.open("w") as fh:
                proc = subprocess.run(
                    [
                        java,
                        "-cp",
                        str(ivy),
                        "org.apache.ivy.Main",
                        "-dependency",
                        *CONNECTOR,
                        version,
                        "-confs",
                        "default",
                        "-cache",
                        str(cache_dir() / "ivy" / "cache"),
                        "-retrieve",
                        str(staging / "[artifact]-[revision].[ext]"),
                    ],
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    timeout=RESOLVE_TIMEOUT_S,
                    check=False,
                )
            jars = sorted(p.name for p in staging.glob("*.jar"))
            if proc.returncode != 0 or not any(j.startswith(CONNECTOR[1]) for j in jars):
                raise _NotResolved(version)
            for jar in jars:
                if _artifact(jar) in shipped:
                    (staging / jar).unlink()
            return "\n".join(sorted(p.name for p in staging.glob("*.jar"))) + "\n"

        try:
            target = build_once(jar_dir(version), build)
        except _NotResolved:
            tried.append(version)
            continue
        return [target / name for name in built_note(target).split()]
    raise InvalidInput(
        f"Could not fetch the Spark Kafka connector {CONNECTOR[1]} ({', '.join(tried)}) from Maven Central.",
        hint=f"Check network access to repo1.maven.org; the log is in {cache_dir()}.",
    )
