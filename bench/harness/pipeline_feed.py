"""Feeding the live pipeline's benchmarks: generated fleets as the sink writes them, a backlog or a
paced live stream, and a watcher of what the pipeline's output makes visible, when."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    """(key, value) records, keyed as `KafkaTopicSink` keys them (group/member)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000, "compression.type": "lz4"}
    )
    for key, value in records:
        send(producer, topic, key, value, 0.05)
    if producer.flush(300) != 0:
        raise RuntimeError("the producer could not deliver every event")


def sink_key(event: dict[str, Any]) -> bytes:
    """The key `KafkaTopicSink` gives an event: a member's events stay in order in one partition."""
    return f"{event['group']}/{event.get('instance_id') or event['member_id']}".encode()


def fleet_records(params: dict[str, Any]) -> list[tuple[bytes, bytes]]:
    """Independent generated fleets side by side, as (key, value) records."""
    from kafka_coop.analytics import event_line, generate_events

    n, fleets = int(params["events"]), int(params["fleets"])
    events = sorted(
        (
            e
            for f in range(fleets)
            for e in generate_events(
                n // fleets,
                members=int(params["members"]),
                partitions=int(params["partitions"]),
                seed=int(params["seed"]) + f,
                prefix=f"f{f}-",
            )
        ),
        key=lambda e: int(e["ts_ms"]),
    )  # the fleets run side by side: in the topic as they happened, not one fleet after another
    return [(sink_key(e), event_line(e).rstrip("\n").encode()) for e in events]


def timeline(params: dict[str, Any]) -> list[dict[str, Any]]:
    """`rate` x `seconds` events of the fleets, in time order (generated before the clock starts)."""
    n = int(params["rate"]) * int(params["seconds"])
    return sorted(
        (json.loads(value) for _, value in fleet_records({**params, "events": n})),
        key=lambda e: int(e["ts_ms"]),
    )


def restamped(
    events: list[dict[str, Any]], rate: int, start_ms: int
) -> tuple[list[tuple[bytes, bytes]], list[tuple[str, int]]]:
    """The events re-stamped `1/rate` apart from `start_ms` (order kept); (group, ts) of each."""
    lines, keys = [], []
    for i, event in enumerate(events):
        ts = start_ms + i * 1000 // rate
        event["ts_ms"] = ts
        lines.append((sink_key(event), json.dumps(event, separators=(",", ":")).encode()))
        keys.append((str(event["group"]), ts))
    return lines, keys


def produce_paced(
    bootstrap: str, topic: str, lines: list[tuple[bytes, bytes]], keys: list[tuple[str, int]]
) -> list[float]:
    """Send each line when its stamp is due; returns each 1000th send's lag behind its stamp (ms)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    lags = []
    for i, (key, line) in enumerate(lines):
        due = keys[i][1] / 1000
        wait = due - time.time()
        if wait > 0:
            time.sleep(wait)
        send(producer, topic, key, line, 0.01)
        if i % 1000 == 0:
            producer.poll(0)
            lags.append(time.time() * 1000 - keys[i][1])
    producer.flush(60)
    return lags


class Watcher(threading.Thread):
    """Polls the sink's log; for each group, when (wall ms) its figures first counted up to which ts."""

    def __init__(self, out: Path) -> None:
        super().__init__(daemon=True)
        self.out = out
        self.seen_files: set[str] = set()
        self.reach: dict[str, list[tuple[float, int]]] = {}  # group -> [(wall ms, ts counted up to)]
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.poll()
            time.sleep(0.2)

    def poll(self) -> None:
        import pyarrow.parquet as pq

        log = self.out / "_spark_metadata"
        if not log.is_dir():
            return
        now = time.time() * 1000
        paths = []
        for entry in sorted(log.iterdir()):
            if entry.name.startswith("."):
                continue
            for line in entry.read_text(encoding="utf-8").splitlines()[1:]:
                path = json.loads(line)["path"]
                if path not in self.seen_files:
                    self.seen_files.add(path)
                    paths.append(path.removeprefix("file://"))
        for path in paths:
            table = pq.read_table(path, columns=["kind", "window_end", "last_ts"])
            group = next((p.split("=", 1)[1] for p in Path(path).parts if p.startswith("group=")), None)
            if group is None:
                continue
            best = -1
            for kind, end, last in zip(
                table["kind"].to_pylist(),
                table["window_end"].to_pylist(),
                table["last_ts"].to_pylist(),
                strict=True,
            ):
                if kind == "window_open" and last is not None:
                    best = max(best, int(last))
                elif kind == "window" and end is not None:
                    best = max(best, int(end) - 1)
            if best >= 0:
                self.reach.setdefault(group, []).append((now, best))

    def visible_at(self, group: str, ts: int) -> float | None:
        for wall, reach in self.reach.get(group, []):
            if reach >= ts:
                return wall
        return None


def send(producer: Any, topic: str, key: bytes, value: bytes, backoff_s: float) -> None:
    """Produce one record, serving deliveries while librdkafka's queue is full."""
    while True:
        try:
            producer.produce(topic, value, key)
            return
        except BufferError:
            producer.poll(backoff_s)
