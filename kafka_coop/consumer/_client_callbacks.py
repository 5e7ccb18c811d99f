"""The client callbacks every kafka-coop consumer gives librdkafka: its log, and its error callback.

Both run inside `poll`/`consume`/`close`, on the thread that called them (a pool worker under asyncio).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError

from kafka_coop.consumer._fatal import EVICTION_FACILITIES

# error_cb codes that mean "cannot reach or talk to the cluster"; librdkafka retries all of them.
# (_TRANSPORT alone is not one: an idle connection closed by the broker raises it on a healthy cluster.)
_UNREACHABLE = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE})
_REFUSED = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED})
# librdkafka log facilities of connection failures: summarized by ClientErrors in one sentence.
_CONNECTION_FACILITIES = frozenset({"FAIL", "ERROR", "CONNECT", "BROKERFAIL"})


class ClientLog:
    """The `logger` given to librdkafka: its log lines go to Python logging, fatal ones to `on_fatal`.

    confluent-kafka calls `log(level, "%s [%s] %s", facility, client, text)` from inside
    `poll`/`consume`. librdkafka logs every fatal error (facility FATAL, confluent-kafka always sets an
    error_cb): `on_fatal` records it, and the `poll`/`consume` that served the line raises it as a typed
    exception once it returns (nothing is raised through librdkafka).
    librdkafka's own evictions of this member (facility MAXPOLL, SESSTMOUT) go to `on_evicted`, which
    tells a later FENCED_INSTANCE_ID apart from a twin (see `fatal_error`).
    Connection failures (facility FAIL & co.) go to INFO: `ClientErrors` says, once and in a sentence,
    when no broker can be reached.
    """

    def __init__(
        self,
        logger: logging.Logger,
        on_fatal: Callable[[str], None] | None = None,
        on_evicted: Callable[[str], None] | None = None,
    ) -> None:
        self.logger = logger
        self.on_fatal = on_fatal
        self.on_evicted = on_evicted

    def log(self, level: int, fmt: str, *args: Any) -> None:
        facility = str(args[0]) if args else ""
        if facility == "FATAL" and self.on_fatal is not None:
            self.logger.log(level, fmt, *args)
            self.on_fatal(str(args[-1]) if args else fmt)
            return
        if facility in EVICTION_FACILITIES and self.on_evicted is not None:
            self.on_evicted(EVICTION_FACILITIES[facility])
        if facility in _CONNECTION_FACILITIES and level >= logging.WARNING:
            level = logging.INFO
        self.logger.log(level, fmt, *args)


class ClientErrors:
    """The `error_cb`: one sentence when the cluster cannot be reached (librdkafka keeps retrying), then
    the user's own `error_cb`, if any."""

    def __init__(
        self, logger: logging.Logger, bootstrap: str, user: Callable[[KafkaError], Any] | None
    ) -> None:
        self.logger = logger
        self.bootstrap = bootstrap
        self.user = user
        self.warned = False
        self.last_transport: str | None = None

    def __call__(self, err: KafkaError) -> None:
        code = err.code()
        if code == KafkaError._TRANSPORT:
            self.last_transport = err.str()  # the why, for the sentence when every broker is down
        if not self.warned and (code in _UNREACHABLE or code in _REFUSED):
            self.warned = True
            what = "refused this client's credentials" if code in _REFUSED else "cannot be reached"
            why = (
                self.last_transport
                if code == KafkaError._ALL_BROKERS_DOWN and self.last_transport
                else err.str()
            )
            self.logger.warning(
                "The Kafka cluster at %s %s (%s); the consumer keeps retrying.", self.bootstrap, what, why
            )
        if self.user is not None:
            self.user(err)

    def reached(self) -> None:
        """The cluster answered (an assignment arrived): warn again at the next outage."""
        self.warned = False
