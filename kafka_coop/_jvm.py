"""What the test bed and the Spark engine share about the JVM: the cache, one way to publish into it,
compiling our Java sources, and the key and options of a class-data cache (AppCDS or AOT).

Both sides need these and neither may import the other (docs/design/layout.md), so they live here,
below both. Everything published into the cache becomes visible whole or not at all: a build writes
into a staging path beside its target and one rename publishes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, TypeAlias

from kafka_coop.errors import InvalidInput

COMPLETE = ".complete"  # written last into a built directory; its text is what the build returned
JDK_HINT = "Install a JDK 17+ (not only a JRE), e.g. `apt-get install openjdk-17-jdk-headless`."


def cache_dir() -> Path:
    """Jars, compiled classes, archives and tools; `KAFKA_COOP_CACHE_DIR` wins over the XDG default."""
    explicit = os.environ.get("KAFKA_COOP_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-coop"


# --- staged publish ---------------------------------------------------------------------------------
def is_built(target: Path) -> bool:
    return (target / COMPLETE).exists()


def built_note(target: Path) -> str:
    """What the build of `target` returned (its `.complete` text)."""
    return (target / COMPLETE).read_text()


def partial_path(target: Path) -> Path:
    """Where this process stages `target` (beside it, so one rename publishes it)."""
    return target.with_name(f"{target.name}.{os.getpid()}.partial")


def build_once(target: Path, build: Callable[[Path], str]) -> Path:
    """The directory `target`, built by `build(staging)` unless a finished one is there.

    `build` fills the empty staging directory and returns a note kept in `.complete`; if it raises,
    nothing is left behind. When another process published `target` meanwhile, theirs is kept.
    """
    if is_built(target):
        return target
    staging = partial_path(target)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        note = build(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    (staging / COMPLETE).write_text(note)
    if is_built(target):
        shutil.rmtree(staging, ignore_errors=True)
    else:
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    return target


def publish_file(partial: Path, target: Path, *, succeeded: bool = True) -> bool:
    """Rename a written file into place if its writer succeeded and wrote something; otherwise drop
    whatever it left. True when `target` now exists."""
    if succeeded and partial.exists() and partial.stat().st_size > 0:
        os.replace(partial, target)
        return True
    with contextlib.suppress(OSError):
        partial.unlink()
    return False


# --- our Java sources -------------------------------------------------------------------------------
def compile_java(sources: Mapping[str, str], classpath: str, out_root: Path, *, what: str) -> Path:
    """The classes of `sources` (file name -> source) compiled together against `classpath`, under
    `out_root/<hash of all>`, so each matches the jars it runs against; `what` names it in errors."""
    key = "\0".join([classpath, *(f"{name}\0{text}" for name, text in sorted(sources.items()))])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    classes = out_root / digest
    if is_built(classes):
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise InvalidInput(f"javac was not found on PATH; {what} is compiled from source.", hint=JDK_HINT)

    def build(staging: Path) -> str:
        files = [staging / name for name in sorted(sources)]
        for file in files:
            file.write_text(sources[file.name])
        proc = subprocess.run(
            [javac, "-nowarn", "-cp", classpath, "-d", str(staging), *map(str, files)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise InvalidInput(
                f"Compiling {what} failed: {proc.stderr.strip()[:400]}",
                hint="A kafka-coop bug or jars of an unsupported version: please report it.",
            )
        for file in files:
            file.unlink()
        return digest + "\n"

    return build_once(classes, build)


def jar_of(classes: Path, name: str) -> Path:
    """`classes` packed into `classes/name` once (spark.jars ships jars; AppCDS archives only jars)."""
    jar = classes / name
    if not jar.exists():
        staging = partial_path(jar)
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        publish_file(staging, jar)
    return jar


# --- AppCDS archives --------------------------------------------------------------------------------
def jdk_key(java: str) -> str:
    """The JDK part of an archive's key (a JVM maps only an archive its own binary wrote): the resolved
    `java` binary, its size and modification time."""
    binary = Path(java).resolve()
    stat = binary.stat()
    return f"{binary}:{stat.st_size}:{stat.st_mtime_ns}"


# "cds": a dynamic AppCDS archive (JDK >= 13); "aot": a Leyden AOT cache (JDK >= 25, JEPs 483/514/515)
CacheKind: TypeAlias = Literal["cds", "aot"]
CACHE_SUFFIX: dict[CacheKind, str] = {"cds": ".jsa", "aot": ".aot"}


def cache_options(archive: Path | None, kind: CacheKind = "cds") -> list[str]:
    """The JVM option that maps `archive` (none without one)."""
    if archive is None:
        return []
    return [f"-XX:SharedArchiveFile={archive}" if kind == "cds" else f"-XX:AOTCache={archive}"]


def cache_output_option(partial: Path, kind: CacheKind = "cds") -> str:
    """The JVM option that writes a training run's cache to `partial` as the JVM exits."""
    return f"-XX:ArchiveClassesAtExit={partial}" if kind == "cds" else f"-XX:AOTCacheOutput={partial}"
