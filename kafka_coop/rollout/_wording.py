"""How a plan words a phase: the config per client family, the pause it costs (said up front), how far
a bounce has come; the CLI prints these words, it does not make its own."""

from __future__ import annotations

from kafka_coop._vocab import ASSIGNOR_REBALANCE_MODE, plural
from kafka_coop.families import catalog
from kafka_coop.rollout._commands import consume_flags
from kafka_coop.rollout._plan_model import FamilyConfig, PlanPhase
from kafka_coop.rollout._spec import MemberConfig, MigrationPhase

STATIC_ID_HINT = "<unique per member, stable across restarts>"


def _kafka_coop_settings(config: MemberConfig) -> dict[str, str]:
    settings: dict[str, str] = {}
    if config.group_protocol == "consumer":
        settings["rebalance"] = "consumer"
        if config.remote_assignor:
            settings["remote_assignor"] = config.remote_assignor
    elif len(config.assignors) == 1:
        settings["rebalance"] = ASSIGNOR_REBALANCE_MODE[config.assignors[0]]
    elif config.assignors:
        settings["assignors"] = ",".join(config.assignors)
    if config.static_membership:
        settings["instance_id"] = STATIC_ID_HINT
    return settings


def _in_own_terms(family: str, config: MemberConfig) -> dict[str, str]:
    """A family without config of its own in the migration: the phase's config in its terms
    (families.yaml `config`): option or property name -> value, or code lines."""
    lines = catalog()[family].render(
        config.assignors, consumer=config.group_protocol == "consumer", static=config.static_membership
    )
    values: dict[str, str] = {}
    for i, line in enumerate(lines, 1):
        key, eq, value = line.partition("=")
        if eq and "(" not in key:
            values[key.strip()] = value.strip()
        else:
            values[f"code {i}"] = line
    return values


def family_config(family: str, config: MemberConfig) -> FamilyConfig:
    if family not in ("librdkafka", "java"):
        return FamilyConfig(member=config, set=_in_own_terms(family, config))
    values = config.librdkafka_conf() if family == "librdkafka" else config.java_properties()
    if config.static_membership:
        values["group.instance.id"] = STATIC_ID_HINT
    return FamilyConfig(
        member=config,
        set=values,
        remove=config.remove,
        kafka_coop=_kafka_coop_settings(config) if family == "librdkafka" else None,
    )


# A coordinated cutover by `kafka-coop rollout run` (every member a kafka-coop member), what it costs:
# measured by bench/rollout_live.py (docs/benchmarks.md), 10 members on the sandbox.
COORDINATED_CLASSIC = (
    " Every member is a kafka-coop member: `kafka-coop rollout run` makes this a coordinated cutover, with "
    "no restart and no deploy: the members close together, and rejoin in one rebalance while the runner's "
    "own member holds the group open (it never empties, so no initial rebalance delay and no member waits "
    "for a heartbeat to learn of another round); the pause is their close and one join, 0.35 to 1.2 s "
    "for 10 members on the sandbox, by its load."
)
COORDINATED_CONSUMER = (
    " Every member is a kafka-coop member: `kafka-coop rollout run` makes this a coordinated cutover, with "
    "no restart and no deploy: the members close together and rejoin on the consumer protocol; the pause "
    "is their close and the consumer group's first assignment, a few seconds."
)


def pause_note(
    phase: MigrationPhase,
    protocol_before: str | None,
    size: int,
    static: bool,
    *,
    coordinated_to: str | None = None,
) -> str:
    """`coordinated_to`: the migration's target protocol where every member is a kafka-coop member (a
    full stop is then a coordinated cutover by `rollout run`), else None."""
    if phase.pause == "full-stop":
        who = "the member is" if size == 1 else f"all {size} members are"
        note = (
            f"{who[0].upper()}{who[1:]} down from the first stop until the group is Stable on the "
            "new config; every partition is unowned for that whole time (kafka-coop report measures it)."
        )
        if coordinated_to is not None and phase.action in ("stop-all", "stop-all-start-all"):
            note += COORDINATED_CONSUMER if coordinated_to == "consumer" else COORDINATED_CLASSIC
        if static and phase.action in ("stop-all", "stop-all-start-all") and phase.remove_static_members:
            note += (
                " Static members do not leave the group when they stop; the plan removes them as soon as "
                "they have stopped (remove-members --all-static), so the group empties at once instead of "
                "after session.timeout.ms."
            )
        elif static and phase.action in ("stop-all", "stop-all-start-all"):
            note += (
                " Static members do not leave the group when they stop: it empties only when their "
                "session.timeout.ms runs out (45 s by default), and the next gate waits for that."
            )
        return note
    if phase.pause == "none":
        return "no member stops consuming."
    if protocol_before == "eager":
        each = "The restart" if size == 1 else f"Each of the {size} restarts"
        return (
            f"{each} rebalances the group and, under EAGER, every member revokes "
            "everything: expect one group-wide pause per restart until the phase completes."
        )
    if static:
        return (
            "Only the restarting member's partitions pause: with static membership a member back within "
            "its session timeout causes no rebalance."
        )
    return (
        "Each restart moves only the restarting member's partitions, incrementally (out when it leaves, "
        "back when it joins); the other members keep consuming."
    )


def progress_note(moved: int, size: int) -> str:
    return f"{moved} of {plural(size, 'member')} already on this phase's config"


def config_lines(phase: PlanPhase) -> list[str]:
    """The config every family runs after `phase`, one line per family, in its own terms."""
    lines = []
    for family, config in phase.config.items():
        pairs = ", ".join(f"{k}={v}" for k, v in config.set.items()) or "(unchanged)"
        line = f"{family}: {pairs}"
        if config.remove:
            line += f"; remove {', '.join(config.remove)}"
        lines.append(line)
        flags = consume_flags(config.kafka_coop) if config.kafka_coop else None
        if flags:
            lines.append(f"kafka-coop consume: {flags}")
    if phase.action == "stop-all":
        lines.append("stop every member (SIGTERM: commit and close)")
    return lines
