"""The domain's words, defined once: protocols, client families, member types, assignors, config keys.

Every layer (settings, events, manifests, inspection, rollout, the CLI, bench) speaks these words, and
when each wrote its own copy they drifted apart. This module depends on nothing but `typing`, so any
module, pure or shell, can import it without pulling anything in. Facts behind the values are in
docs/protocols.md.

Naming: the rebalance-protocol type is `RebalanceProtocol`, never `Protocol`, which would shadow
`typing.Protocol`. A fact read off a live group may be `unknown`; the `Seen*` types add that value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Literal, TypeAlias

# --- protocols --------------------------------------------------------------------------------------
RebalanceProtocol: TypeAlias = Literal["eager", "cooperative", "consumer"]
"""How a member gives up partitions: all at once (eager), incrementally (cooperative, KIP-429), or as the
broker tells it (consumer, KIP-848)."""
ClassicProtocol: TypeAlias = Literal["eager", "cooperative"]
"""The protocols of the classic group protocol, decided by the client's assignors."""
GroupProtocol: TypeAlias = Literal["classic", "consumer"]
"""`group.protocol`: which group protocol a member speaks. It is also the member type (and the group
type) the broker reports: one word for the three."""
ConfiguredFamily: TypeAlias = Literal["librdkafka", "java"]
"""The client families a migration path has config for (a subset of `KnownFamily`)."""

Unknown: TypeAlias = Literal["unknown"]
SeenProtocol: TypeAlias = Literal["eager", "cooperative", "consumer", "unknown"]
SeenGroupProtocol: TypeAlias = Literal["classic", "consumer", "unknown"]
"""A member's or a group's type as the broker reports it, `unknown` where it reports none."""
KnownFamily: TypeAlias = Literal[
    "java", "librdkafka", "kafka-python", "aiokafka", "franz-go", "sarama", "kafkajs"
]
"""Every client family migrations/families/families.yaml describes (a test keeps the two equal)."""
SeenFamily: TypeAlias = Literal[
    "java", "librdkafka", "kafka-python", "aiokafka", "franz-go", "sarama", "kafkajs", "unknown"
]

RebalanceMode: TypeAlias = Literal["eager-range", "eager-roundrobin", "cooperative-sticky", "consumer"]
"""kafka-coop's one-word choice of protocol and assignor (`ConsumerSettings.rebalance`, `--rebalance`)."""
REBALANCE_MODES: Final[tuple[RebalanceMode, ...]] = (
    "eager-range",
    "eager-roundrobin",
    "cooperative-sticky",
    "consumer",
)
RemoteAssignor: TypeAlias = Literal["uniform", "range"]
"""The broker-side assignors of KIP-848 (`group.remote.assignor`)."""

Direction: TypeAlias = Literal["upgrade", "downgrade"]
"""Which way a migration goes: towards the consumer protocol (upgrade) or back (downgrade)."""

# --- assignors --------------------------------------------------------------------------------------
ASSIGNOR_PROTOCOL: Final[Mapping[str, ClassicProtocol]] = {
    "range": "eager",
    "roundrobin": "eager",
    "sticky": "eager",  # Java only
    "cooperative-sticky": "cooperative",
}
"""The protocol each classic assignor supports (its short name, as librdkafka and Java's docs use)."""
COOPERATIVE_ASSIGNORS: Final = frozenset(a for a, p in ASSIGNOR_PROTOCOL.items() if p == "cooperative")
EAGER_ONLY_ASSIGNORS: Final = frozenset(a for a, p in ASSIGNOR_PROTOCOL.items() if p == "eager")
LIBRDKAFKA_ASSIGNORS: Final = frozenset({"range", "roundrobin", "cooperative-sticky"})
"""librdkafka's classic assignors (src/rdkafka_assignor.c); names are case-sensitive there."""
LIBRDKAFKA_DEFAULT_ASSIGNORS: Final[tuple[str, ...]] = ("range", "roundrobin")
JAVA_ASSIGNOR_CLASSES: Final[Mapping[str, str]] = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}

ASSIGNOR_REBALANCE_MODE: Final[Mapping[str, RebalanceMode]] = {
    "range": "eager-range",
    "roundrobin": "eager-roundrobin",
    "cooperative-sticky": "cooperative-sticky",
}
REBALANCE_MODE_ASSIGNOR: Final[Mapping[str, str]] = {v: k for k, v in ASSIGNOR_REBALANCE_MODE.items()}
REBALANCE_MODE_PROTOCOL: Final[Mapping[str, RebalanceProtocol]] = {
    "eager-range": "eager",
    "eager-roundrobin": "eager",
    "cooperative-sticky": "cooperative",
    "consumer": "consumer",
}


def protocol_of(assignors: Iterable[str]) -> ClassicProtocol:
    """The protocol a classic member runs with this list: COOPERATIVE only if every assignor is.

    Java picks the protocol all its assignors share; an empty list runs librdkafka's eager default.
    """
    names = tuple(assignors)
    return "cooperative" if names and all(a in COOPERATIVE_ASSIGNORS for a in names) else "eager"


def mixes_protocols(assignors: Iterable[str]) -> bool:
    """True for a list librdkafka refuses at consumer creation (eager and cooperative assignors)."""
    return len({a in COOPERATIVE_ASSIGNORS for a in assignors}) > 1


# --- config keys ------------------------------------------------------------------------------------
CLASSIC_ONLY_KEYS: Final[tuple[str, ...]] = (
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "group.protocol.type",
)
"""librdkafka refuses these with group.protocol=consumer: the broker owns assignment and session there."""

CONSUMER_ONLY_PREFIXES: Final[tuple[str, ...]] = (
    "group.",
    "partition.assignment",
    "session.timeout",
    "heartbeat.",
    "enable.auto",
    "auto.",
    "max.poll",
    "fetch.",
    "isolation.",
    "check.crcs",
    "queued.",
    "enable.partition.eof",
    "consume.",
    "coordinator.",
)
"""Key prefixes that only a consumer understands; a producer or admin client sharing the consumer's
connection and security settings gets everything else."""


def is_consumer_only(key: str) -> bool:
    return key.startswith(CONSUMER_ONLY_PREFIXES)


def connection_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """Connection and security settings only, for a producer or admin client on the same cluster."""
    return {k: v for k, v in conf.items() if not is_consumer_only(k)}


# --- counting ---------------------------------------------------------------------------------------
def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 member`, `2 members`: every count a person reads is written this way, never `member(s)`."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"


def verb(count: int, one: str, many: str) -> str:
    """The verb that agrees with `count`: verb(1, "has", "have") == "has"."""
    return one if count == 1 else many
