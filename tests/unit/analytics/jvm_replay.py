"""The JVM step (`kafka_coop/analytics/java/GroupStep.java`) for tests: `java/StepReplay.java` serves it
one JSON line at a time in one long-lived JVM, so `stream_feed.Feed` drives it as it drives
`GroupStream`.

A failure inside the JVM is a `JvmStepError` carrying the Java stack trace (the JVM goes on serving);
a JVM that exits, or does not answer within `timeout_s`, is a `JvmStepError` too (it is killed, and the
next request starts a new one), so a broken step fails its test instead of hanging the run.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final

import numpy as np

from kafka_coop._jvm import cache_dir, compile_java
from kafka_coop.analytics._spark_jars import analytics_jar, pyspark_dir
from kafka_coop.analytics._stream import INPUT_FIELDS, OUTPUT_FIELDS, StreamConfig

REPLAY_JAVA: Final = Path(__file__).resolve().parent / "java" / "StepReplay.java"
MAIN_CLASS: Final = "kafkacoop.StepReplay"
STDERR_TAIL: Final = 4_000


class JvmStepError(RuntimeError):
    """The JVM step failed: the message is the Java stack trace, or how the JVM died."""


def main_classpath(main_java: Path, what: str) -> str:
    """A test's Java main compiled against the library's own jar of its Java code (`analytics_jar`,
    what the pipeline ships) and PySpark's jars (Jackson among them): the classpath that runs it."""
    jars = f"{pyspark_dir() / 'jars'}{os.sep}*"
    classpath = f"{analytics_jar()}{os.pathsep}{jars}"
    main = compile_java(
        {main_java.name: main_java.read_text()}, classpath, cache_dir() / "test-java", what=what
    )
    return f"{main}{os.pathsep}{classpath}"


def replay_classpath() -> str:
    return main_classpath(REPLAY_JAVA, "the tests' StepReplay")


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(bytes(value)).decode()


def _unb64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


class StepReplay:
    """One JVM serving `GroupStep`, started on the first request (and again after one died)."""

    def __init__(self, *, timeout_s: float = 120.0) -> None:
        self.timeout_s = timeout_s
        self._classpath: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = bytearray()

    # --- the step's operations ------------------------------------------------------------------
    def advance(
        self,
        group: str | None,
        state: bytes | None,
        rows: Mapping[str, Sequence[Any]],
        now: int,
        config: StreamConfig,
    ) -> tuple[list[list[Any]], bytes | None, int | None]:
        """Output rows (OUTPUT_FIELDS order, `raw` as bytes), the state dumped after it, the wakeup."""
        binary = {name for name, kind in INPUT_FIELDS if kind == "binary"}
        columns = {
            name: [_b64(v) for v in values] if name in binary else [_plain(v) for v in values]
            for name, values in rows.items()
        }
        reply = self.request(
            {
                "op": "advance",
                "group": group,
                "state": _b64(state),
                "config": dataclasses.asdict(config),
                "now": int(now),
                "rows": columns,
            }
        )
        raw = [n for n, (name, kind) in enumerate(OUTPUT_FIELDS) if kind == "binary"]
        out = reply["rows"]
        for row in out:
            for n in raw:
                row[n] = _unb64(row[n])
        return out, _unb64(reply["state"]), reply["wakeup"]

    def wakeup(self, state: bytes, config: StreamConfig, after: int) -> int | None:
        reply = self.request(
            {"op": "wakeup", "state": _b64(state), "config": dataclasses.asdict(config), "after": int(after)}
        )
        wakeup: int | None = reply["wakeup"]
        return wakeup

    # --- the process ----------------------------------------------------------------------------
    def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """One request, its reply; JvmStepError for an error reply, a dead or a silent JVM."""
        if self._proc is not None and self._proc.poll() is not None:
            raise self._died("between requests")
        if self._proc is None:
            self._start()
        reply = self._exchange(message)
        if "error" in reply:
            raise JvmStepError(f"the JVM step failed:\n{reply['error']}")
        return reply

    def _start(self) -> None:
        self.close()
        java = shutil.which("java")
        if java is None:
            raise JvmStepError("java was not found on PATH")
        if self._classpath is None:
            self._classpath = replay_classpath()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  # closed by close()
        self._proc = subprocess.Popen(
            [java, "-Xss16m", "-cp", self._classpath, MAIN_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            bufsize=0,
        )
        self._buffer = bytearray()
        fields = {"op": "fields", "input": list(INPUT_FIELDS), "output": list(OUTPUT_FIELDS)}
        reply = self._exchange(fields)
        if "error" in reply:
            raise JvmStepError(f"the JVM step refused its fields:\n{reply['error']}")

    def _exchange(self, message: Mapping[str, Any]) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        try:
            proc.stdin.write(line)
            proc.stdin.flush()
        except BrokenPipeError:
            raise self._died("while it was sent a request") from None
        deadline = time.monotonic() + self.timeout_s
        fd = proc.stdout.fileno()
        while (end := self._buffer.find(b"\n")) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                proc.kill()
                raise self._died(f"with no reply in {self.timeout_s:.0f} s (killed)")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise self._died("before it replied")
                self._buffer += chunk
        reply = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        parsed: dict[str, Any] = json.loads(reply)
        return parsed

    def _died(self, when: str) -> JvmStepError:
        proc = self._proc
        assert proc is not None
        try:
            code: int | None = proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        stderr = self._stderr_tail()
        self.close()
        return JvmStepError(f"the JVM step ended {when} (exit {code}); its stderr:\n{stderr}")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL))
        return self._stderr.read().decode(errors="replace")

    def close(self) -> None:
        """End the JVM (its stdin closed ends its loop; killed if it does not end)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _plain(value: Any) -> Any:
    """A column value as JSON: bools and ints as such (numpy scalars too), strings, None."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    return int(value)
