"""Build the test-bed members of the other client families (this package's go/, node/, python/) from
their registry packages.

A real fleet mixes client libraries, so the test bed runs real members of each: kafka-python and
aiokafka (PyPI, in a venv of their own so their pins never meet the project's), franz-go, IBM/sarama
and confluent-kafka-go (the Go module proxy, one module, three programs) and KafkaJS (npm). Every
member takes the Java member's command line (kafka_coop/sandbox/java/CoopMember.java) and writes the same
RebalanceEvent lines. Each toolchain's build lands in the kafka-coop cache under a hash of its sources,
pins and toolchain version, staged and renamed like the Java member, so `make setup` builds once and
every later start is a lookup. A missing toolchain is an error naming what to install, never a skip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, get_args

from kafka_coop._jvm import build_once, cache_dir, is_built
from kafka_coop.errors import InvalidInput

InteropKind = Literal["kafka-python", "aiokafka", "franz-go", "sarama", "confluent-kafka-go", "kafkajs"]
INTEROP_KINDS: tuple[str, ...] = get_args(InteropKind)
Toolchain = Literal["python", "go", "node"]
TOOLCHAIN_OF: dict[str, Toolchain] = {
    "kafka-python": "python",
    "aiokafka": "python",
    "franz-go": "go",
    "sarama": "go",
    "confluent-kafka-go": "go",
    "kafkajs": "node",
}
BUILD_TIMEOUT_S = 900.0
_HINTS = {
    "go": "Install Go 1.26+ (https://go.dev/doc/install; Debian's golang is older), rerun `make setup`.",
    "node": "Install Node.js 18+ with npm (e.g. `apt-get install nodejs npm`) and rerun `make setup`.",
    "python": "Rerun `make setup` (the members' venv is made with this Python's venv module).",
}


# The members' sources: this package's go/, node/ and python/ folders (the wheel ships none of them).
INTEROP_DIR = Path(__file__).resolve().parent


def _walk(node: Path, prefix: str = "") -> Iterator[tuple[str, bytes]]:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name.startswith((".", "__pycache__")) or child.name == "node_modules":
            continue
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            yield from _walk(child, rel + "/")
        else:
            yield rel, child.read_bytes()


def _sources(toolchain: Toolchain) -> list[tuple[str, bytes]]:
    return list(_walk(INTEROP_DIR / toolchain))


def _run(cmd: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            timeout=BUILD_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise InvalidInput(f"Building {what} took longer than {BUILD_TIMEOUT_S:.0f}s.") from exc
    if proc.returncode != 0:
        raise InvalidInput(
            f"Building {what} failed ({' '.join(cmd[:3])}): {(proc.stderr or proc.stdout).strip()[-600:]}",
            hint="Check the registry can be reached; a kafka-coop bug otherwise: please report it.",
        )
    return proc.stdout


# Where the official Go tarball installs (go.dev/doc/install) when its bin is not on PATH.
_WELL_KNOWN = {"go": "/usr/local/go/bin/go"}


def _tool(name: str, toolchain: Toolchain) -> str:
    path = shutil.which(name)
    if path is None and name in _WELL_KNOWN and Path(_WELL_KNOWN[name]).is_file():
        path = _WELL_KNOWN[name]
    if path is None:
        raise InvalidInput(
            f"{name} was not found on PATH; the {toolchain} test-bed members are built with it.",
            hint=_HINTS[toolchain],
        )
    return path


def _version(toolchain: Toolchain) -> str:
    if toolchain == "go":
        return subprocess.run(
            [_tool("go", "go"), "version"], capture_output=True, text=True, check=False
        ).stdout.strip()
    if toolchain == "node":
        node = subprocess.run(
            [_tool("node", "node"), "--version"], capture_output=True, text=True, check=False
        )
        _tool("npm", "node")
        return node.stdout.strip()
    return f"{sys.version} {sys.executable}"


def _build_go(src: Path, out: Path) -> None:
    go = _tool("go", "go")
    env = {**os.environ, "CGO_ENABLED": "1", "GOFLAGS": "-mod=readonly"}
    _run([go, "build", "-trimpath", "-o", str(out / "bin") + "/", "./cmd/..."], src, "the Go members", env)


def _build_node(src: Path, out: Path) -> None:
    npm = _tool("npm", "node")
    _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], src, "the KafkaJS member")


def _build_python(src: Path, out: Path) -> None:
    venv = out / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], src, "the Python members' venv")
    pip = str(venv / "bin" / "pip")
    _run(
        [pip, "install", "--quiet", "--disable-pip-version-check", "-r", str(src / "requirements.txt")],
        src,
        "the Python members (kafka-python, aiokafka)",
    )


_BUILDERS: dict[Toolchain, Callable[[Path, Path], None]] = {
    "go": _build_go,
    "node": _build_node,
    "python": _build_python,
}


_BUILT: dict[tuple[Toolchain, Path], Path] = {}


def build_dir(toolchain: Toolchain, *, cache: Path | None = None) -> Path:
    """The built members of one toolchain, building them on first use (keyed by sources + toolchain);
    looked up once per process, as every member start asks."""
    root = cache or cache_dir()
    known = _BUILT.get((toolchain, root))
    if known is not None and is_built(known):
        return known
    _BUILT[(toolchain, root)] = path = _build_dir(toolchain, root)
    return path


def _build_dir(toolchain: Toolchain, cache: Path) -> Path:
    sources = _sources(toolchain)
    digest = hashlib.sha256(_version(toolchain).encode())
    for rel, data in sources:
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    out = cache / "interop" / toolchain / digest.hexdigest()[:16]

    def build(staging: Path) -> str:
        for rel, data in sources:
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        _BUILDERS[toolchain](staging, staging)
        return digest.hexdigest() + "\n"

    return build_once(out, build)


def member_command(kind: str, *, cache: Path | None = None) -> list[str]:
    """argv prefix that runs one member of `kind`; the Java member's options follow it."""
    if kind not in TOOLCHAIN_OF:
        raise InvalidInput(f"Unknown member kind {kind!r}; known: java, python, {', '.join(INTEROP_KINDS)}.")
    toolchain = TOOLCHAIN_OF[kind]
    root = build_dir(toolchain, cache=cache)
    if toolchain == "go":
        return [str(root / "bin" / kind)]
    if toolchain == "node":
        return [_tool("node", "node"), str(root / "kafkajs-member.js")]
    script = "kafka_python_member.py" if kind == "kafka-python" else "aiokafka_member.py"
    return [str(root / "venv" / "bin" / "python"), str(root / script)]


def main() -> None:
    """`make interop`: build every family's member (part of `make setup`)."""
    import time

    for toolchain in ("python", "go", "node"):
        t0 = time.monotonic()
        try:
            path = build_dir(toolchain)
        except InvalidInput as exc:
            print(f"Error: {exc}", file=sys.stderr)
            if exc.hint:
                print(exc.hint, file=sys.stderr)
            raise SystemExit(2) from None
        print(f"{toolchain} test-bed members: {path} ({time.monotonic() - t0:.1f}s)")
