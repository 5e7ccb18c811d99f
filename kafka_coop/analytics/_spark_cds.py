"""The Spark driver JVM's AppCDS archive: the classes a report loads, mapped in at start instead of
loaded one by one (session start 6.1-6.5 s -> 3.8-4.3 s on two cores; docs/design/analytics.md).

Trained once by a child process (`prepare-spark`), keyed by the `java` binary, PySpark's version and
jars and the driver's options, since a JVM maps only an archive made with the same classpath.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from kafka_coop._jvm import cache_dir, jdk_key, partial_path, publish_file

TRAINING_ENV: Final = "KAFKA_COOP_SPARK_CDS_TRAINING"  # set in the training child: where to write it
TRAINING_FLAG: Final = "--train-class-archive"  # `python -m kafka_coop.analytics._spark FLAG DIR`: the child
TRAINING_EVENTS: Final = 20_000
TRAINING_TIMEOUT_S: Final = 300
# A JVM that cannot map an archive says so on stdout; the report's output must not change because of it.
QUIET: Final = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def archive_path(java_options: str) -> Path | None:
    """Where the archive for the `java` on PATH, this PySpark and these driver options lives; None
    without Java or PySpark."""
    java = shutil.which("java")
    if java is None:
        return None
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    listing = sorted(p.name for p in jars.glob("*.jar"))
    key = f"{jdk_key(java)}:{pyspark.__version__}:{jars}:{listing}:{java_options}"
    return cache_dir() / "spark-cds" / f"driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def archive_options(java_options: str) -> list[str]:
    """The driver's extra JVM options for the archive: write it (in the training child), map it (when
    one was made), or none."""
    training = os.environ.get(TRAINING_ENV)
    if training:
        return [f"-XX:ArchiveClassesAtExit={training}", *QUIET]
    archive = archive_path(java_options)
    if archive is not None and archive.exists():
        return [f"-XX:SharedArchiveFile={archive}", *QUIET]
    return []


def make_archive(java_options: str) -> Path | None:
    """Train the archive once (a child process runs a small report); its path, or None if this JDK did
    not write one (the report then runs without, as before)."""
    archive = archive_path(java_options)
    if archive is None:
        return None
    if archive.exists():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(archive)
    with tempfile.TemporaryDirectory(prefix="kafka-coop-spark-cds-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "kafka_coop.analytics._spark", TRAINING_FLAG, tmp],
            env={**os.environ, TRAINING_ENV: str(partial)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=TRAINING_TIMEOUT_S,
            check=False,
        )
    return archive if publish_file(partial, archive, succeeded=proc.returncode == 0) else None
