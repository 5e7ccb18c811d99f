"""How the contract tests run the CLI: the real `kafka-coop` in a process group of its own, as a shell
runs it, with what a row asserts about its exit code, its stderr and what it left running."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ERROR = re.compile(r"^Error: (?P<sentence>.+)$", re.M)
# what no stderr of a command may show: a traceback, or a Java one passed through
TRACES = ("Traceback (most recent call last)", "\tat org.apache", "py4j.protocol")


@dataclass(frozen=True)
class Row:
    """One row of the spec: the command line (placeholders in braces), the exit code, and a regex
    the one `Error:` sentence must match (None: no error at all)."""

    id: str
    argv: str
    code: int
    says: str | None = None
    within_s: float | None = None
    columns: int = 200


@dataclass
class Ran:
    argv: list[str]
    code: int
    stdout: str
    stderr: str
    seconds: float
    orphans: list[str] = field(default_factory=list)

    def why(self) -> str:
        return f"{shlex.join(self.argv)}\nexit {self.code} after {self.seconds:.1f}s\n{self.stderr[-3000:]}"


# the console script pip installed next to this interpreter: what a user and a pipeline run
KAFKA_COOP = str(Path(sys.executable).with_name("kafka-coop"))


def cli_argv(argv: str, values: Mapping[str, str]) -> list[str]:
    words = shlex.split(argv.format(**values))
    return [KAFKA_COOP, *words]


def environment(columns: int, tag: str) -> dict[str, str]:
    """A CI job's: no terminal, COLUMNS as given, and a tag every descendant inherits (orphan count)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    return {**env, "COLUMNS": str(columns), "NO_COLOR": "1", "KAFKA_COOP_CONTRACT_TAG": tag}


def tagged(tag: str) -> list[str]:
    """Live processes (not zombies) that carry `tag` in their environment: what a command started and
    left running after it ended."""
    found = []
    needle = f"KAFKA_COOP_CONTRACT_TAG={tag}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle not in (proc / "environ").read_bytes():
                continue
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
            if state != "Z":
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name}: {cmd[:160]}")
    return found


def run(
    argv: list[str], *, columns: int = 200, timeout: float = 120.0, stdout: int | None = subprocess.PIPE
) -> Ran:
    tag = uuid.uuid4().hex
    began = time.monotonic()
    proc = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        env=environment(columns, tag),
        check=False,
    )
    return Ran(argv, proc.returncode, proc.stdout or "", proc.stderr, time.monotonic() - began, tagged(tag))


class Running:
    """A command started in a process group of its own (as a shell starts a job), its stderr read as it
    comes, so a test can wait for the command to reach a step and then press Ctrl-C."""

    def __init__(self, argv: list[str], *, columns: int = 200, env: Mapping[str, str] | None = None) -> None:
        self.argv = argv
        self.tag = uuid.uuid4().hex
        self.began = time.monotonic()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**environment(columns, self.tag), **(env or {})},
            start_new_session=True,
        )
        self._err: list[str] = []
        self._out: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stderr, self._err), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stdout, self._out), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    def wait_for(self, text: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.stderr:
            assert self.proc.poll() is None, f"ended before {text!r}:\n{self.stderr[-3000:]}"
            assert time.monotonic() < deadline, f"no {text!r} within {timeout:.0f}s:\n{self.stderr[-3000:]}"
            time.sleep(0.05)

    def interrupt(self, signum: int = signal.SIGINT, timeout: float = 60.0) -> tuple[Ran, float]:
        """Ctrl-C as a terminal sends it: to the whole foreground process group. Returns what ran and
        how long the command took to end after the signal."""
        sent = time.monotonic()
        os.killpg(self.proc.pid, signum)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait()
        took = time.monotonic() - sent
        for reader in self._readers:
            reader.join(10)
        return (
            Ran(
                self.argv, code, "".join(self._out), self.stderr, time.monotonic() - self.began, self._left()
            ),
            took,
        )

    def _left(self, grace_s: float = 5.0) -> list[str]:
        deadline = time.monotonic() + grace_s
        while (left := tagged(self.tag)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid_line in tagged(self.tag):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_line.split(":", 1)[0]), signal.SIGKILL)


@contextlib.contextmanager
def running(
    argv: list[str], *, columns: int = 200, env: Mapping[str, str] | None = None
) -> Iterator[Running]:
    job = Running(argv, columns=columns, env=env)
    try:
        yield job
    finally:
        job.kill()


def assert_one_sentence(ran: Ran, says: str | None) -> None:
    """No traceback; with `says`, exactly one `Error:` line, one sentence matching `says`, at most one
    hint; without it, no `Error:` line at all. And nothing the command started is left running."""
    for trace in TRACES:
        assert trace not in ran.stderr, ran.why()
    errors = ERROR.findall(ran.stderr)
    if says is None:
        assert errors == [], ran.why()
    else:
        assert len(errors) == 1, ran.why()
        sentence = errors[0].strip()
        assert re.search(says, sentence), f"{says!r} not in {sentence!r}\n{ran.why()}"
        assert ran.stderr.count("\nHint:") + ran.stderr.startswith("Hint:") <= 1, ran.why()
    assert ran.orphans == [], f"left running: {ran.orphans}\n{ran.why()}"
