"""What the Python test-bed members share with the Java one: command line, event and record lines.

These run in their own venv (kafka-python / aiokafka, not confluent-kafka), so they import nothing of
kafka_coop; the event lines follow the RebalanceEvent schema of kafka_coop/events.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Iterable

TP = tuple[str, int]


def fail(msg: str) -> None:
    sys.stderr.write(f"error: {msg}\n")
    sys.exit(2)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topics", required=True, type=lambda v: v.split(","))
    p.add_argument("--assignors", default=None, type=lambda v: [a for a in v.split(",") if a] or None)
    p.add_argument("--group-protocol", default="classic", choices=("classic", "consumer"))
    p.add_argument("--remote-assignor")
    p.add_argument("--instance-id")
    p.add_argument("--client-id")
    p.add_argument("--events", default="-")
    p.add_argument("--records")
    p.add_argument("--close", default="default", choices=("default", "leave", "remain"))
    p.add_argument("--process-ms", type=int, default=0)
    p.add_argument("--members", type=int, default=1)
    p.add_argument("--prop", action="append", default=[])
    args = p.parse_args(argv)
    if args.members != 1:
        fail("this member runs one consumer per process; use --members 1")
    props = {}
    for item in args.prop:
        key, eq, value = item.partition("=")
        if not eq or not key:
            fail(f"--prop expects key=value, got {item}")
        props[key] = value
    args.props = props
    return args


class Log:
    """Events and processed records of one member; tracks what it owns and processed (thread-safe)."""

    def __init__(self, args: argparse.Namespace, client_id: str) -> None:
        self.args = args
        self.client_id = client_id
        self.member_id = ""
        self._lock = threading.Lock()
        self._events = sys.stdout if args.events == "-" else open(args.events, "a")  # noqa: SIM115
        self._records = open(args.records, "a", buffering=1 << 16) if args.records else None  # noqa: SIM115
        self._seq = 0
        self.owned: set[TP] = set()
        self.processed: dict[TP, int] = {}

    def record(self, topic: str, partition: int, offset: int, produced_ms: int) -> None:
        if self.args.process_ms:
            time.sleep(self.args.process_ms / 1000)
        with self._lock:
            self.processed[(topic, partition)] = offset
            if self._records is not None:
                now_ms = time.time_ns() // 1_000_000
                self._records.write(f"{self.client_id} {topic} {partition} {offset} {produced_ms} {now_ms}\n")

    def flush(self) -> None:
        with self._lock:
            if self._records is not None:
                self._records.flush()

    def to_commit(self, only: Iterable[TP] | None = None) -> dict[TP, int]:
        with self._lock:
            keys = list(self.processed) if only is None else [tp for tp in only if tp in self.processed]
            return {tp: self.processed[tp] + 1 for tp in keys}

    def emit(
        self,
        kind: str,
        protocol: str,
        parts: Iterable[TP],
        started: float,
        committed: dict[TP, int] | None = None,
        error: str | None = None,
    ) -> None:
        parts = sorted(parts)
        with self._lock:
            for tp in parts:
                if kind == "assigned":
                    self.owned.add(tp)
                else:
                    self.owned.discard(tp)
                    self.processed.pop(tp, None)
            line = {
                "v": 1,
                "ts_ms": time.time_ns() // 1_000_000,
                "seq": self._seq,
                "group": self.args.group,
                "member_id": self.member_id,
                "instance_id": self.args.instance_id,
                "client_id": self.client_id,
                "protocol": protocol,
                "kind": kind,
                "partitions": [list(tp) for tp in parts],
                "owned": [list(tp) for tp in sorted(self.owned)],
                "callback_ms": round((time.perf_counter() - started) * 1000, 3),
                "committed": None
                if committed is None
                else [[t, p, o] for (t, p), o in sorted(committed.items())],
                "error": error,
            }
            self._seq += 1
            self._events.write(json.dumps(line) + "\n")
            self._events.flush()

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._records is not None:
                self._records.close()
            if self._events is not sys.stdout:
                self._events.close()
