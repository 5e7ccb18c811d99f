"""The subscription watch (kafka_coop/consumer/_subscription.py): when it asks, what it says, how often."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from kafka_coop.consumer import _subscription
from kafka_coop.consumer._subscription import MISSING, UNAUTHORIZED, SubscriptionWatch, warning_text


class Cluster:
    """What DescribeTopics answers, and which topics it was asked about."""

    def __init__(self, problems: dict[str, str]) -> None:
        self.problems = problems
        self.asked: list[list[str]] = []

    def describe(self, _admin: Any, topics: list[str]) -> dict[str, str]:
        self.asked.append(topics)
        return {t: p for t, p in self.problems.items() if t in topics}


def _watch(
    monkeypatch: pytest.MonkeyPatch, cluster: Cluster, topics: list[str], owned: list[tuple[str, int]]
) -> tuple[SubscriptionWatch, list[str]]:
    monkeypatch.setattr(_subscription, "describe_problems", cluster.describe)
    said: list[str] = []
    watch = SubscriptionWatch(
        topics,
        group="orders",
        admin=object,
        owned=lambda: owned,
        emit=said.append,
        log=logging.getLogger("test"),
    )
    return watch, said


def test_a_missing_topic_is_named_and_a_topic_the_member_owns_is_not_asked_about(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = Cluster({"my orders": MISSING})
    watch, _ = _watch(monkeypatch, cluster, ["payments", "my orders", "^regex.*"], [("payments", 0)])
    assert watch.check() == {"my orders": MISSING}
    assert cluster.asked == [["my orders"]]


def test_the_warning_repeats_at_the_low_rate_while_it_lasts_and_stops_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_subscription, "FIRST_CHECK_S", 0.01)
    monkeypatch.setattr(_subscription, "REPEAT_S", 0.05)
    monkeypatch.setattr(_subscription, "IDLE_CHECK_S", 60.0)
    cluster = Cluster({"orders-app": MISSING})
    watch, said = _watch(monkeypatch, cluster, ["orders-app"], [])
    three = threading.Event()
    emit = watch._emit
    watch._emit = lambda text: (emit(text), len(said) >= 3 and three.set())  # type: ignore[func-returns-value]
    watch.start()
    assert three.wait(5)
    cluster.problems = {}  # the topic was created
    count = len(said)
    threading.Event().wait(0.3)
    watch.close()
    assert len(said) <= count + 1
    assert said[0] == warning_text("orders-app", MISSING, "orders")


def test_an_unauthorized_topic_says_which_acl_to_grant() -> None:
    text = warning_text("orders", UNAUTHORIZED, "orders-app")
    assert "TOPIC_AUTHORIZATION_FAILED" in text and "grant DESCRIBE and READ" in text
