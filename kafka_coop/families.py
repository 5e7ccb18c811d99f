"""Client families as data (migrations/families/families.yaml): what each can do, and how it shows.

A real group mixes client libraries whose capabilities differ exactly where a plan decides: the
assignors each ships, whether it rebalances cooperatively, what it does with a mixed eager+cooperative
list (the KIP-429 two-bounce), KIP-848, static membership, leaving on close. Those facts live in one
data file, each with its source, so inference and the planner read them instead of branching per
family. Pure: pydantic and YAML only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kafka_coop._vocab import ClassicProtocol

MixedList = Literal["refused", "common", "selected", "n/a"]
UserData = Literal["null", "empty", "bytes"]
Rack = Literal["absent", "null", "empty"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VersionRange(_Frozen):
    min: str
    below: str

    def contains(self, version: str) -> bool:
        v = version_tuple(version)
        return v is not None and version_tuple(self.min) <= v < (version_tuple(self.below) or ())  # type: ignore[operator]

    def __str__(self) -> str:
        return f">={self.min},<{self.below}"


class AssignorFact(_Frozen):
    protocol: ClassicProtocol
    name: str  # what the family calls it in its own config
    since: str | None = None  # None: every version in the family's range ships it


class Support(_Frozen):
    supported: bool
    since: str | None = None  # None (when supported): every version in the family's range has it
    source: str


RefusalAction = Literal["fatal", "retries"]


class Refusal(_Frozen):
    """What a KIP-848 member does when the broker refuses its join with GROUP_ID_NOT_FOUND (the group
    cannot be converted): `action` from `since` on (None: every version that speaks KIP-848), `before`
    for the versions before it."""

    action: RefusalAction
    since: str | None = None
    before: RefusalAction | None = None
    source: str

    def at(self, version: str | None) -> RefusalAction | None:
        """The action at `version`; None when the version is unknown and the versions differ."""
        if self.since is None:
            return self.action
        if version is None or version_tuple(version) is None:
            return None
        return self.before if older_than(version, self.since) else self.action


def older_than(version: str | None, since: str | None) -> bool:
    """True only when both are known and `version` comes before `since` (unknown never refuses)."""
    if version is None or since is None:
        return False
    have, need = version_tuple(version), version_tuple(since)
    if have is None or need is None:
        return False
    width = max(len(have), len(need))  # 2.12 is 2.12.0
    return have + (0,) * (width - len(have)) < need + (0,) * (width - len(need))


class LeaveOnClose(_Frozen):
    dynamic: Literal["leave", "remain"]
    static: Literal["leave", "remain"]
    source: str


class Wire(_Frozen):
    client_id_default: str
    client_id_source: str
    client_id_version: str | None = None  # regex whose group 1 is the version a default client id carries
    subscription_version: dict[str, int]
    user_data: tuple[UserData, ...]
    rack: tuple[Rack, ...]

    @model_validator(mode="after")
    def _regex(self) -> Wire:
        re.compile(self.client_id_default)
        if self.client_id_version is not None and re.compile(self.client_id_version).groups != 1:
            raise ValueError(f"client_id_version {self.client_id_version!r} needs exactly one group")
        return self


class ConfigTerms(_Frozen):
    assignors: str
    assignor_separator: str = ","
    consumer: str | None = None  # None: the family has no KIP-848 setting
    static: str | None = None


class KnownDefect(_Frozen):
    """A defect of the library that a rollout runs into, so plans name it where it may apply."""

    versions: VersionRange  # the versions it was read or reproduced in, not a guess at the fix
    summary: str  # what happens to a member, in one clause
    remedy: str  # what a team does about it
    source: str
    consumer_protocol: bool = False  # only a member on (or moved to) the KIP-848 consumer protocol hits it
    fatal: bool = False  # the member stops: a plan blocks where a member's known version has it

    def applies_to(self, version: str | None) -> bool:
        """An unknown version may have it."""
        return version is None or self.versions.contains(version)


def cite(source: str) -> str:
    """A source after the clause it backs: ` (source)`, or `; source: ...` when the source has
    parentheses of its own, so a reason never nests them ("GA (CHANGELOG.md 2.12.0: ... (Preview ...))")."""
    return f" ({source})" if "(" not in source else f"; source: {source}"


class Family(_Frozen):
    family: str
    title: str
    versions: VersionRange
    tested_with: str
    member_kind: str
    assignors: dict[str, AssignorFact]
    assignors_source: str
    default_assignors: tuple[str, ...]
    mixed_list: MixedList
    mixed_list_source: str
    kip848: Support
    kip848_refused: Refusal | None = None  # None: the family does not speak KIP-848
    static_membership: Support
    leave_on_close: LeaveOnClose
    wire: Wire
    config: ConfigTerms
    known_defects: tuple[KnownDefect, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Family:
        unknown = [a for a in self.default_assignors if a not in self.assignors]
        if unknown:
            raise ValueError(f"{self.family}: default assignors {unknown} are not among its assignors")
        coop = any(a.protocol == "cooperative" for a in self.assignors.values())
        if coop == (self.mixed_list == "n/a"):
            raise ValueError(f"{self.family}: mixed_list n/a is for families without a cooperative assignor")
        if not self.versions.contains(self.tested_with):
            raise ValueError(f"{self.family}: tested_with {self.tested_with} is outside {self.versions}")
        if self.kip848.supported and self.kip848.since is None:
            raise ValueError(f"{self.family}: kip848 supported needs `since` (its first GA version)")
        if self.kip848.supported != (self.kip848_refused is not None):
            raise ValueError(f"{self.family}: kip848_refused says what a KIP-848 family does when refused")
        refused = self.kip848_refused
        if refused is not None and (refused.since is None) != (refused.before is None):
            raise ValueError(f"{self.family}: kip848_refused gives `before` exactly when it gives `since`")
        minimums = {
            "kip848": self.kip848.since,
            "kip848_refused": self.kip848_refused.since if self.kip848_refused else None,
            "static_membership": self.static_membership.since,
            **{f"assignor {name}": a.since for name, a in self.assignors.items()},
        }
        for defect in self.known_defects:
            if not self.versions.contains(defect.versions.min):
                raise ValueError(
                    f"{self.family}: known defect versions {defect.versions} start outside {self.versions}"
                )
        for what, since in minimums.items():
            # a minimum at or below the range's own is no minimum: say None, so it is never compared
            if since is not None and not (self.versions.contains(since) and since != self.versions.min):
                raise ValueError(f"{self.family}: {what} since {since} must lie inside {self.versions}")
        return self

    @property
    def cooperative(self) -> bool:
        return any(a.protocol == "cooperative" for a in self.assignors.values())

    def why_not(
        self,
        assignors: Iterable[str] = (),
        *,
        consumer: bool = False,
        static: bool = False,
        version: str | None = None,
    ) -> str:
        """'' if the family (at `version`, when known) can run this config, else one clause saying why
        not (for plans and gates). An unknown version is judged by the family's capabilities alone."""
        if consumer and not self.kip848.supported:
            return f"{self.family} does not speak the KIP-848 consumer protocol{cite(self.kip848.source)}"
        if consumer and older_than(version, self.kip848.since):
            return (
                f"{self.family} {version} is older than {self.kip848.since}, the first version with the "
                f"KIP-848 consumer protocol GA{cite(self.kip848.source)}"
            )
        if static and not self.static_membership.supported:
            return f"{self.family} has no static membership{cite(self.static_membership.source)}"
        if static and older_than(version, self.static_membership.since):
            return (
                f"{self.family} {version} is older than {self.static_membership.since}, the first version "
                f"with static membership{cite(self.static_membership.source)}"
            )
        names = tuple(assignors)
        missing = [a for a in names if a not in self.assignors]
        if missing:
            shipped = ", ".join(self.assignors)
            return f"{self.family} ships no {missing[0]} assignor (it ships {shipped})"
        too_new = [a for a in names if older_than(version, self.assignors[a].since)]
        if too_new:
            first = too_new[0]
            return (
                f"{self.family} {version} is older than {self.assignors[first].since}, the first version "
                f"that ships the {first} assignor{cite(self.assignors_source)}"
            )
        protocols = {self.assignors[a].protocol for a in names}
        if len(protocols) > 1 and self.mixed_list == "refused":
            source = self.mixed_list_source
            return f"{self.family} refuses a list mixing eager and cooperative assignors{cite(source)}"
        return ""

    def list_protocol(self, assignors: Iterable[str], selected: str) -> ClassicProtocol | None:
        """The protocol a member with this list runs when the group selected `selected` (None: refused)."""
        names = tuple(assignors)
        protocols = {self.assignors[a].protocol for a in names if a in self.assignors}
        if len(protocols) <= 1:
            return protocols.pop() if protocols else None
        if self.mixed_list == "selected" and selected in self.assignors:
            return self.assignors[selected].protocol
        return "eager" if self.mixed_list == "common" else None

    def render(
        self, assignors: Iterable[str] = (), *, consumer: bool = False, static: bool = False
    ) -> list[str]:
        """A config in the family's own terms (properties, options or code), one setting per line."""
        lines: list[str] = []
        if consumer:
            lines.append(self.config.consumer or f"({self.family}: no KIP-848 setting)")
        else:
            names = tuple(assignors)
            if names:
                listed = self.config.assignor_separator.join(self.assignors[a].name for a in names)
                lines.append(self.config.assignors.replace("{assignors}", listed))
        if static and self.config.static:
            lines.append(self.config.static.replace("{instance_id}", "<stable id per instance>"))
        return lines


class FamilyCatalog(_Frozen):
    families: tuple[Family, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> FamilyCatalog:
        names = [f.family for f in self.families]
        if len(names) != len(set(names)):
            raise ValueError(f"family names repeat: {names}")
        return self

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.family for f in self.families)

    def get(self, name: str) -> Family | None:
        return next((f for f in self.families if f.family == name), None)

    def __getitem__(self, name: str) -> Family:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def assignor_protocol(self, name: str) -> ClassicProtocol | None:
        """The protocol of an assignor name, if every family that ships that name agrees on it."""
        protocols = {f.assignors[name].protocol for f in self.families if name in f.assignors}
        return protocols.pop() if len(protocols) == 1 else None

    def known_sentence(self) -> str:
        return ", ".join(f"{f.family} {f.versions}" for f in self.families)

    def check(self, name: str, version: str | None = None) -> str:
        """'' if `name` (at `version`) is a family we know, else one sentence listing the known ones."""
        family = self.get(name)
        if family is None:
            return f"unknown client family {name!r}; known: {self.known_sentence()}"
        if version is not None and not family.versions.contains(version):
            known = self.known_sentence()
            return f"{name} {version} is outside the versions we know ({family.versions}); known: {known}"
        return ""


def version_tuple(version: str) -> tuple[int, ...] | None:
    match = re.match(r"^v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


class FamilyDataError(ValueError):
    """The bundled families file does not validate: a packaging or editing bug."""


Data = TypeVar("Data", bound=BaseModel)


def _parse(model: type[Data], text: str, source: str, what: str) -> Data:
    try:
        return model.model_validate(yaml.safe_load(text))
    except (yaml.YAMLError, ValidationError) as exc:
        raise FamilyDataError(f"{source} is not a valid {what}: {exc}") from exc


def _bundled(folder: str, name: str) -> tuple[str, str]:
    """A data file the package ships under migrations/, and the name errors give it."""
    path = resources.files("kafka_coop.migrations") / folder / name
    return path.read_text(encoding="utf-8"), f"migrations/{folder}/{name}"


def parse_catalog(text: str, source: str) -> FamilyCatalog:
    return _parse(FamilyCatalog, text, source, "families file")


@cache
def catalog() -> FamilyCatalog:
    """The bundled catalog (migrations/families/families.yaml), parsed once."""
    return parse_catalog(*_bundled("families", "families.yaml"))


# --- broker defects (migrations/brokers/brokers.yaml) -------------------------------------------
class BrokerDefect(_Frozen):
    """A defect of the Kafka broker that bears on a plan or a gate, so plans name it where it applies."""

    id: str = Field(pattern=r"^KAFKA-\d+$")
    versions: tuple[VersionRange, ...] = Field(min_length=1)  # the release lines it applies to
    fixed_in: tuple[str, ...] = ()  # the releases carrying the fix, as far as confirmed
    confirmed: bool  # False: its versions could not be confirmed (the source says why)
    summary: str
    remedy: str
    plan: str  # what the plan does about it
    gate: str  # what the gate does about it
    source: str
    migrations: tuple[str, ...] = ()  # the migrations (migrations/*.yaml names) it bears on; () = every one

    @model_validator(mode="after")
    def _fixes_outside(self) -> BrokerDefect:
        inside = [v for v in self.fixed_in if any(r.contains(v) for r in self.versions)]
        if inside:
            raise ValueError(f"{self.id}: fixed_in {inside} lies inside its affected versions")
        return self

    def applies_to(self, version: str | None) -> bool:
        """An unknown version may have it; "4.4+" (newer than the client library knows) is read as 4.4."""
        v = version_tuple((version or "").lstrip("<"))
        if v is None:
            return True
        text = ".".join(str(n) for n in v)
        return any(r.contains(text) for r in self.versions)

    def sentence(self) -> str:
        fixed = f"fixed in {', '.join(self.fixed_in)}" if self.fixed_in else "no fixed release confirmed"
        return (
            f"{self.id} (Kafka {', '.join(map(str, self.versions))}; {fixed}): {self.summary}; {self.remedy}"
        )


class BrokerDefectCatalog(_Frozen):
    defects: tuple[BrokerDefect, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> BrokerDefectCatalog:
        ids = [d.id for d in self.defects]
        if len(ids) != len(set(ids)):
            raise ValueError(f"broker defect ids repeat: {ids}")
        return self

    def affecting(self, version: str | None, migration: str = "") -> tuple[BrokerDefect, ...]:
        """The confirmed defects of `version` (unknown: may have them) that bear on `migration`; an
        unconfirmed one is left to the gate, so a plan never warns of what no source backs."""
        return tuple(
            d
            for d in self.defects
            if d.confirmed and d.applies_to(version) and (not d.migrations or migration in d.migrations)
        )


def parse_broker_defects(text: str, source: str) -> BrokerDefectCatalog:
    return _parse(BrokerDefectCatalog, text, source, "broker defects file")


@cache
def broker_defects() -> BrokerDefectCatalog:
    """The bundled broker defects (migrations/brokers/brokers.yaml), parsed once."""
    return parse_broker_defects(*_bundled("brokers", "brokers.yaml"))


# --- recognising a family on the wire ----------------------------------------------------------------
class WireTraits(_Frozen):
    """What one member shows: its subscription's shape (None without one) and its client id."""

    subscription_version: int | None = None
    user_data: UserData | None = None
    rack: Rack | None = None
    selected_assignor: str | None = None
    client_id: str = ""


class Recognition(_Frozen):
    family: str | None  # None: cannot tell
    signal: str
    candidates: tuple[str, ...] = ()


def _wire_fits(family: Family, traits: WireTraits) -> bool:
    if traits.subscription_version is None:
        return True
    selected = traits.selected_assignor
    versions = family.wire.subscription_version
    if selected in versions:
        if versions[selected] != traits.subscription_version:
            return False
    elif traits.subscription_version not in set(versions.values()):
        return False
    return traits.user_data in family.wire.user_data and traits.rack in family.wire.rack


def recognise(traits: WireTraits, families: FamilyCatalog | None = None) -> Recognition:
    """The one family whose wire signature fits, else the one whose default client id matches among
    those that fit; several or none: no family (the candidates are named, never guessed between)."""
    cat = families or catalog()
    fits = [f for f in cat.families if _wire_fits(f, traits)]
    shape = (
        f"subscription v{traits.subscription_version}, userData {traits.user_data}, rack {traits.rack}"
        if traits.subscription_version is not None
        else "no subscription bytes"
    )
    by_id = [f for f in fits if re.search(f.wire.client_id_default, traits.client_id)]
    if traits.subscription_version is not None and len(fits) == 1:
        only = fits[0]
        return Recognition(family=only.family, signal=f"{shape}: only {only.family} sends this")
    if len(by_id) == 1:
        only = by_id[0]
        how = f"{shape} fits {', '.join(f.family for f in fits)}; " if len(fits) > 1 else f"{shape}; "
        return Recognition(family=only.family, signal=f"{how}default client id of {only.family}")
    names = tuple(f.family for f in fits)
    if not fits:
        return Recognition(family=None, signal=f"{shape}: no known family sends this")
    if traits.subscription_version is None:
        return Recognition(family=None, signal=f"{shape} and a client id that is no family's default")
    return Recognition(
        family=None,
        signal=f"{shape} fits {', '.join(names)}; the client id is set by the app",
        candidates=names,
    )
