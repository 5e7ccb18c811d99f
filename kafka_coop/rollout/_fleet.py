"""What the planner plans for: a fleet description, from a live GroupSnapshot or from a file.

The planner must work before a group exists (a change ticket written ahead of a deploy) and on a live
group; both come down to the same record per member, inspection's MemberSnapshot: a fleet file's entry
fills it with its facts `declared` (signal `fleet file`), as its broker section fills BrokerFacts. A
member's assignor list is only *known* when it was declared (a manifest, a fleet file): the wire carries
the selected protocol only (docs/protocols.md), so an inferred list is "at least the selected one".
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kafka_coop._vocab import GroupProtocol, KnownFamily, SeenGroupProtocol, SeenProtocol, plural
from kafka_coop.errors import InvalidInput
from kafka_coop.families import KnownDefect, catalog, cite
from kafka_coop.inspection import BrokerFacts, Fact, GroupSnapshot, MemberSnapshot

T = TypeVar("T")


MigrationPolicy = Literal["bidirectional", "upgrade", "downgrade", "disabled"]
MIGRATION_POLICIES: tuple[MigrationPolicy, ...] = ("bidirectional", "upgrade", "downgrade", "disabled")


class _FileBroker(BaseModel):
    """The broker section as people write it in a fleet file; it fills a BrokerFacts, marked declared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str | None = None
    version_source: str = ""
    rebalance_protocols: tuple[str, ...] | None = None
    migration_policy: MigrationPolicy | None = None
    group_max_size: int | None = None
    group_consumer_max_size: int | None = None
    group_version: int | None = None  # the finalized group.version feature
    group_version_source: str = ""
    consumer_session_ms: int | None = None  # group.consumer.session.timeout.ms
    consumer_min_session_ms: int | None = None
    consumer_max_session_ms: int | None = None
    consumer_heartbeat_ms: int | None = None
    group_session_ms: int | None = None  # the group's own consumer.session.timeout.ms

    def facts(self) -> BrokerFacts:
        """The record inspection fills for a live broker, with every value the file gives `declared`."""
        level = None if self.group_version is None else str(self.group_version)
        return BrokerFacts(
            **self.model_dump(exclude=_FILE_ONLY),
            kafka_version=_declared(self.version, self.version_source),
            group_version=_declared(level, self.group_version_source),
        )


# the file's words for what BrokerFacts holds as Facts; every other key is a BrokerFacts field by name
_FILE_ONLY = {"version", "version_source", "group_version", "group_version_source"}


def _declared(value: str | None, signal: str) -> Fact[str]:
    if value is None:
        return Fact(value="unknown", source="unknown", signal=signal)
    return Fact(value=value, source="declared", signal=signal)


class FleetDescription(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    group: str
    source: Literal["live", "file"] = "file"
    group_type: SeenGroupProtocol = "classic"
    state: str | None = None
    selected_assignor: str | None = None
    members: tuple[MemberSnapshot, ...]
    broker: BrokerFacts = BrokerFacts()  # live: as inspection read it; a fleet file's: declared
    protocol_type: str | None = None  # a classic group's protocol type; None: not visible
    restart_s: float | None = None  # how long a member's restart takes: the longest a fleet file gives

    @property
    def broker_version(self) -> str | None:
        """The broker's Kafka version, None where neither the broker nor the file said."""
        fact = self.broker.kafka_version
        return fact.value if fact.source != "unknown" else None

    @property
    def size(self) -> int:
        return sum(m.count for m in self.members)

    def count_by(self, field: Literal["client_family", "rebalance_protocol", "member_type"]) -> Counter[str]:
        """Members per value of one of their facts (a fleet-file entry counts `count` times)."""
        counts: Counter[str] = Counter()
        for m in self.members:
            fact: Fact[str] = getattr(m, field)
            counts[str(fact.value)] += m.count
        return counts

    def families(self) -> Counter[str]:
        return self.count_by("client_family")

    def protocols(self) -> Counter[str]:
        return self.count_by("rebalance_protocol")


FLEET_FILE = "fleet file"  # the signal of every fact a fleet file declares


def declared_assignors(m: MemberSnapshot) -> tuple[str, ...] | None:
    """The member's assignor list where it is known (a manifest or a fleet file declared it); None: not
    visible (the wire shows the selected assignor only)."""
    return m.assignors.value if m.assignors.source == "declared" else None


def origin(fact: Fact[Any]) -> str:
    """Where a fact came from, for a reason that already states its value: `fleet file` for a fleet
    file's, else `<source>: <signal>` (the Fact's str() repeats the value, and read inside parentheses
    nests them: "1 (1 (broker: ...))")."""
    if fact.signal == FLEET_FILE:
        return FLEET_FILE
    return f"{fact.source}: {fact.signal}" if fact.signal else fact.source


def wire_assignors(m: MemberSnapshot, selected: str | None) -> tuple[str, ...] | None:
    """The assignor list of a classic member that declares none, when the broker's view settles it.

    Only the selected protocol's metadata is on the wire, but a member seen running cooperative whose
    family runs the protocol every listed assignor shares (Java), or refuses a mixed list (librdkafka,
    kafka-python: families.yaml `mixed_list`), lists only cooperative assignors; if its family ships
    one cooperative assignor and the group selected it, that one is the list. (An app's own cooperative
    assignor beside it is not visible: families.yaml lists the shipped ones.) None: not settled.
    """
    if m.assignors.source == "declared" or not selected:
        return None
    if m.member_type.value != "classic" or m.rebalance_protocol.value != "cooperative":
        return None
    family = catalog().get(m.client_family.value)
    if family is None or family.mixed_list not in ("refused", "common"):
        return None
    cooperative = {name for name, fact in family.assignors.items() if fact.protocol == "cooperative"}
    return (selected,) if cooperative == {selected} else None


def fleet_from_snapshot(snap: GroupSnapshot) -> FleetDescription:
    """A live group as the planner sees it: its members as inspection read them."""
    return FleetDescription(
        group=snap.group,
        source="live",
        group_type=snap.group_type,
        state=snap.state,
        selected_assignor=snap.selected_assignor or None,
        members=snap.members,
        broker=snap.broker,
        protocol_type=snap.protocol_type,
    )


def _defect_hits(
    fleet: FleetDescription, to_consumer: bool, *, known_only: bool = False
) -> dict[tuple[str, KnownDefect], list[MemberSnapshot]]:
    hit: dict[tuple[str, KnownDefect], list[MemberSnapshot]] = {}
    for member in fleet.members:
        family = member.client_family.value
        facts = catalog().get(family)
        version = member.client_version.value
        for defect in facts.known_defects if facts is not None else ():
            if defect.consumer_protocol and not (
                to_consumer or member.rebalance_protocol.value == "consumer"
            ):
                continue
            if known_only and version is None:
                continue
            if defect.applies_to(version):
                hit.setdefault((family, defect), []).append(member)
    return hit


def _defect_sentence(family: str, defect: KnownDefect, members: list[MemberSnapshot]) -> str:
    return (
        f"{family} (versions {defect.versions}; here {plural(sum(m.count for m in members), 'member')}: "
        f"{', '.join(m.name for m in members)}): {defect.summary}{cite(defect.source)}; {defect.remedy}"
    )


def known_defect_notes(fleet: FleetDescription, *, to_consumer: bool = False) -> list[str]:
    """One sentence per library defect (families.yaml `known_defects`) that may hit members of this
    fleet, naming them: those of an affected version, or of an unknown one (a consumer-protocol defect
    only for members on that protocol, or when the path moves them to it). The plan warns with it, and
    the gate gives it as the hint of a member count that falls short."""
    return [_defect_sentence(f, d, m) for (f, d), m in _defect_hits(fleet, to_consumer).items()]


def fatal_defect_sentences(fleet: FleetDescription, *, to_consumer: bool = False) -> list[str]:
    """The fatal defects (`fatal: true`) of members whose version is known to have them: plan blockers."""
    hits = _defect_hits(fleet, to_consumer, known_only=True)
    return [_defect_sentence(f, d, m) for (f, d), m in hits.items() if d.fatal]


def group_version_level(fact: Fact[str]) -> int | None:
    """The finalized group.version feature level, where the broker or a fleet file gave it."""
    return _level(fact.value) if fact.source in ("broker", "declared") else None


def group_version_origin(fact: Fact[str]) -> str:
    """Where the level came from: the broker (`broker: <signal>`), or a fleet file's own words."""
    if fact.source == "broker":
        return origin(fact)
    return "" if fact.source == "inferred" else fact.signal


def _level(value: str) -> int | None:
    return int(value) if value.isdigit() else None


class _FileMember(BaseModel):
    """A member entry as people write it in a fleet file; it fills a MemberSnapshot, marked declared."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    family: KnownFamily
    version: str | None = None  # the library's version, checked against families.yaml
    count: int = Field(default=1, ge=1)
    group_protocol: GroupProtocol = "classic"
    assignors: tuple[str, ...] | None = None
    static: bool = False
    assignment_user_data: bool | None = None
    pattern: str | None = None  # the regex the member subscribes with
    topics: tuple[str, ...] = ()  # the topics it consumes today (what the pattern must keep matching)
    restart_s: float | None = Field(default=None, ge=0)  # how long one restart takes

    @model_validator(mode="after")
    def _valid_list(self) -> _FileMember:
        if self.group_protocol == "consumer" and self.assignors:
            raise ValueError("a group_protocol consumer member takes no assignors")
        facts = catalog()[self.family]
        why = facts.why_not(
            self.assignors or (), consumer=self.group_protocol == "consumer", static=self.static
        )
        if why:
            raise ValueError(f"{why}; such a member cannot exist")
        return self


class _FleetFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    group: str
    selected_assignor: str | None = None
    protocol_type: str | None = None  # a classic group's protocol type (consumer unless it says)
    broker: _FileBroker = _FileBroker()
    members: list[_FileMember] = Field(min_length=1)


def _member_from_file(entry: _FileMember) -> MemberSnapshot:
    """The record inspection fills for a live member: what the file says `declared` (signal `fleet
    file`), the protocol inferred from its assignor list, nothing for what a file cannot know."""
    facts = catalog()[entry.family]
    protocol: Fact[SeenProtocol]
    if entry.group_protocol == "consumer":
        protocol = _file_fact("consumer")
    elif entry.assignors:
        protocols = {facts.assignors[a].protocol for a in entry.assignors}
        # one protocol, or a mixed list: Java's rule (common: eager); franz-go follows the selected one
        value: SeenProtocol = (
            protocols.pop()
            if len(protocols) == 1
            else "unknown"
            if facts.mixed_list == "selected"
            else "eager"
        )
        protocol = (
            Fact(value=value, source="inferred", signal="the fleet file's assignors")
            if value != "unknown"
            else Fact(value=value, source="unknown", signal="the fleet file's mixed list")
        )
    else:
        protocol = Fact(value="unknown", source="unknown", signal="the fleet file lists no assignors")
    return MemberSnapshot(
        member_id="",
        instance_id=entry.name if entry.static else None,
        client_id=entry.name,
        host="",
        assignment=(),
        member_type=_file_fact(entry.group_protocol),
        client_family=_file_fact(entry.family),
        rebalance_protocol=protocol,
        assignors=(
            _file_fact(entry.assignors)
            if entry.assignors is not None
            else Fact(value=(), source="unknown", signal="the fleet file lists no assignors")
        ),
        client_version=_file_fact(entry.version)
        if entry.version is not None
        else Fact(value=None, source="unknown"),
        assignment_user_data=entry.assignment_user_data,
        subscribed_regex=entry.pattern,
        topics=entry.topics,
        count=entry.count,
    )


def _file_fact(value: T) -> Fact[T]:
    return Fact(value=value, source="declared", signal=FLEET_FILE)


def _vote(members: list[MemberSnapshot]) -> str | None:
    """The classic coordinator's choice: the first assignor (in the first member's order) all support."""
    lists = [declared_assignors(m) for m in members if m.member_type.value == "classic"]
    if not lists or any(not a for a in lists):
        return None
    common = set.intersection(*(set(a) for a in lists if a))
    first = lists[0] or ()
    return next((a for a in first if a in common), None)


def parse_fleet(text: str, source: str) -> FleetDescription:
    """A fleet file (YAML or JSON): group, optional broker facts, members with counts."""
    try:
        data = yaml.safe_load(text) if not source.endswith(".json") else json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{source} is not valid YAML/JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{source} must hold one mapping (a fleet), not {type(data).__name__}.")
    for i, entry in enumerate(data.get("members") or []):
        if isinstance(entry, dict) and "family" in entry:
            version = entry.get("version")
            wrong = catalog().check(str(entry["family"]), None if version is None else str(version))
            if wrong:
                raise InvalidInput(f"{source}: member {i + 1}: {wrong}.")
    try:
        parsed = _FleetFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InvalidInput(
            f"{source}: field {where}: {first['msg']}.",
            hint=(
                "A fleet file is YAML: group, an optional broker (version, migration_policy, ...) and "
                "members, each with family and count (optional: name, version, group_protocol, "
                "assignors, static)."
            ),
        ) from None
    members = [_member_from_file(m) for m in parsed.members]
    consumer = any(m.member_type.value == "consumer" for m in members)
    restarts = [m.restart_s for m in parsed.members if m.restart_s is not None]
    return FleetDescription(
        group=parsed.group,
        source="file",
        group_type="consumer" if consumer else "classic",
        state="stable",
        selected_assignor=None if consumer else (parsed.selected_assignor or _vote(members)),
        members=tuple(members),
        broker=parsed.broker.facts(),
        protocol_type=parsed.protocol_type or "consumer",
        restart_s=max(restarts) if restarts else None,
    )


def load_fleet(path: Path) -> FleetDescription:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"Fleet file {str(path)!r} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Fleet file {str(path)!r} cannot be read: {exc}.") from None
    return parse_fleet(text, str(path))
