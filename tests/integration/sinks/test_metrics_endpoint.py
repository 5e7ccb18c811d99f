"""`kafka-coop consume --metrics-port`: the real HTTP endpoint across a real rebalance on the sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prometheus_client.parser import text_string_to_metric_families

from kafka_coop.sandbox import free_port


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the endpoint, parsed by prometheus_client's own text parser."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@contextmanager
def _member(bootstrap: str, group: str, topic: str, *extra: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_coop.cli",
            "consume",
            group,
            topic,
            "--bootstrap-server",
            bootstrap,
            "--rebalance",
            "cooperative-sticky",
            "--no-manifests",
            "--quiet",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_metrics_endpoint_shows_a_real_cooperative_rebalance(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    topic, group = topic_factory(4), unique("metrics")
    port = free_port()
    labels = {"group": group, "protocol": "cooperative"}
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def scraped(check: Callable[[dict[tuple[str, tuple[tuple[str, str], ...]], float]], bool]) -> bool:
        try:
            seen.clear()
            seen.update(_scrape(port))
        except OSError:
            return False  # not listening yet
        return check(seen)

    with _member(bootstrap, group, topic, "--metrics-port", str(port), "--metrics-addr", "127.0.0.1"):
        _wait(
            lambda: scraped(lambda s: _value(s, "kafka_coop_owned_partitions", group=group) == 4), "4 owned"
        )
        assert _value(seen, "kafka_coop_partitions_assigned_total", **labels) == 4
        first_rebalance = _value(seen, "kafka_coop_last_rebalance_timestamp_seconds", group=group)
        assert abs(first_rebalance - time.time()) < 120

        with _member(bootstrap, group, topic):  # a second member joins: the first gives up half
            _wait(
                lambda: scraped(lambda s: _value(s, "kafka_coop_owned_partitions", group=group) == 2),
                "the first member to keep 2 of 4 partitions",
            )
            assert _value(seen, "kafka_coop_partitions_revoked_total", **labels) == 2
            assert _value(seen, "kafka_coop_partitions_lost_total", **labels) == 0
            assert _value(seen, "kafka_coop_rebalance_events_total", kind="revoked", **labels) >= 1
            revoked = {"kind": "revoked", **labels}
            assert _value(seen, "kafka_coop_rebalance_callback_duration_seconds_count", **revoked) >= 1
            assert _value(seen, "kafka_coop_commit_on_revoke_duration_seconds_count", **labels) >= 1
            assert _value(seen, "kafka_coop_last_rebalance_timestamp_seconds", group=group) > first_rebalance
            assert _value(seen, "kafka_coop_fatal_errors_total", group=group) == 0


def test_a_fenced_static_member_counts_one_fatal_error_and_drops_its_partitions(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    from confluent_kafka import Consumer
    from prometheus_client import CollectorRegistry

    from kafka_coop.consumer import CoopConsumer
    from kafka_coop.errors import ConsumerFailed
    from kafka_coop.sinks import RebalanceMetrics

    topic, group = topic_factory(2), unique("fenced")
    registry = CollectorRegistry()
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": "svc-0"}
    member = CoopConsumer(
        {**conf, "partition.assignment.strategy": "cooperative-sticky"},
        events=RebalanceMetrics(registry).sink(),
    )
    member.subscribe([topic])
    _wait(lambda: member.poll(0.1) is None and len(member.owned) == 2, "the member owns both partitions")
    duplicate = Consumer({**conf, "partition.assignment.strategy": "cooperative-sticky"})
    duplicate.subscribe([topic])
    failed: list[ConsumerFailed] = []

    def fenced() -> bool:
        duplicate.poll(0.1)
        try:
            member.poll(0.1)
        except ConsumerFailed as exc:
            failed.append(exc)
        return bool(failed)

    try:
        _wait(fenced, "the broker to fence the first member")
    finally:
        duplicate.close()
        member.close()
    assert registry.get_sample_value("kafka_coop_fatal_errors_total", {"group": group}) == 1
    assert registry.get_sample_value("kafka_coop_owned_partitions", {"group": group}) == 0


def test_the_same_sink_counts_an_asyncio_consumers_rebalances(
    bootstrap: str, topic_factory: Callable[[int], str], unique: Callable[[str], str]
) -> None:
    import asyncio

    from prometheus_client import CollectorRegistry

    from kafka_coop import CoopAIOConsumer
    from kafka_coop.sinks import RebalanceMetrics

    topic, group = topic_factory(3), unique("aio-metrics")
    registry = CollectorRegistry()
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "partition.assignment.strategy": "cooperative-sticky",
    }

    async def consume_until_assigned() -> None:
        async with CoopAIOConsumer(conf, events=RebalanceMetrics(registry).sink()) as consumer:
            await consumer.subscribe([topic])
            deadline = time.monotonic() + 60
            while len(consumer.owned) < 3 and time.monotonic() < deadline:
                await consumer.consume(num_messages=10, timeout=0.2)
            assert len(consumer.owned) == 3
            assert registry.get_sample_value("kafka_coop_owned_partitions", {"group": group}) == 3

    asyncio.run(consume_until_assigned())
    labels = {"group": group, "protocol": "cooperative"}
    assert registry.get_sample_value("kafka_coop_partitions_assigned_total", labels) == 3
    assert registry.get_sample_value("kafka_coop_partitions_revoked_total", labels) == 3, "close revokes"
    assert registry.get_sample_value("kafka_coop_owned_partitions", {"group": group}) == 0
