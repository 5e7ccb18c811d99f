"""Static-member cutover: a stop-all / start-all cutover of static members against the same cutover of
dynamic members, on the same fleet shape and broker, interleaved.

Static members (group.instance.id) do not send LeaveGroup when they close, so after a stop-all the
group keeps them until session.timeout.ms (45 s by default) and the plan's "group is Empty" gate waits
that long with every partition unowned. The cutover plans now run `kafka-coop remove-members GROUP
--all-static` right after the stop, so the group empties at once, as it does for dynamic members.

Each run: a fresh group of N librdkafka members (`kafka-coop consume`, cooperative-sticky, static ids
`mI` or none) on one topic; `downgrade-plan --to eager` made from the live group
(cooperative-to-eager-cutover); the plan walked by the same PlanRunner the demo and e2e tests use
(each phase behind its printed gate; the stop phase's `remove-members --wait-stopped` started with
the stop). The cost is the partition-unavailable ms of the walk, from the members' own rebalance events
(`kafka_coop.analytics.summarize`, the walk as its one phase): a partition counts from its owner's
revoke until a member is assigned it again. Sides alternate (dynamic, static / static, dynamic, ...).
One extra arm, static members walked without the remove-members step, measures what the cutover cost
before (fewer repeats: each waits out the session timeout).

Figure: median(static) / median(dynamic) partition-unavailable ms, target <= 1.2.

Run: `.venv/bin/python -m bench --only static_cutover` -> bench/results/static-cutover.json/.png
"""

from __future__ import annotations

import statistics
import uuid
from pathlib import Path
from typing import Any

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

NAME = "static-cutover"
TARGET_RATIO = 1.2
SIDES = ("dynamic", "static")


def one_cutover(bootstrap: str, workdir: Path, side: str, *, members: int, partitions: int) -> dict[str, Any]:
    """Start a fleet, plan the cutover from the live group, walk it; the walk's unavailability."""
    from kafka_coop.analytics import PhaseWindow, summarize
    from kafka_coop.events import now_ms
    from kafka_coop.inspection import take_snapshot
    from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
    from kafka_coop.rollout import GateCommand, all_migrations, fleet_from_snapshot, make_plan
    from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, PlanRunner

    static = side != "dynamic"
    remove = side == "static"
    tag = uuid.uuid4().hex[:6]
    group, topic = f"cutover-{side}-{tag}", f"cutover-{tag}"
    with MemberProcesses(bootstrap, workdir / f"{side}-{tag}") as processes:
        processes.admin.ensure_topic(topic, partitions)
        processes.admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG)
        started = processes.add_many(
            MemberSpec(
                name=f"m{i}",
                kind="python",
                group=group,
                topics=(topic,),
                assignors=("cooperative-sticky",),
                instance_id=f"m{i}" if static else None,
            )
            for i in range(members)
        )
        processes.wait_stable(group, joined=started)
        snap = take_snapshot(processes.admin, group, manifests_topic=DEFAULT_MANIFEST_TOPIC)
        migrations = [(spec.name, spec) for spec in all_migrations()]
        plan = make_plan(
            fleet_from_snapshot(snap),
            "downgrade",
            "eager",
            migrations,
            gate=GateCommand(bootstrap=bootstrap, timeout_s=120),
        )
        if plan.migration != "cooperative-to-eager-cutover":
            raise RuntimeError(f"expected the cutover plan, got {plan.migration}: {plan.blockers}")
        if not remove:  # what the plan did before remove-members existed
            plan = plan.model_copy(
                update={
                    "phases": tuple(
                        p.model_copy(
                            update={"then": (), "alongside": (), "then_specs": (), "alongside_specs": ()}
                        )
                        for p in plan.phases
                    )
                }
            )
        gates: list[float] = []
        runner = PlanRunner(processes, plan, on_gate=lambda g: gates.append(g.seconds))
        start = now_ms()
        for phase in plan.phases:
            runner.run_phase(phase)
        end = now_ms()
        events = [e for m in processes.members.values() for e in m.events()]
    stat = summarize(events, phases=[PhaseWindow(name="cutover", start_ms=start, end_ms=end)]).phases[0]
    return {
        "side": side,
        "group": group,
        "members": members,
        "partitions": partitions,
        "static": static,
        "remove_members": remove,
        "walk_ms": end - start,
        "unavailable_ms": stat.partition_unavailable_ms,
        "pause_ms": stat.pause_ms,
        "gate_seconds": [round(g, 3) for g in gates],
    }


def run(args: BenchArgs) -> BenchResult:
    members = args.param("members", 3)
    partitions = args.param("partitions", 6)
    repeats = args.param("repeats", 1 if args.quick else 3)
    before = args.param("before_runs", 0 if args.quick else 1)
    result = new_result(
        NAME,
        "Stop-all cutover: static members (removed with remove-members) vs dynamic members",
        {"members": members, "partitions": partitions, "repeats": repeats, "before_runs": before},
        kafka_version=DEFAULT_KAFKA_VERSION,
    )
    runs = interleaved_runs(
        "kafka-coop-cutover-",
        repeats,
        SIDES,
        lambda bootstrap, workdir, side: one_cutover(
            bootstrap, workdir, side, members=members, partitions=partitions
        ),
        _progress_line,
        then=("static-no-removal",) * before,
    )
    result.runs = json_runs(runs)
    by_side: dict[str, list[float]] = {}
    for r in runs:
        by_side.setdefault(str(r["side"]), []).append(float(r["unavailable_ms"]))
    result.samples = {f"{side}_unavailable_ms": Series(unit="ms", values=v) for side, v in by_side.items()}
    dynamic = statistics.median(by_side["dynamic"])
    static = statistics.median(by_side["static"])
    result.figures = {
        "static_vs_dynamic_unavailable": Figure(
            value=round(static / dynamic, 3) if dynamic else float("inf"),
            unit="x",
            description="median partition-unavailable ms of the static cutover / the dynamic one",
            target=TARGET_RATIO,
            better="lower",
        ),
        "dynamic_unavailable_ms": Figure(value=dynamic, unit="ms", description="median, dynamic members"),
        "static_unavailable_ms": Figure(
            value=static, unit="ms", description="median, static members removed by remove-members"
        ),
    }
    if "static-no-removal" in by_side:
        old = statistics.median(by_side["static-no-removal"])
        result.figures["static_without_removal_vs_dynamic"] = Figure(
            value=round(old / dynamic, 3) if dynamic else float("inf"),
            unit="x",
            description="the same static cutover without remove-members (waits out session.timeout.ms)",
        )
    result.notes = [
        f"{members} librdkafka members (kafka-coop consume), {partitions} partitions, cooperative-sticky -> "
        "range via the cooperative-to-eager-cutover plan made from the live group; librdkafka's default "
        "session.timeout.ms (45 s).",
        "partition-unavailable ms from the members' rebalance events over the walk (first gate to Stable "
        "after start-all), as `kafka-coop report` computes it.",
    ]
    return result.finish()


def _progress_line(run_: dict[str, Any]) -> str:
    if run_["side"] == "static-no-removal":
        return f"  static without remove-members: {run_['unavailable_ms']:,} ms"
    return f"  {run_['side']:<8} round {run_['round']}: {run_['unavailable_ms']:,} partition-unavailable ms"


def plot(result: BenchResult, fig: Any) -> None:
    ax = fig.subplots()
    names = [n for n in ("dynamic", "static", "static-no-removal") if f"{n}_unavailable_ms" in result.samples]
    for i, name in enumerate(names):
        values = result.samples[f"{name}_unavailable_ms"].values
        ax.scatter([i] * len(values), values, alpha=0.7, s=24)
        if values:
            ax.hlines(statistics.median(values), i - 0.3, i + 0.3, colors="black")
    labels = {
        "dynamic": "dynamic",
        "static": "static +\nremove-members",
        "static-no-removal": "static,\nno removal",
    }
    ax.set_xticks(range(len(names)), [labels[n] for n in names])
    ax.set_ylabel("partition-unavailable ms (cutover walk)")
    ax.set_yscale("log")
    ratio = result.figures["static_vs_dynamic_unavailable"].value
    ax.set_title(f"static / dynamic = {ratio:.2f}x (target <= {TARGET_RATIO}x)", fontsize=10)
    ax.grid(alpha=0.3, axis="y")


if __name__ == "__main__":
    main_for(run, plot)
