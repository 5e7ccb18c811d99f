"""A rollout walked live (control records) against the same walk done by process restarts.

One fleet shape, one broker, the two sides interleaved: N static librdkafka members (`kafka-coop consume
--control`, record logs) on one topic under a steady producer walk

1. eager (range) -> cooperative-sticky, a coordinated cutover (librdkafka refuses a mixed list, so there
   is no rolling path);
2. cooperative-sticky -> eager, the cutover back;
3. eager -> group.protocol=consumer, member by member (the KIP-848 live conversion);
4. consumer -> cooperative-sticky, member by member.

Restarts: a cutover stops every member, removes the static members (LeaveGroup by instance id) and
starts every member on the new settings; a rolling step restarts one member on its new settings and waits
for the group to settle. Live: the same steps as control records (`publish_control`), a cutover held as
`rollout run` holds it (between `cutover-close` and `cutover-rejoin` the runner's own member keeps the
group from going Empty while the static members are removed, and leaves once every member rejoined:
kafka_coop.membership's `hold_across`), each step's answers read from the manifests
(`read_outcomes`) and the group settled before the next. The walk's cost is its partition-unavailable ms
from the members' own rebalance events (`kafka_coop.analytics.summarize`), and its wall time.

The issue asks for eager -> cooperative -> consumer and back; librdkafka's cooperative-sticky leader
writes userData into assignments and the broker then refuses the classic -> consumer conversion (seen on
the sandbox: the member answered `refused` and went back), so the walk reaches the consumer protocol from
eager. The sandbox's restart is the kindest baseline: a real deploy also pulls an image and waits for
readiness probes.

Figures: live / restarts for partition-unavailable ms and wall time (targets <= 1/3), the coordinated
cutover's pause (first close record to the last member's first assignment, target <= 3 s), lost (0),
and the per-member reconfiguration time (p50 / p95).

Run: `.venv/bin/python -m bench --only rollout_live` -> bench/results/rollout-live.json/.png
"""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness.figures import percentile
from bench.harness.frame import (
    BenchArgs,
    BenchResult,
    Figure,
    Series,
    interleaved_runs,
    json_runs,
    main_for,
    new_result,
)
from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION

NAME = "rollout-live"
SIDES = ("restarts", "live")
TARGET_RATIO = round(1 / 3, 3)
TARGET_CUTOVER_S = 3.0
ANSWER_S = 120.0
RANGE = {"group.protocol": "classic", "partition.assignment.strategy": "range"}
COOPERATIVE = {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky"}
CONSUMER = {"group.protocol": "consumer", "group.remote.assignor": "uniform"}
# (kind, settings, the member spec's fields after it)
WALK: tuple[tuple[str, dict[str, str], dict[str, Any]], ...] = (
    ("cutover", COOPERATIVE, {"assignors": ("cooperative-sticky",), "group_protocol": "classic"}),
    ("cutover", RANGE, {"assignors": ("range",), "group_protocol": "classic"}),
    ("rolling", CONSUMER, {"group_protocol": "consumer", "remote_assignor": "uniform"}),
    ("rolling", COOPERATIVE, {"assignors": ("cooperative-sticky",), "group_protocol": "classic"}),
)


class _Live:
    """The runner's side of the live walk: numbered control records, every member's answer read back."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.conf = {"bootstrap.servers": bootstrap}
        self.group, self.plan_id, self.step = group, f"bench-{uuid.uuid4().hex[:6]}", 0

    def send(self, kind: str, settings: dict[str, str], members: list[str] | None) -> int:
        from kafka_coop.control import ControlRecord, publish_control
        from kafka_coop.events import now_ms

        self.step += 1
        publish_control(
            self.conf,
            ControlRecord(
                plan_id=self.plan_id,
                group=self.group,
                step=self.step,
                phase=kind,
                kind=kind,
                members=members,
                settings=settings,
                issued_at_ms=now_ms(),
            ),
        )
        return self.step

    def answers(self, step: int, names: list[str], outcome: str) -> dict[str, Any]:
        from kafka_coop.control import read_outcomes

        found = read_outcomes(self.conf, self.group, self.plan_id, step, timeout_s=ANSWER_S, expect=names)
        wrong = {n: a for n, a in found.items() if a.outcome != outcome}
        if set(found) != set(names) or wrong:
            raise RuntimeError(f"step {step}: expected {outcome} from {names}, got {found}")
        return found


def held_cutover(
    admin: Any,
    leave: Any,
    runner: _Live,
    names: list[str],
    settings: dict[str, str],
    assignors: tuple[str, str],
) -> tuple[float, float, int]:
    """The members closed, removed and sent back with the group held open, as `rollout run` does
    (kafka_coop.membership._hold; its connection made before the close): they rejoin in one rebalance.
    When the close record went out, when every close was answered, and the rejoin record's step."""
    from kafka_coop.membership import GroupHold, hold_across, hold_instance_id

    hold = GroupHold(
        admin.bootstrap, {}, runner.group, hold_instance_id(runner.plan_id, runner.step + 2), assignors
    )
    sent: list[int] = []

    def rejoin() -> None:
        sent.append(runner.send("cutover-rejoin", settings, None))

    try:
        began = time.monotonic()
        runner.answers(runner.send("cutover-close", {}, None), names, "closed-for-cutover")
        closed_at = time.monotonic()
        held = hold_across(admin, leave, hold, names, rejoin, names)
    finally:
        hold.close()
    if not held:
        raise RuntimeError(f"the cutover of step {sent[0]} went on without its hold (see hold_across)")
    return began, closed_at, sent[0]


def one_walk(
    bootstrap: str, workdir: Path, side: str, *, members: int, partitions: int, rate: float
) -> dict[str, Any]:
    """A fresh fleet on eager, walked by `side`; the walk's figures."""
    from kafka_coop.analytics import PhaseWindow, summarize
    from kafka_coop.control import CONTROL_TOPIC, CONTROL_TOPIC_CONFIG, CONTROL_TOPIC_PARTITIONS
    from kafka_coop.events import now_ms
    from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
    from kafka_coop.membership import LeaveGroupClient
    from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer, audit_when_drained

    tag = uuid.uuid4().hex[:6]
    group, topic = f"rollout-{side}-{tag}", f"rollout-{tag}"
    live = side == "live"
    with MemberProcesses(bootstrap, workdir / f"{side}-{tag}") as processes:
        admin = processes.admin
        admin.ensure_topic(topic, partitions)
        admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG)
        admin.ensure_topic(CONTROL_TOPIC, CONTROL_TOPIC_PARTITIONS, config=CONTROL_TOPIC_CONFIG)
        producer = SteadyProducer(bootstrap, topic, partitions, rate=rate).start()
        started = processes.add_many(
            MemberSpec(
                name=f"m{i}",
                kind="python",
                group=group,
                topics=(topic,),
                assignors=("range",),
                instance_id=f"{group}-m{i}",
                record_log=True,
                control=live,
            )
            for i in range(members)
        )
        processes.wait_stable(group, joined=started)
        names = [m.spec.instance_id or "" for m in started]
        runner = _Live(bootstrap, group)
        leave = LeaveGroupClient(bootstrap, {}, 10.0)
        begin = now_ms()
        cutover_pauses: list[float] = []
        cutover_steps: list[list[float]] = []
        per_member: list[float] = []
        assignor = "range"
        for kind, settings, spec in WALK:
            new = settings.get("partition.assignment.strategy", assignor)
            if kind == "cutover":
                began = time.monotonic()
                if live:
                    began, closed_at, rejoin = held_cutover(
                        processes.admin, leave, runner, names, settings, (assignor, new)
                    )
                    removed_at = time.monotonic()
                    answers = runner.answers(rejoin, names, "applied")
                    cutover_pauses.append(max(a.seconds or 0.0 for a in answers.values()))
                    # where the runner's side of the pause went: every close answered, removal, every rejoin
                    cutover_steps.append(
                        [
                            round(closed_at - began, 3),
                            round(removed_at - closed_at, 3),
                            round(time.monotonic() - removed_at, 3),
                        ]
                    )
                else:
                    processes.stop_all(group=group)
                    leave.remove(group, names)
                    for member in started:
                        processes.reconfigure(member.spec.name, **spec)
                    for member in started:
                        member.start()
                    processes.wait_stable(group, joined=started)
                    cutover_pauses.append(time.monotonic() - began)
                processes.wait_stable(group)
                assignor = new
                continue
            for member, name in zip(started, names, strict=True):
                if live:
                    answer = runner.answers(runner.send("reconfigure", settings, [name]), [name], "applied")
                    per_member.append(answer[name].seconds or 0.0)
                else:
                    began = time.monotonic()
                    member.stop()
                    processes.reconfigure(member.spec.name, **spec)
                    member.start()
                    processes.wait_stable(group, joined=[member])
                    per_member.append(time.monotonic() - began)
                processes.wait_stable(group)
            assignor = new
        end = now_ms()
        producer.stop()
        audit = audit_when_drained(
            topic, producer.acked, lambda: [m.records_path for m in started], timeout_s=60
        )
        events = [e for m in processes.members.values() for e in m.events()]
        restarts = sum(m.starts - 1 for m in started)
    stat = summarize(events, phases=[PhaseWindow(name="walk", start_ms=begin, end_ms=end)]).phases[0]
    return {
        "side": side,
        "group": group,
        "walk_ms": end - begin,
        "unavailable_ms": stat.partition_unavailable_ms,
        "pause_ms": stat.pause_ms,
        "cutover_pause_s": [round(s, 3) for s in cutover_pauses],
        "cutover_runner_s": cutover_steps,  # [to every close answer, held removal + rejoin, to every answer]
        "per_member_s": [round(s, 3) for s in per_member],
        "lost": audit.lost,
        "produced": audit.produced,
        "restarts": restarts,
    }


def run(args: BenchArgs) -> BenchResult:
    members = args.param("members", 4 if args.quick else 10)
    partitions = args.param("partitions", 2 * members)
    repeats = args.param("repeats", 1)
    rate = args.param("rate", 100.0)
    result = new_result(
        NAME,
        "A rollout walked live (control records) vs by process restarts, one fleet",
        {"members": members, "partitions": partitions, "repeats": repeats, "rate": rate},
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    runs = interleaved_runs(
        "kafka-coop-rollout-",
        repeats,
        SIDES,
        lambda bootstrap, workdir, side: one_walk(
            bootstrap, workdir, side, members=members, partitions=partitions, rate=rate
        ),
        lambda walk: (
            f"  {walk['side']:<8} round {walk['round']}: {walk['unavailable_ms']:,} "
            f"partition-unavailable ms, {walk['walk_ms']:,} ms wall, lost {walk['lost']}"
        ),
    )
    result.runs = json_runs(runs)
    by = _by_side(runs)
    result.samples = {
        "restarts_unavailable_ms": Series(unit="ms", values=by["restarts"]["unavailable_ms"]),
        "live_unavailable_ms": Series(unit="ms", values=by["live"]["unavailable_ms"]),
        "restarts_walk_ms": Series(unit="ms", values=by["restarts"]["walk_ms"]),
        "live_walk_ms": Series(unit="ms", values=by["live"]["walk_ms"]),
        "live_per_member_s": Series(unit="s", values=by["live"]["per_member_s"]),
        "restarts_per_member_s": Series(unit="s", values=by["restarts"]["per_member_s"]),
        "live_cutover_pause_s": Series(unit="s", values=by["live"]["cutover_pause_s"]),
    }

    def median(side: str, key: str) -> float:
        return statistics.median(by[side][key])

    live_per = by["live"]["per_member_s"]
    result.figures = {
        "live_vs_restart_unavailable": Figure(
            value=_ratio(median("live", "unavailable_ms"), median("restarts", "unavailable_ms")),
            unit="x",
            description="partition-unavailable ms of the walk, live / restarts (medians)",
            target=TARGET_RATIO,
            better="lower",
        ),
        "live_vs_restart_wall": Figure(
            value=_ratio(median("live", "walk_ms"), median("restarts", "walk_ms")),
            unit="x",
            description="wall time of the walk, live / restarts (medians)",
            target=TARGET_RATIO,
            better="lower",
        ),
        "coordinated_cutover_pause_s": Figure(
            value=max(by["live"]["cutover_pause_s"]),
            unit="s",
            description=f"{members} members: close to the last member's first assignment (worst cutover)",
            target=TARGET_CUTOVER_S,
            better="lower",
        ),
        "lost": Figure(
            value=sum(r["lost"] for r in runs),
            unit="records",
            description="both sides",
            target=0,
            better="lower",
        ),
        "live_reconfigure_p50_s": Figure(
            value=percentile(live_per, 50) or 0.0, unit="s", description="per member, live rolling steps"
        ),
        "live_reconfigure_p95_s": Figure(
            value=percentile(live_per, 95) or 0.0, unit="s", description="per member, live rolling steps"
        ),
    }
    result.notes = [
        f"{members} static librdkafka members (kafka-coop consume), {partitions} partitions, "
        f"{rate:g} records/s; walk: eager -> cooperative (cutover), back to eager (cutover), "
        "eager -> consumer (rolling), consumer -> cooperative (rolling).",
        "cooperative -> consumer is not in the walk: the broker refuses the conversion when librdkafka's "
        "cooperative-sticky leader wrote userData into assignments.",
        "The sandbox's process restart is the kindest baseline: a real deploy also pulls an image and passes "
        "readiness probes.",
    ]
    return result.finish()


def _by_side(runs: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {side: {} for side in SIDES}
    for r in runs:
        side = out[str(r["side"])]
        for key in ("unavailable_ms", "walk_ms"):
            side.setdefault(key, []).append(float(r[key]))
        for key in ("per_member_s", "cutover_pause_s"):
            side.setdefault(key, []).extend(float(v) for v in r[key])
    return out


def _ratio(value: float, baseline: float) -> float:
    return round(value / baseline, 3) if baseline else float("inf")


def plot(result: BenchResult, fig: Any) -> None:
    left, right = fig.subplots(1, 2)
    for i, side in enumerate(SIDES):
        values = result.samples[f"{side}_unavailable_ms"].values
        left.scatter([i] * len(values), values, s=24, alpha=0.7)
    left.set_xticks(range(len(SIDES)), list(SIDES))
    left.set_ylabel("partition-unavailable ms (whole walk)")
    left.set_yscale("log")
    left.grid(alpha=0.3, axis="y")
    ratio = result.figures["live_vs_restart_unavailable"].value
    left.set_title(f"live / restarts = {ratio:.3f}x (target <= {TARGET_RATIO})", fontsize=9)
    for i, side in enumerate(SIDES):
        values = result.samples[f"{side}_per_member_s"].values
        right.scatter([i] * len(values), values, s=12, alpha=0.6)
    right.set_xticks(range(len(SIDES)), list(SIDES))
    right.set_ylabel("per-member step (s)")
    right.set_yscale("log")
    right.grid(alpha=0.3, axis="y")


if __name__ == "__main__":
    main_for(run, plot)
