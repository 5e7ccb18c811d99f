"""What a Spark master other than local[N] needs: a reachable master, and our Python code on executors.

A `spark://HOST:PORT` master that nobody answers on is said at once (exit 3), not after Spark's own
retries (three registrations of 20 s, then a context whose jobs never run). Executors on other machines
run Python tasks (the pipeline's per-group step, the report's Arrow tasks) that import `kafka_coop`:
the driver ships its own copy as a zip of the package's Python files (`SparkContext.addPyFile`, which
workers put ahead of what they have installed), so the executors run the driver's code and need only
what PySpark's pandas tasks need (pandas, pyarrow, numpy) plus pydantic. The decoder jar travels in
`spark.jars`. docs/pipeline.md ("Where it runs") is the user's page.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from kafka_coop._jvm import cache_dir
from kafka_coop.errors import ClusterUnavailable, InvalidInput

CONNECT_TIMEOUT_S: Final = 3.0
SHIPPED_SUFFIXES: Final = (".py", ".json", ".typed")


def is_local(master: str | None) -> bool:
    return master is None or master == "local" or master.startswith("local[")


def standalone_masters(master: str) -> list[tuple[str, int]]:
    """The HOST:PORT pairs of a `spark://` URL (several for standby masters); [] for other masters."""
    if not master.startswith("spark://"):
        return []
    pairs = []
    for address in master[len("spark://") :].split(","):
        parts = urlsplit(f"//{address}")
        try:
            port = parts.port
        except ValueError:
            port = None
        if not parts.hostname or port is None:
            raise InvalidInput(
                f"--master {master!r} is not spark://HOST:PORT.",
                hint="Give the standalone master's URL as its web page shows it, e.g. spark://host:7077.",
            )
        pairs.append((parts.hostname, port))
    return pairs


def check_master(master: str | None) -> None:
    """A standalone master that accepts no connection is ClusterUnavailable (one sentence, exit 3)."""
    pairs = standalone_masters(master) if master else []
    if not pairs:
        return
    reasons = []
    for host, port in pairs:
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
                return
        except OSError as exc:
            reasons.append(exc.strerror or type(exc).__name__.replace("Error", "").lower() or "no answer")
    raise ClusterUnavailable(
        f"Could not reach the Spark master at {master}: {reasons[0].lower()}.",
        hint="Start the standalone master (sbin/start-master.sh) or give --master local[*] to run here.",
    )


def package_zip() -> Path:
    """A zip of the running kafka_coop's Python files (cached by content), for `addPyFile`."""
    root = Path(__file__).resolve().parents[1]  # the kafka_coop package directory
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in SHIPPED_SUFFIXES and "__pycache__" not in p.parts
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            info = zipfile.ZipInfo(
                str(Path(root.name) / path.relative_to(root)), date_time=(1980, 1, 1, 0, 0, 0)
            )
            archive.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    data = buffer.getvalue()
    target = cache_dir() / "spark-pyfiles" / f"kafka_coop-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.{os.getpid()}")
        staging.write_bytes(data)
        os.replace(staging, target)
    return target


@contextlib.contextmanager
def removing_new_dirs(*paths: Path) -> Iterator[None]:
    """On an exception, remove the directories of `paths` (and their parents) that did not exist before
    and are still empty: a refused command leaves nothing behind."""
    new: list[Path] = []
    for path in paths:
        for part in (path.absolute(), *path.absolute().parents):
            if part.exists():
                break
            new.append(part)
    try:
        yield
    except BaseException:
        for part in sorted(set(new), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                part.rmdir()
        raise
