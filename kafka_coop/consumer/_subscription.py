"""A subscription that can never be assigned says so: a `warning` log line, event and metric.

A subscribed topic that does not exist (a typo, a group id given as the topic) or that this principal
may not describe leaves the member at "owned 0" for good. librdkafka says it once, as an error event
from `poll` under the classic protocol, and not at all under KIP-848 (seen on the sandbox, Kafka 4.1,
librdkafka 2.16). So a watch thread asks the cluster about every subscribed topic the member owns no
partition of: `FIRST_CHECK_S` after `subscribe`, then every `REPEAT_S` while a topic is unassignable
(warning again each time) and every `IDLE_CHECK_S` otherwise. It asks with DescribeTopics, which never
creates a topic, on its own admin client, so it never waits behind the consumer's `poll`. The log line
comes from the watch thread; the event is handed to the polling thread (`emit`), as every event is.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kafka_coop.events import PartitionKey

FIRST_CHECK_S: Final = 2.0
REPEAT_S: Final = 30.0
IDLE_CHECK_S: Final = 120.0
ANSWER_TIMEOUT_S: Final = 10.0
MISSING: Final = "missing"
UNAUTHORIZED: Final = "unauthorized"


def warning_text(topic: str, problem: str, group: str) -> str:
    """One sentence: what is wrong and what to do."""
    if problem == UNAUTHORIZED:
        return (
            f"Subscribed topic {topic!r} is not authorized for this client (TOPIC_AUTHORIZATION_FAILED): "
            f"group {group!r} will be assigned none of its partitions; grant DESCRIBE and READ on it."
        )
    return (
        f"Subscribed topic {topic!r} does not exist: group {group!r} will be assigned none of its "
        "partitions until it is created; check the name (are the group id and the topic swapped?)."
    )


def literal_topics(topics: Iterable[str]) -> list[str]:
    """The names a check can ask about: a `^` pattern subscribes to whatever matches, maybe nothing."""
    return [t for t in topics if not t.startswith("^")]


class SubscriptionWatch:
    """The watch of one subscription; `close()` stops it (the consumer's close)."""

    def __init__(
        self,
        topics: list[str],
        *,
        group: str,
        admin: Callable[[], Any],
        owned: Callable[[], Iterable[PartitionKey]],
        emit: Callable[[str], None],
        log: logging.Logger,
    ) -> None:
        self.topics = literal_topics(topics)
        self._group = group
        self._admin_factory = admin
        self._admin: Any = None
        self._owned = owned
        self._emit = emit
        self._log = log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafka-coop-subscription", daemon=True)

    def start(self) -> None:
        if self.topics:
            self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        wait = FIRST_CHECK_S
        while not self._stop.wait(wait):
            try:
                problems = self.check()
            except Exception as exc:  # the cluster did not answer: try again later, say nothing
                self._log.debug("subscription check failed: %s", exc)
                problems = {}
            if self._stop.is_set():
                return
            for topic, problem in problems.items():
                text = warning_text(topic, problem, self._group)
                self._log.warning(text)
                self._emit(text)
            wait = REPEAT_S if problems else IDLE_CHECK_S

    def check(self) -> dict[str, str]:
        """topic -> MISSING or UNAUTHORIZED, for the subscribed topics this member owns nothing of."""
        held = {topic for topic, _ in self._owned()}
        asked = [t for t in self.topics if t not in held]
        if not asked:
            return {}
        if self._admin is None:
            self._admin = self._admin_factory()
        problems = describe_problems(self._admin, asked)
        if not problems:  # no client kept for the next check, minutes away
            self._admin = None
        return problems


def describe_problems(admin: Any, topics: list[str]) -> dict[str, str]:
    """DescribeTopics for `topics` on a confluent `AdminClient`: which are missing or unauthorized."""
    from confluent_kafka import KafkaError, KafkaException, TopicCollection

    codes: Mapping[int, str] = {
        KafkaError.UNKNOWN_TOPIC_OR_PART: MISSING,
        KafkaError.TOPIC_AUTHORIZATION_FAILED: UNAUTHORIZED,
    }
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=ANSWER_TIMEOUT_S)
    out: dict[str, str] = {}
    for topic, future in futures.items():
        try:
            future.result(timeout=ANSWER_TIMEOUT_S + 5)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() in codes:
                out[topic] = codes[err.code()]
    return out


def admin_client_for(rendered: Mapping[str, str]) -> Callable[[], Any]:
    """A factory of the watch's admin client: the consumer's connection settings, its log routing."""

    def make() -> Any:
        from confluent_kafka.admin import AdminClient

        from kafka_coop._vocab import connection_conf
        from kafka_coop.consumer._client_callbacks import ClientLog
        from kafka_coop.consumer._setup import LIBRDKAFKA_LOGGER

        client_log = ClientLog(logging.getLogger(LIBRDKAFKA_LOGGER))
        conf: dict[str, Any] = {**connection_conf(rendered), "logger": client_log}
        return AdminClient(conf)

    return make


def restart_watch(
    old: SubscriptionWatch | None,
    topics: list[str],
    *,
    rendered: Mapping[str, str],
    group: str,
    owned: Callable[[], Iterable[PartitionKey]],
    warn: Callable[[str], None],
    log: logging.Logger,
) -> SubscriptionWatch:
    """A new `subscribe` replaces the subscription, and so its watch."""
    if old is not None:
        old.close()
    watch = SubscriptionWatch(
        topics, group=group, admin=admin_client_for(rendered), owned=owned, emit=warn, log=log
    )
    watch.start()
    return watch
