"""Synthetic RebalanceEvent streams of any size, for tests and the benchmark: a seeded simulation of
groups that join, leave, die, lose and rebalance the way real fleets do (docs/design/analytics.md).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_coop.events import EVENT_VERSION, PartitionKey

DEFAULT_START_MS = 1_700_000_000_000
DEFAULT_MIX: Mapping[str, float] = {"eager": 1.0, "cooperative": 1.0, "consumer": 1.0}
ACTIONS = ("join", "leave", "kill", "lose", "rebalance")
ACTION_WEIGHTS = (3, 2, 1, 1, 3)
SHARD_PREFIX = "s{}-"


@dataclass
class _Member:
    name: str
    static: bool
    alive: bool = False
    seq: int = 0
    incarnation: int = 0
    owned: set[PartitionKey] = field(default_factory=set)

    @property
    def member_id(self) -> str:
        return f"{self.name}-{self.incarnation}"


@dataclass
class _Group:
    name: str
    topic: str
    protocol: str
    partitions: list[PartitionKey]
    members: list[_Member]

    def alive(self) -> list[_Member]:
        return [m for m in self.members if m.alive]


class _Sim:
    def __init__(self, groups: list[_Group], seed: int, start_ms: int) -> None:
        self.groups = groups
        self.rng = random.Random(seed)  # noqa: S311  # reproducible test data, not secrets
        self.now = start_ms
        self.out: list[dict[str, Any]] = []

    def event(self, group: _Group, member: _Member, kind: str, ts: int, parts: set[PartitionKey]) -> None:
        rng = self.rng
        if kind == "revoked":
            committed: list[list[Any]] | None = [[t, p, rng.randrange(1, 10**6)] for t, p in sorted(parts)]
        else:
            committed = None
        self.out.append(
            {
                "v": EVENT_VERSION,
                "ts_ms": ts,
                "seq": member.seq,
                "group": group.name,
                "member_id": member.member_id,
                "instance_id": member.name if member.static else None,
                "client_id": member.name,
                "protocol": group.protocol,
                "kind": kind,
                "partitions": [list(tp) for tp in sorted(parts)],
                "owned": [list(tp) for tp in sorted(member.owned)],
                "callback_ms": round(rng.uniform(0.05, 40.0), 3) if kind in ("assigned", "revoked") else 0.0,
                "committed": committed,
                "error": None,
            }
        )
        member.seq += 1

    def jitter(self, base: int, spread: int) -> int:
        return base + self.rng.randrange(0, spread)

    # --- one rebalance of a group: revokes, then assignments ---------------------------------------
    def rebalance(self, group: _Group, t0: int) -> int:
        alive = group.alive()
        if not alive:
            return t0
        rng = self.rng
        t_revoke = t0 + rng.randrange(0, 40)
        t_assign = t_revoke + rng.randrange(20, 400)
        if group.protocol == "eager":
            order = alive[:]
            rng.shuffle(order)
            target: dict[str, set[PartitionKey]] = {m.name: set() for m in order}
            for i, tp in enumerate(group.partitions):
                target[order[i % len(order)].name].add(tp)
            for m in alive:
                revoked = set(m.owned)
                m.owned = set()
                self.event(group, m, "revoked", self.jitter(t_revoke, 30), revoked)
            for m in alive:
                m.owned = set(target[m.name])
                self.event(group, m, "assigned", self.jitter(t_assign, 30), m.owned)
            return t_assign + 30
        target = self.sticky(group, alive)
        for m in alive:
            revoked = m.owned - target[m.name]
            if revoked:
                m.owned -= revoked
                self.event(group, m, "revoked", self.jitter(t_revoke, 30), revoked)
        for m in alive:
            added = target[m.name] - m.owned
            if added or group.protocol == "cooperative":
                m.owned |= added
                self.event(group, m, "assigned", self.jitter(t_assign, 30), added)
        return t_assign + 30

    def sticky(self, group: _Group, alive: list[_Member]) -> dict[str, set[PartitionKey]]:
        """Everyone keeps up to their fair share; the rest (orphans, excess) goes to the neediest."""
        n = len(alive)
        quota = -(-len(group.partitions) // n)
        target: dict[str, set[PartitionKey]] = {}
        claimed: set[PartitionKey] = set()
        for m in alive:
            keep = sorted(m.owned - claimed)
            self.rng.shuffle(keep)
            target[m.name] = set(keep[: max(0, quota - self.rng.randrange(0, 2))])
            claimed |= target[m.name]
        for tp in group.partitions:
            if tp not in claimed:
                neediest = min(alive, key=lambda m: (len(target[m.name]), m.name))
                target[neediest.name].add(tp)
        return target

    # --- rounds -------------------------------------------------------------------------------------
    def round(self) -> None:
        rng = self.rng
        group = rng.choice(self.groups)
        alive, stopped = group.alive(), [m for m in group.members if not m.alive]
        action = rng.choices(ACTIONS, ACTION_WEIGHTS)[0]
        if not alive:
            action = "join"
        elif action == "join" and not stopped:
            action = "rebalance"
        elif action in ("leave", "kill") and len(alive) == 1:
            action = "join" if stopped else "rebalance"
        t = self.now
        if action == "join":
            m = rng.choice(stopped)
            m.alive, m.incarnation, m.owned, m.seq = True, m.incarnation + 1, set(), 0
            self.event(group, m, "started", t, set())
            t = self.rebalance(group, t + rng.randrange(50, 3000))
        elif action == "leave":
            m = rng.choice(alive)
            if m.owned or group.protocol != "consumer":
                revoked = set(m.owned)
                m.owned = set()
                self.event(group, m, "revoked", t, revoked)
            m.alive = False
            self.event(group, m, "closed", t + rng.randrange(1, 30), set())
            t = self.rebalance(group, t + rng.randrange(30, 300))
        elif action == "kill":
            m = rng.choice(alive)
            m.alive, m.owned = False, set()  # no event: the stream still shows it owning its partitions
            t = self.rebalance(group, t + rng.randrange(3000, 45_000))  # session timeout
        elif action == "lose":
            m = rng.choice(alive)
            lost = set(m.owned)
            m.owned = set()
            self.event(group, m, "lost", t, lost)
            t = self.rebalance(group, t + rng.randrange(100, 5000))
        else:
            t = self.rebalance(group, t)
        self.now = t + rng.randrange(100, 20_000)


def _groups(members: int, partitions: int, protocols: Mapping[str, float], prefix: str) -> list[_Group]:
    mix = {p: w for p, w in protocols.items() if w > 0}
    unknown = set(mix) - {"eager", "cooperative", "consumer"}
    if not mix or unknown:
        raise ValueError(f"protocol mix needs eager/cooperative/consumer weights, got {dict(protocols)}")
    total = sum(mix.values())
    groups = []
    for gi, (protocol, weight) in enumerate(sorted(mix.items())):
        n = max(2, round(members * weight / total))
        topic = f"{prefix}t{gi}"
        groups.append(
            _Group(
                name=f"{prefix}g-{protocol}",
                topic=topic,
                protocol=protocol,
                partitions=[(topic, p) for p in range(partitions)],
                members=[_Member(name=f"{prefix}{protocol[:3]}-{i}", static=i % 2 == 0) for i in range(n)],
            )
        )
    return groups


def generate_events(
    n_events: int,
    *,
    members: int = 12,
    partitions: int = 12,
    protocols: Mapping[str, float] = DEFAULT_MIX,
    seed: int = 0,
    start_ms: int = DEFAULT_START_MS,
    prefix: str = "",
) -> Iterator[dict[str, Any]]:
    """Exactly `n_events` valid RebalanceEvent dicts (members split over one group per protocol, each
    group with its own topic of `partitions` partitions). Same arguments, same stream."""
    if n_events < 0 or members < 1 or partitions < 1:
        raise ValueError("n_events >= 0, members >= 1 and partitions >= 1 are needed")
    sim = _Sim(_groups(members, partitions, protocols, prefix), seed, start_ms)
    produced = 0
    while produced < n_events:
        sim.round()
        # member by member within a round: out of order across members, in order within one
        batch = sorted(sim.out, key=lambda e: (str(e["client_id"]), int(e["seq"])))
        sim.out = []
        yield from batch[: n_events - produced]
        produced += len(batch)


def event_line(event: Mapping[str, Any]) -> str:
    """One event as a compact JSON line (with the newline)."""
    return json.dumps(event, separators=(",", ":")) + "\n"


def write_jsonl(
    out_dir: str | Path,
    n_events: int,
    *,
    files: int = 1,
    seed: int = 0,
    **kwargs: Any,
) -> list[Path]:
    """Write `n_events` events as `files` JSONL files (`events-00000.jsonl`, ...) in `out_dir`.

    With several files, one shard of `ceil(n_events / files)` events is simulated (names prefixed
    `s0-`) and every file is that shard with its own prefix (`s1-`, ...): independent groups, topics
    and members running side by side, the last file cut short to make the count exact. The whole set
    is one valid stream whose figures are the shard's times the file count, and 10 M events are
    written at disk speed rather than simulation speed.
    """
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if files <= 1:
        path = root / "events-00000.jsonl"
        _write_atomic(path, "".join(event_line(e) for e in generate_events(n_events, seed=seed, **kwargs)))
        return [path]
    per_file = -(-n_events // files)
    kwargs = {**kwargs, "prefix": SHARD_PREFIX.format(0)}
    template = [event_line(e) for e in generate_events(per_file, seed=seed, **kwargs)]
    text = "".join(template)
    paths = []
    left = n_events
    for i in range(files):
        count = min(per_file, left)
        if count <= 0:
            break
        body = text if count == per_file else "".join(template[:count])
        path = root / f"events-{i:05d}.jsonl"
        _write_atomic(path, body.replace('"' + SHARD_PREFIX.format(0), '"' + SHARD_PREFIX.format(i)))
        paths.append(path)
        left -= count
    return paths


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
