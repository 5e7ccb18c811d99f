"""The package as a user gets it: what a release uploads, built from this checkout by its recipe
(scripts/build_dist.py: the sdist, the compiled wheel, the pure wheel), installed (not editable) into
fresh virtualenvs the way pip picks from a package index, and every command run from a directory outside
the checkout.

Two installs, one per audience: `base` is `pip install kafka-coop` (the consumer, for services) and `cli`
is `pip install 'kafka-coop[cli]'` (operators), both from the folder of the three files
(`--find-links`), where pip takes the compiled wheel. Both take the pinned versions of constraints.txt,
which `make setup` has already cached, so installing them reads pip's cache, not the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Dist:
    """What scripts/build_dist.py made in `folder`: the sdist, the compiled wheel built from it (as a
    user's pip would build one) and made manylinux, and the pure wheel built from the same sdist."""

    folder: Path
    sdist: Path
    wheel: Path
    pure_wheel: Path
    log: str

    @property
    def wheels(self) -> tuple[Path, Path]:
        return (self.wheel, self.pure_wheel)

    def requirement(self, extras: str = "") -> list[str]:
        """`pip install kafka-coop[extras]` with the folder as the package's source, as an index is."""
        return ["--find-links", str(self.folder), f"kafka-coop{extras}"]


@dataclass(frozen=True)
class Installed:
    """One virtualenv holding the wheel; `run` starts its programs outside the checkout."""

    root: Path
    workdir: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env.update({"COLUMNS": "200", "NO_COLOR": "1", **extra})
        return env

    def argv(self, *argv: str | Path) -> list[str]:
        """A bare program name runs the venv's own (`kafka-coop`, `python`, `pip`)."""
        program, *rest = (str(a) for a in argv)
        return [program if "/" in program else str(self.bin / program), *rest]

    def run(self, *argv: str | Path, timeout: float = 180.0, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*argv),
            cwd=self.workdir,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    def popen(self, *argv: str | Path, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*argv),
            cwd=self.workdir,
            env=self.env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )


def _check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"


def source_tree(dest: Path) -> Path:
    """The checkout as a clean clone would have it (tracked files and new ones git does not ignore, as
    they are in the working tree), so no build output or egg-info of the checkout leaks into the build,
    and the build writes none into the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = REPO / rel
        if source.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    src = source_tree(tmp_path_factory.mktemp("source"))
    # A user's machine compiles bytecode while building; this one is told not to (PYTHONDONTWRITEBYTECODE),
    # which setuptools reports as a warning of its own.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KAFKA_COOP_BUILD_C")}
    proc = subprocess.run(
        [sys.executable, str(src / "scripts" / "build_dist.py"), "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        env=env,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    _check(proc, "scripts/build_dist.py")
    (sdist,) = out.glob("*.tar.gz")
    (pure,) = out.glob("*-py3-none-any.whl")
    (wheel,) = set(out.glob("*.whl")) - {pure}
    return Dist(folder=out, sdist=sdist, wheel=wheel, pure_wheel=pure, log=proc.stdout + proc.stderr)


def make_install(
    tmp_path_factory: pytest.TempPathFactory, name: str, requirements: list[str], constraints: Path
) -> Installed:
    root = tmp_path_factory.mktemp(f"venv-{name}")
    venv.create(root, with_pip=True)
    workdir = tmp_path_factory.mktemp(f"outside-{name}")
    installed = Installed(root=root, workdir=workdir)
    proc = installed.run(
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-c",
        str(constraints),
        *requirements,
        timeout=INSTALL_TIMEOUT_S,
    )
    _check(proc, f"pip install {' '.join(requirements)}")
    return installed


@pytest.fixture(scope="session")
def base_install(tmp_path_factory: pytest.TempPathFactory, dist: Dist) -> Installed:
    """`pip install kafka-coop`: the consumer library, no extra (the compiled wheel, which pip picks)."""
    return make_install(tmp_path_factory, "base", dist.requirement(), REPO / "constraints.txt")


@pytest.fixture(scope="session")
def cli_install(tmp_path_factory: pytest.TempPathFactory, dist: Dist) -> Installed:
    """`pip install 'kafka-coop[cli]'`: the command, without the plot, Spark or metrics extras."""
    return make_install(tmp_path_factory, "cli", dist.requirement("[cli]"), REPO / "constraints.txt")


@pytest.fixture
def no_traceback() -> Callable[[subprocess.CompletedProcess[str]], None]:
    def check(proc: subprocess.CompletedProcess[str]) -> None:
        assert "Traceback" not in proc.stderr, proc.stderr

    return check
