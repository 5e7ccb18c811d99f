"""Where a command meets the process's edges: what it raised and did not catch, signals, a closed stdout.

cli/main.py is the one place that turns these into a message and an exit code; this module says which
message and which code (docs/cli.md, "Errors and exit codes"):

- a `KafkaCoopError` as it is (0 ok, 1 a verdict, 2 bad input, 3 the cluster, 130 interrupted);
- an `OSError` naming a path (a file or directory the command was told to read or write) is bad input,
  exit 2, with the path and what is wrong with it; a network `OSError` is the cluster, exit 3;
- a setting librdkafka refuses when a client is made (`_INVALID_ARG`: an unknown key, a bad value) is
  bad input, exit 2; any other error a client library raises unhandled is the cluster, exit 3;
- Ctrl-C, SIGTERM and SIGHUP raise `Signalled` in the main thread, so every `finally` of the command
  runs and stops what it started; a second signal only says it is still stopping, a third ends the
  process at once. Exit 128 + the signal (130 for Ctrl-C);
- a stdout whose reader went away (`| head`) swallows the rest of the output, so the command still
  ends with its own verdict (`upgrade-plan ... | head -1` exits 1 only for a blocked plan).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import socket
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any, TextIO

import click

from kafka_coop.errors import ClusterUnavailable, Interrupted, InvalidInput, KafkaCoopError

INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
LIBRDKAFKA_NAMES_HINT = (
    "--conf and --command-config take librdkafka's property names and values "
    "(docs/cli.md lists the security ones)."
)

_PATH_REASONS: dict[int, str] = {
    errno.ENOENT: "it does not exist, or a directory on its way does not",
    errno.ENOTDIR: "a part of it is a file, not a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "the operation is not permitted there",
    errno.EROFS: "the file system is read-only",
    errno.EISDIR: "it is a directory",
    errno.EEXIST: "it exists already",
    errno.ENOSPC: "no space is left on the device",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "too many symbolic links on its way",
}


class Signalled(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP, raised in the main thread (a KeyboardInterrupt, so libraries that
    stop on Ctrl-C stop on all three)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def as_error(exc: BaseException, command: str) -> KafkaCoopError | None:
    """The KafkaCoopError that `exc` means, or None for a bug (the caller lets it show its traceback)."""
    if isinstance(exc, KafkaCoopError):
        return exc
    if isinstance(exc, click.exceptions.Abort):  # click turns a KeyboardInterrupt into Abort
        exc = exc.__cause__ or exc.__context__ or KeyboardInterrupt()
    if isinstance(exc, KeyboardInterrupt):
        return interrupted(command, exc.signum if isinstance(exc, Signalled) else signal.SIGINT)
    if isinstance(exc, OSError):
        return os_error(exc)
    if type(exc).__name__ == "KafkaException" and type(exc).__module__.split(".")[0] in (
        "cimpl",
        "confluent_kafka",
    ):
        return kafka_error(exc)
    return None


def interrupted(command: str, signum: int) -> Interrupted:
    what = SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}")
    return Interrupted(
        f"Interrupted by {what} before `kafka-coop {command}` finished.",
        hint="What the command had started is stopped; run it again to finish.",
        signum=signum,
    )


def os_error(exc: OSError) -> KafkaCoopError:
    """A path the command could not use (exit 2), or the network (exit 3)."""
    if isinstance(exc, ConnectionError | socket.gaierror | TimeoutError) and exc.filename is None:
        return ClusterUnavailable(
            f"The network refused a connection: {exc.strerror or exc}.",
            hint="Check --bootstrap-server and that the brokers are running.",
        )
    reason = _PATH_REASONS.get(exc.errno or 0, (exc.strerror or str(exc)).rstrip(".").lower())
    if exc.filename is None:
        return InvalidInput(
            f"The system refused an operation of this command: {reason}.",
            hint="Check the paths and limits the command works with.",
        )
    path = os.fsdecode(exc.filename)
    if exc.errno == errno.EEXIST and os.path.exists(path) and not os.path.isdir(path):
        reason = "it is a file, where a directory is needed"
    return InvalidInput(
        f"Cannot use the path {path!r}: {reason}.",
        hint="Give a path whose directory exists and that this user may write to (or read, for an input).",
    )


def kafka_error(exc: BaseException) -> KafkaCoopError:
    """A KafkaException nothing caught: a refused setting (exit 2), or the cluster (exit 3)."""
    err: Any = exc.args[0] if exc.args else exc
    text = str(err.str()) if hasattr(err, "str") else str(err)
    text = re.sub(r"[,.]?\s*[Ss]ee https?://\S+(?: for more information)?\.?", "", text).strip()
    name = err.name() if hasattr(err, "name") else ""
    if name == "_INVALID_ARG":
        return InvalidInput(
            f"librdkafka refused the client settings: {text.rstrip('.')}.", hint=LIBRDKAFKA_NAMES_HINT
        )
    return ClusterUnavailable(
        f"The Kafka client failed: {name + ': ' if name else ''}{text.rstrip('.')}.",
        hint="Check --bootstrap-server, --command-config and that the brokers are running.",
    )


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise `Signalled` in the main thread while the command runs.

    The first one interrupts; while the command's `finally` blocks stop what it started, a second one
    only says so and a third ends the process at once (exit 128 + signal).
    """
    seen: list[int] = []

    def handle(signum: int, _frame: FrameType | None) -> None:
        seen.append(signum)
        if len(seen) == 1:
            raise Signalled(signum)
        if len(seen) == 2:
            with contextlib.suppress(OSError):
                sys.stderr.write("Still stopping what this command started (once more to quit at once)…\n")
                sys.stderr.flush()
            return
        os._exit(128 + signum)

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in INTERRUPT_SIGNALS:
            previous[sig] = signal.signal(sig, handle)
    except ValueError:  # not the main thread (an embedding): signals stay as they were
        pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class GuardedStdout:
    """sys.stdout, but a reader that went away (EPIPE) only ends the output, not the command."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self.reader_gone = False
        self.written = False  # the command printed something (its result): no error object after it

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        if not self.reader_gone:
            try:
                return self._inner.write(text)
            except BrokenPipeError:
                self.reader_gone = True
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._inner.flush()
            except BrokenPipeError:
                self.reader_gone = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def stdout_written() -> bool:
    """True once the command wrote to stdout (through `guarded_stdout`)."""
    return isinstance(sys.stdout, GuardedStdout) and sys.stdout.written


def stdout_reader_gone() -> bool:
    """True once the reader of stdout went away: a command that prints until stopped stops."""
    return isinstance(sys.stdout, GuardedStdout) and sys.stdout.reader_gone


@contextlib.contextmanager
def guarded_stdout() -> Iterator[GuardedStdout]:
    original = sys.stdout
    guard = GuardedStdout(original)
    sys.stdout = guard  # a TextIO in all that is used of it
    try:
        yield guard
    finally:
        sys.stdout = original
