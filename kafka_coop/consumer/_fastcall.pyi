"""Types of the C extension (kafka_coop/consumer/_fastcall.c)."""

from collections.abc import Callable
from typing import Any

class CallState:
    held: object
    slow: bool
    tick: float
    def __init__(self) -> None: ...

class FastPoll:
    def __init__(
        self,
        inner: Callable[..., Any],
        state: CallState,
        slow: Callable[[Any, bool], Any],
        broken: Callable[[int], Any],
        hand_out: bool,
        gap: float,
        *,
        handed: Any = None,
        fold: Callable[[], Any] | None = None,
        fold_at: int = 0,
    ) -> None: ...
    def __call__(self, timeout: float = -1) -> Any: ...
