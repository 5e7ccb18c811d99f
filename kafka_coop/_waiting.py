"""A blocking client call the main thread can interrupt.

A call into librdkafka (or a py4j/JVM start) holds the main thread inside C until it returns, so
Ctrl-C waits for it: `list_topics(timeout=10)` against a silent address ends a command 10 s after
the key was pressed. Run on a thread of its own and waited for here, the wait is an ordinary lock
wait, which a signal interrupts at once; the abandoned call ends on its own (a daemon thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def interruptible_call(call: Callable[[], T], *, name: str = "kafka-coop-wait") -> T:
    """`call()`'s result or exception; in the main thread its wait is interruptible (elsewhere it is
    called directly: only the main thread receives signals)."""
    if threading.current_thread() is not threading.main_thread():
        return call()
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(call())
        except BaseException as exc:  # handed to the waiting thread
            done.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done.result()
