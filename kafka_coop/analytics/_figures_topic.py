"""`pipeline run --figures-topic TOPIC`: the current figures on a compacted Kafka topic.

After each committed micro-batch the driver reads the Parquet files the sink just committed and sends,
for every figure that changed, one record keyed so that log compaction keeps the latest: key
`["GROUP"]` for a group's latest window, `["GROUP", "TOPIC", PARTITION]` for a partition's state (owner,
unowned since, last hand-over). A consumer that reads the topic from the start and keeps the last value
per key has the Parquet output's current state. Records are sent after the batch committed, so they
are at least once: a restart reads every committed file again and sends the current state anew (the
same values under the same keys, which compaction folds away).
docs/pipeline.md ("A compacted topic of current figures") is the user's page.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from kafka_coop.analytics._figures import committed_files, read_pipeline_rows
from kafka_coop.analytics._stream import KIND_FIELDS
from kafka_coop.errors import ClusterUnavailable, InvalidInput

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

COMPACTED: Final = {"cleanup.policy": "compact"}
FLUSH_S: Final = 30.0
GROUP_FIELDS: Final = KIND_FIELDS["window"]
PARTITION_FIELDS: Final = KIND_FIELDS["partition"]


# --- pure: rows to keyed records --------------------------------------------------------------------
def group_record(row: Mapping[str, Any]) -> tuple[bytes, bytes]:
    value = {"kind": "group", "group": row["group"], **{f: row.get(f) for f in GROUP_FIELDS}}
    value["window_start"] = value.pop("ts")
    return _json([row["group"]]), _json(value)


def partition_record(row: Mapping[str, Any]) -> tuple[bytes, bytes]:
    value = {"kind": "partition", "group": row["group"], **{f: row.get(f) for f in PARTITION_FIELDS}}
    value["as_of"] = value.pop("ts")
    value["unowned_since"] = value.pop("since")
    return _json([row["group"], row["topic"], row["partition"]]), _json(value)


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


class CurrentFigures:
    """The latest window of each group and the latest state row of each partition, fed row by row."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Any]] = {}
        self.partitions: dict[tuple[str, str, int], dict[str, Any]] = {}

    def take(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            if row["kind"] == "window":
                known = self.groups.get(row["group"])
                if known is None or (row["window_end"], row["ts"]) >= (known["window_end"], known["ts"]):
                    self.groups[row["group"]] = dict(row)
            elif row["kind"] == "partition":
                key = (row["group"], row["topic"], row["partition"])
                known = self.partitions.get(key)
                if known is None or row["version"] >= known["version"]:
                    self.partitions[key] = dict(row)

    def records(self) -> dict[bytes, bytes]:
        return dict(
            [
                *(group_record(r) for r in self.groups.values()),
                *(partition_record(r) for r in self.partitions.values()),
            ]
        )


# --- the shell: the topic and the producer ------------------------------------------------------------
def prepare_figures_topic(topic: str, events_topic: str, bootstrap: str, conf: Mapping[str, str]) -> None:
    """Create `topic` compacted if it is missing; refuse one that exists without compaction."""
    from kafka_coop.admin import ClusterAdmin

    if topic == events_topic:
        raise InvalidInput(
            f"--figures-topic {topic!r} is the events topic.", hint="Give the figures a topic of their own."
        )
    admin = ClusterAdmin(bootstrap, conf)
    config = admin.topic_config(topic)
    if config is None:
        admin.ensure_topic(topic, 1, config=COMPACTED)
        return
    policy = config.get("cleanup.policy", "delete")
    if "compact" not in policy.split(","):
        raise InvalidInput(
            f"--figures-topic {topic} exists with cleanup.policy={policy}, so Kafka would not keep the "
            "latest figures of each key.",
            hint=f"Set cleanup.policy=compact on {topic}, or name a topic that does not exist yet.",
        )


class FiguresPublisher:
    """Sends the figures that changed since the last call, from the files committed since then."""

    def __init__(self, out: Path, topic: str, bootstrap: str, conf: Mapping[str, str]) -> None:
        from confluent_kafka import Producer

        self.out, self.topic, self.bootstrap = out, topic, bootstrap
        self._producer = Producer({**conf, "bootstrap.servers": bootstrap, "linger.ms": 20})
        self._read: set[Path] = set()
        self._current = CurrentFigures()
        self._sent: dict[bytes, bytes] = {}
        self._failed: list[str] = []

    def publish(self) -> int:
        """Read the newly committed files and send each figure that changed; returns how many."""
        new = [f for f in committed_files(self.out) if f not in self._read]
        if not new:
            return 0
        table: pa.Table = read_pipeline_rows(self.out, kinds=["window", "partition"], files=new)
        self._read.update(new)
        self._current.take(table.to_pylist())
        changed = {k: v for k, v in self._current.records().items() if self._sent.get(k) != v}
        for key, value in changed.items():
            self._producer.produce(self.topic, value, key, on_delivery=self._delivered)
        self.flush()
        self._sent.update(changed)
        return len(changed)

    def _delivered(self, err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            self._failed.append(err.str())  # the broker's words, not KafkaError's repr

    def flush(self) -> None:
        left = self._producer.flush(FLUSH_S)
        if left or self._failed:
            reason = self._failed[0] if self._failed else f"{left} record(s) not delivered in {FLUSH_S:.0f} s"
            raise ClusterUnavailable(
                f"Could not write the figures to {self.topic} on {self.bootstrap}: {reason}.",
                hint="The output and checkpoint are consistent: run the same command again to resume.",
            )
