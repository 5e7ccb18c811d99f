"""Which static members to remove from a group, and when to refuse (pure).

KIP-345's admin action: a static member (one with `group.instance.id`) sends no LeaveGroup when it
closes, so the coordinator keeps it, and its partitions, until `session.timeout.ms` runs out. An
operator who knows the member is gone (a scale-down, a stop-all cutover) removes it at once with a
LeaveGroup naming its instance id. Removing a member that still runs would only make it rejoin, so it is
refused; kafka-coop members say they run through their manifest heartbeat.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from kafka_coop.errors import GateFailed, InvalidInput

# A running kafka-coop member republishes its manifest every manifest.DEFAULT_HEARTBEAT_S (10 s; 30 s
# before kafka-coop's liveness records); one younger than 75 s (two and a half of the older periods, so
# members of either version are read alike) is a member that still runs (or was killed moments ago).
RUNNING_WITHIN_S: Final = 75.0


class RemovalChoice(BaseModel):
    """The instance ids to send, and what a reader should know about the choice."""

    model_config = ConfigDict(frozen=True)

    group: str
    instance_ids: tuple[str, ...]
    notes: tuple[str, ...] = ()


def _listed(ids: Sequence[str]) -> str:
    return ", ".join(repr(i) for i in ids) if ids else "none"


def still_running(
    instance_ids: Sequence[str],
    manifest_age_s: Mapping[str, float],
    running_within_s: float = RUNNING_WITHIN_S,
) -> list[str]:
    """The members whose manifest is fresh: they have not closed (a close publishes a tombstone)."""
    return [i for i in instance_ids if i in manifest_age_s and manifest_age_s[i] <= running_within_s]


def refuse_unobservable(
    group: str,
    instance_ids: Sequence[str],
    manifest_age_s: Mapping[str, float] | None,
    closed: Collection[str] = (),
) -> None:
    """--wait-stopped watches manifests; a member that publishes none cannot be watched (exit 1).
    `closed`: members whose latest manifest record is the tombstone of their close."""
    unseen = [
        i for i in instance_ids if i not in closed and (manifest_age_s is None or i not in manifest_age_s)
    ]
    if unseen:
        raise GateFailed(
            f"Cannot see when {_listed(unseen)} of group {group!r} stop: they publish no manifest, so "
            "--wait-stopped has nothing to wait on.",
            hint="Run remove-members after they stopped, without --wait-stopped.",
        )


def choose_members(
    group: str,
    static_ids: Sequence[str],
    *,
    requested: Sequence[str] = (),
    all_static: bool = False,
    manifest_age_s: Mapping[str, float] | None = None,
    force: bool = False,
    running_within_s: float = RUNNING_WITHIN_S,
    closed: Collection[str] = (),
) -> RemovalChoice:
    """Validate a removal against the live group's static ids and the members' manifest ages.

    Raises InvalidInput (exit 2) for a request that names no member or a member the group does not
    have, GateFailed (exit 1) when a named member still runs (a fresh manifest) unless `force`.
    """
    if all_static == bool(requested):
        raise InvalidInput(
            "Name the members to remove with --instance-id ID (repeatable) or --all-static, not both.",
            hint="e.g. `kafka-coop remove-members GROUP --instance-id svc-2`.",
        )
    present = list(dict.fromkeys(static_ids))
    if all_static:
        chosen = tuple(present)
    else:
        unknown = [i for i in dict.fromkeys(requested) if i not in present]
        if unknown:
            raise InvalidInput(
                f"Group {group!r} has no static member with group.instance.id {_listed(unknown)} "
                f"(its static members: {_listed(present)}).",
                hint="`kafka-coop describe GROUP` lists the members and their instance ids.",
            )
        chosen = tuple(dict.fromkeys(requested))
    ages = manifest_age_s or {}
    running = still_running(chosen, ages, running_within_s)
    notes: list[str] = []
    if running and not force:
        newest = min(ages[i] for i in running)
        raise GateFailed(
            f"Static member(s) {_listed(running)} of group {group!r} still run (a manifest heartbeat "
            f"{newest:.0f} s old): removing a running member only makes it rejoin.",
            hint="Stop them first; --force removes them anyway (they rejoin as new members).",
        )
    if running:
        notes.append(f"removed although their manifests say they run: {_listed(running)} (--force)")
    unseen = [i for i in chosen if i not in ages and i not in closed]
    if unseen and manifest_age_s is not None:
        notes.append(f"no manifest for {_listed(unseen)}: that they stopped is taken on trust")
    return RemovalChoice(group=group, instance_ids=chosen, notes=tuple(notes))
