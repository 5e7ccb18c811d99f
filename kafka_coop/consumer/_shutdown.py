"""SIGTERM and SIGINT end a `with CoopConsumer(...)` block cleanly (docs/consumer.md "Stopping").

While a consumer's `with` (or `async with`) block runs on the main thread, kafka-coop handles each of
the two signals the application (or `asyncio.run`, for SIGINT) has not installed a handler for:

- the first one makes the consumer's next `poll`/`consume` raise `ShutdownSignal` instead of calling
  the client; a `poll` in flight returns at its own timeout (the README's `poll(1.0)`: within a second),
  so the record in hand is finished and counts as done. `__exit__` then closes within
  `CLOSE_TIMEOUT_S` (final commit, a LeaveGroup for a dynamic member, `revoked` and `closed` events) and
  swallows the `ShutdownSignal`: the code after the `with` block runs and the process exits normally;
- if the loop has not called `poll`/`consume` again `FORCE_AFTER_S` later (a poll with no timeout, a
  record that takes long), or on a second signal, `ShutdownSignal` is raised where the main thread is,
  as Ctrl-C raises `KeyboardInterrupt`: the batch in hand then does not count as done;
- a signal while closing is logged and ignored: the close is already bounded;
- after the block the previous handlers are back.

Nothing here imports the client: the consumer passes in what to do on the first signal.
"""

from __future__ import annotations

import _thread
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)
CLOSE_TIMEOUT_S = 10.0  # under Kubernetes' default 30 s grace, with FORCE_AFTER_S on top
FORCE_AFTER_S = 5.0
_DEFAULTS: dict[int, Any] = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}


class ShutdownSignal(SystemExit):
    """Raised by `poll`/`consume` after SIGTERM/SIGINT; the `with` block that owns the consumer ends on
    it. A `SystemExit` (code 0), so `except Exception` in the loop does not swallow it and, should it
    escape, the interpreter exits quietly. `clean`: the loop asked for the next record (everything
    handed out before is done), rather than being interrupted in the middle."""

    def __init__(self, signum: int, *, clean: bool) -> None:
        super().__init__(0)
        self.signum = signum
        self.clean = clean

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


class SignalStop:
    """The handlers one consumer's `with` block installs; `install()` says whether it did."""

    def __init__(self, on_first: Callable[[int], None], log: logging.Logger) -> None:
        self._on_first = on_first
        self._log = log
        self._previous: dict[int, Any] = {}
        self._timer: threading.Timer | None = None
        self.signum: int | None = None
        self.closing = False
        self.forced = False

    def install(self, *, force: bool = True) -> bool:
        """Only on the main thread, and only over a signal's default handler: an application that handles
        a signal itself (as examples/service.py once did) keeps its own, and so does `asyncio.run`'s
        SIGINT (it cancels the main task, which closes the block). `force=False` (asyncio): no raise in
        the middle, where it would land inside the event loop."""
        if threading.current_thread() is not threading.main_thread():
            return False
        self._force = force
        for sig in SIGNALS:
            if signal.getsignal(sig) is _DEFAULTS[sig]:
                self._previous[sig] = signal.signal(sig, self._handle)
        return bool(self._previous)

    def begin_close(self) -> None:
        """From here on a signal is only logged: the close is bounded already."""
        self.closing = True
        if self._timer is not None:
            self._timer.cancel()

    def restore(self) -> None:
        self.begin_close()
        if threading.current_thread() is threading.main_thread():
            for sig, previous in self._previous.items():
                signal.signal(sig, previous)
        self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.closing:
            self._log.info("%s while closing: the close goes on (at most %.0f s)", name, CLOSE_TIMEOUT_S)
            return
        if self.signum is None:
            self.signum = signum
            self._log.info("%s: stopping at the next poll, then committing and leaving the group", name)
            self._on_first(signum)
            if self._force:
                self._timer = threading.Timer(FORCE_AFTER_S, _thread.interrupt_main, (signum,))
                self._timer.daemon = True
                self._timer.start()
            return
        if not self._force:
            self._log.info("%s: stopping already, at the next poll", name)
            return
        self.forced = True
        self._log.info("%s again: stopping now; the batch in hand is not committed", name)
        raise ShutdownSignal(signum, clean=False)

    def stopped(self) -> ShutdownSignal:
        """The exception a stopped consumer's `poll`/`consume` raises."""
        assert self.signum is not None
        return ShutdownSignal(self.signum, clean=True)
