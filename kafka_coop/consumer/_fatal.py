"""Fatal-error classification: which librdkafka errors end the consumer, and the sentence that says why.

FENCED_INSTANCE_ID has two causes: a second process with the same `group.instance.id`, or this member
itself, evicted by librdkafka (its `max.poll.interval.ms` or session ran out: librdkafka logs MAXPOLL /
SESSTMOUT, resets the member id and rejoins; a request still carrying the old identity is fenced). The
message names the cause kafka-coop saw, and never blames a twin it has no sign of.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException

from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.consumer._refusal import Refusal
from kafka_coop.errors import ConsumerFailed, InstanceIdConflict

# Commit errors meaning "this member's claim on the partitions is gone": nothing was committed, the next
# owner resumes at the last commit, so the partitions are reported lost.
EVICTED = frozenset(
    {KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION, KafkaError.FENCED_MEMBER_EPOCH}
)
# librdkafka makes these fatal (the instance id belongs to someone else); any error flagged fatal is too.
FATAL_CODES = frozenset({KafkaError.FENCED_INSTANCE_ID, KafkaError.UNRELEASED_INSTANCE_ID, KafkaError._FATAL})
# librdkafka log facilities of its own eviction of this member (rdkafka_cgrp.c), and the setting that ran out.
EVICTION_FACILITIES = {"MAXPOLL": "max.poll.interval.ms", "SESSTMOUT": "session.timeout.ms"}
# How long after such an eviction a FENCED_INSTANCE_ID is put down to it (librdkafka's default poll limit).
EVICTION_WINDOW_S = 300.0


# --- errors --------------------------------------------------------------------------------------
def error_code(exc: BaseException) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return int(exc.args[0].code())
    return None


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        return f"{err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"


def is_fatal(exc: BaseException) -> bool:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        return bool(err.fatal()) or err.code() in FATAL_CODES
    return False


@dataclass(frozen=True, slots=True)
class Eviction:
    """librdkafka evicted this member itself: its poll limit or its session ran out (it logged why)."""

    limit: str  # the setting that ran out: "max.poll.interval.ms" or "session.timeout.ms"
    at: float  # the consumer's clock when the line was seen


def fatal_error(
    code: int,
    detail: str,
    *,
    group: str,
    instance_id: str | None,
    protocol: RebalanceProtocol,
    evicted: Eviction | None = None,
    now: float = 0.0,
    refusal: Refusal | None = None,
) -> ConsumerFailed:
    """The typed exception for a fatal client error: what happened, in one sentence, and the fix.

    FENCED_INSTANCE_ID means "a request carried a member id the broker no longer holds for this
    group.instance.id". A second process with the same id is one cause; the other is this member itself:
    when its `max.poll.interval.ms` or session ran out (e.g. a synchronous commit waiting for a moving
    coordinator), librdkafka reset its member id and rejoined, and a request still carrying the old identity
    is fenced. librdkafka logs the eviction first (MAXPOLL / SESSTMOUT), so with `evicted` (and `now` on the
    same clock) the message says so instead of blaming a twin; without it, it names both causes.

    GROUP_ID_NOT_FOUND to a consumer-protocol member is a refused online upgrade: `refusal` is the rule
    that refused it, read from the group and the broker's configs (`_refusal`); without it the sentence
    names all four.
    """
    name = KafkaError(code).name()
    who = f"group.instance.id {instance_id!r}" if instance_id else "this member's group.instance.id"
    if code == KafkaError.FENCED_INSTANCE_ID and evicted is not None:
        age = max(0.0, now - evicted.at)
        if evicted.limit == "max.poll.interval.ms":
            fix = (
                "keep the time between two polls, blocking calls included (a synchronous commit waits while "
                "the group coordinator moves), under max.poll.interval.ms, or raise it"
            )
        else:
            fix = (
                "the group coordinator did not answer for session.timeout.ms (e.g. while it moved); raise "
                "session.timeout.ms if such pauses are expected"
            )
        return ConsumerFailed(
            f"The broker fenced this member of group {group!r} ({name}) after this member's own "
            f"{evicted.limit} ran out {age:.0f} s earlier: librdkafka reset its member id to rejoin, so a "
            "request still carrying the old one (e.g. a synchronous commit) no longer matched the member the "
            f"broker holds for {who}; no other member uses the id.",
            code=name,
            hint=f"This consumer cannot continue; create a new one (committed offsets are intact). To avoid "
            f"it, {fix}.",
        )
    if code == KafkaError.FENCED_INSTANCE_ID:
        return InstanceIdConflict(
            f"The broker fenced this member of group {group!r} ({name}): another running member uses {who}, "
            "or this member was evicted (its session.timeout.ms or max.poll.interval.ms ran out) and a "
            "request still carried its old member id.",
            code=name,
            hint="Give every running member its own group.instance.id (e.g. the pod name) and stop any "
            "duplicate; if there is none, keep the time between polls, blocking commits included, under "
            "max.poll.interval.ms. This consumer cannot continue; create a new one.",
        )
    if code == KafkaError.UNRELEASED_INSTANCE_ID:
        return InstanceIdConflict(
            f"Another member of group {group!r} still holds {who}, so under KIP-848 the broker refused "
            f"this one ({name}).",
            code=name,
            hint="Stop the other member or give this one its own group.instance.id; if this process replaces "
            "one that was killed, the old session holds the id until the broker's "
            "group.consumer.session.timeout.ms (45 s by default) runs out. This consumer cannot continue; "
            "create a new one once the id is free.",
        )
    if code == KafkaError.GROUP_ID_NOT_FOUND and protocol == "consumer" and refusal is not None:
        return ConsumerFailed(
            f"The broker refused this consumer-protocol member of group {group!r} ({name}): it will not "
            f"convert the classic group online because {refusal.rule}.",
            code=name,
            hint=f"To upgrade online, {refusal.remedy}. This consumer cannot continue; create a new one.",
        )
    if code == KafkaError.GROUP_ID_NOT_FOUND and protocol == "consumer":
        return ConsumerFailed(
            f"The broker refused this consumer-protocol member of group {group!r} ({name}) because it "
            f"will not convert the classic group online: {REFUSAL_RULES}.",
            code=name,
            hint=f"`kafka-coop upgrade-plan {group} --to consumer` names the rule that holds here, before "
            "any member is bounced; until it is cleared, run this member with group.protocol=classic. "
            "This consumer cannot continue; create a new one.",
        )
    return ConsumerFailed(
        f"The consumer of group {group!r} ({protocol}) stopped on a fatal error: {name}: {detail}",
        code=name,
        hint="This consumer cannot continue; create a new one.",
    )


# The broker's rules for refusing an online upgrade (GroupMetadataManager.validateOnlineUpgrade and
# ConsumerGroup.fromClassicGroup, Kafka 4.0-4.4): it answers the joining member GROUP_ID_NOT_FOUND and
# nothing more, and librdkafka passes on no broker message, so the sentence names them all.
REFUSAL_RULES = (
    "group.consumer.migration.policy forbids an upgrade, the group's protocol type is not 'consumer' "
    "(e.g. a Connect cluster), the group has more members than group.consumer.max.size, or a member's "
    "assignment carries custom assignor userData"
)


def fatal_code_from_text(text: str) -> int:
    """Which fatal error a librdkafka message names (its text is rd_kafka_err2str of the cause): from
    2.15 a ConsumerGroupHeartbeat answered GROUP_ID_NOT_FOUND is fatal, and says so in these words."""
    for code in (KafkaError.FENCED_INSTANCE_ID, KafkaError.UNRELEASED_INSTANCE_ID):
        if KafkaError(code).str() in text:
            return int(code)
    if "ConsumerGroupHeartbeat" in text and KafkaError(KafkaError.GROUP_ID_NOT_FOUND).str() in text:
        return int(KafkaError.GROUP_ID_NOT_FOUND)
    return int(KafkaError._FATAL)
