"""A steady background producer: the "continuous produce" every rollout test and benchmark runs under."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any


class SteadyProducer:
    """Produces `rate` records/s round-robin over the partitions of `topic` until stopped.

    It counts what the broker acknowledged per partition, so a test can check that every
    produced record was processed (0 lost) against the members' record logs.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        *,
        rate: float = 200.0,
        conf: Mapping[str, str] | None = None,
    ) -> None:
        """`conf`: connection/security settings (a secured cluster's client properties)."""
        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        settings = {**(conf or {}), "bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"}
        self._producer: Any = Producer(settings)
        self.acked: Counter[int] = Counter()
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="steady-producer", daemon=True)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked[msg.partition()] += 1
        else:
            self.failed += 1

    def _run(self) -> None:
        interval = 1.0 / self.rate
        n = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            partition = n % self.partitions
            self._producer.produce(
                self.topic, f"{n}".encode(), partition=partition, on_delivery=self._on_delivery
            )
            n += 1
            self._producer.poll(0)
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)

    def start(self) -> SteadyProducer:
        self._thread.start()
        return self

    def stop(self, flush_s: float = 30.0) -> int:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._producer is not None:
            self._producer.flush(flush_s)
            self._producer = None  # let librdkafka's threads go now, not whenever GC runs
        return sum(self.acked.values())

    def __enter__(self) -> SteadyProducer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
