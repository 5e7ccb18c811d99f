"""Compile a Java source of ours once, cached by the hash of its text and classpath.

kafka-coop ships two small Java programs as source (the test-bed member, interop/java, and the Spark
engine's line decoder, analytics/java) and compiles them with the machine's `javac` on first use, so
no binary is committed and each matches the jars it runs against. The compiled classes land in a
directory keyed by that hash; a half-finished compile never becomes visible (staged, then renamed).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

from kafka_coop.errors import InvalidInput

JDK_HINT = "Install a JDK 17+ (not only a JRE), e.g. `apt-get install openjdk-17-jdk-headless`."


def compile_java(source: str, file_name: str, classpath: str, out_root: Path, *, what: str) -> Path:
    """The classes directory for `source` (saved as `file_name`), compiled against `classpath` under
    `out_root/<hash>`; `what` names the program in error messages."""
    digest = hashlib.sha256(f"{classpath}\0{source}".encode()).hexdigest()[:16]
    classes = out_root / digest
    done = classes / ".complete"
    if done.exists():
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise InvalidInput(f"javac was not found on PATH; {what} is compiled from source.", hint=JDK_HINT)
    staging = classes.with_name(classes.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    src = staging / file_name
    src.write_text(source)
    proc = subprocess.run(
        [javac, "-nowarn", "-cp", classpath, "-d", str(staging), str(src)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise InvalidInput(
            f"Compiling {what} failed: {proc.stderr.strip()[:400]}",
            hint="A kafka-coop bug or jars of an unsupported version: please report it.",
        )
    src.unlink()
    (staging / done.name).write_text(digest + "\n")
    shutil.rmtree(classes, ignore_errors=True)
    staging.rename(classes)
    return classes


def jar_of(classes: Path, name: str) -> Path:
    """`classes` packed into `classes/name` once (spark.jars ships jars; AppCDS archives only jars)."""
    jar = classes / name
    if not jar.exists():
        staging = classes / f".{name}.partial"
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(staging, jar)
    return jar
