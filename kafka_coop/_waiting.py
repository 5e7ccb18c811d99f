"""A blocking client call the main thread can interrupt.

A call into librdkafka (or a py4j/JVM start) holds the main thread inside C until it returns, so
Ctrl-C waits for it: `list_topics(timeout=10)` against a silent address ends a command 10 s after
the key was pressed. Run on a thread of its own and waited for here, the wait is an ordinary lock
wait, which a signal interrupts at once; the abandoned call ends on its own (a daemon thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import TypeVar

T = TypeVar("T")


class StillRunning(Exception):
    """`bounded_call`'s call had not returned when its time was up; it goes on in its daemon thread."""


def started(call: Callable[[], T], name: str) -> Future[T]:
    """`call()` running on a daemon thread of its own; its result or exception lands in the future."""
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(call())
        except BaseException as exc:  # handed to the waiting thread
            done.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done


def interruptible_call(call: Callable[[], T], *, name: str = "kafka-coop-wait") -> T:
    """`call()`'s result or exception; in the main thread its wait is interruptible (elsewhere it is
    called directly: only the main thread receives signals)."""
    if threading.current_thread() is not threading.main_thread():
        return call()
    return started(call, name).result()


def bounded_call(call: Callable[[], T], timeout_s: float, *, name: str) -> T:
    """`call()`'s result or exception if it returns within `timeout_s`; StillRunning otherwise (the
    call is abandoned to its daemon thread, which ends when it returns, if ever)."""
    done = started(call, name)
    wait([done], timeout_s)
    if not done.done():
        raise StillRunning(name)
    return done.result()
