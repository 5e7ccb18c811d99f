"""`kafka-coop manifest-topic` and `control-topic`: create a compacted topic kafka-coop reads and writes,
or check the one there, and say who needs which ACLs.

Run each once per cluster. Without the manifest topic every member warns once and inspection infers
member protocols from the wire instead of reading what members declare (docs/manifests.md); without
the control topic `rollout run` cannot change kafka-coop members live (docs/rollout-run.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import click
from pydantic import BaseModel, ConfigDict

from kafka_coop.control import CONTROL_TOPIC, CONTROL_TOPIC_ACLS, CONTROL_TOPIC_CONFIG
from kafka_coop.errors import ClusterUnavailable, GateFailed, InvalidInput
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_ACLS, MANIFEST_TOPIC_CONFIG, TopicAcl

from ._context import (
    Terminal,
    admin_for,
    bootstrap_option,
    command_config_option,
    output_option,
    pass_terminal,
)
from ._tables import aligned_table

# How long a topic just created may take to show in the metadata and configs of the broker asked.
SETTLE_S = 30.0


class ManifestTopicResult(BaseModel):
    """What `manifest-topic --output json` prints (schema `manifest-topic`; `control-topic` prints the
    same record, schema `control-topic`)."""

    model_config = ConfigDict(frozen=True)

    v: Literal[1] = 1
    topic: str
    created: bool
    partitions: int
    replication_factor: int
    config: dict[str, str]
    acls: tuple[TopicAcl, ...]


def _not_compacted(topic: str, config: dict[str, str]) -> GateFailed:
    policy = config.get("cleanup.policy", "delete")
    return GateFailed(
        f"Topic {topic!r} exists with cleanup.policy={policy}, so records of members or groups that are "
        "gone would expire and tombstones would not remove them.",
        hint=f"kafka-configs.sh --alter --entity-type topics --entity-name {topic} "
        "--add-config cleanup.policy=compact (or choose another --topic).",
    )


def _partitions_option(why: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--partitions", type=click.IntRange(min=1), default=1, show_default=True, help=why)


_REPLICATION_OPTION = click.option(
    "--replication-factor",
    type=click.IntRange(min=-1),
    default=-1,
    show_default=True,
    help="-1: the broker's default.replication.factor.",
)


def _ensure_compacted(
    term: Terminal,
    bootstrap: str,
    command_config: Path | None,
    topic: str,
    partitions: int,
    replication_factor: int,
    topic_config: Mapping[str, str],
    acls: tuple[TopicAcl, ...],
) -> ManifestTopicResult:
    """The topic made (or found) compacted, as the cluster shows it; refused when it is not compacted."""
    if replication_factor == 0:
        raise InvalidInput("--replication-factor 0 cannot hold a record; give -1 (broker default) or >= 1.")
    admin, _ = admin_for(bootstrap, command_config)
    # Look first: Kafka checks CREATE before it checks existence, so a principal without CREATE would be
    # refused even for a topic that is already there.
    layout = admin.topic_layout(topic)
    created = layout is None and admin.create_topic(
        topic, partitions, replication_factor=replication_factor, config=dict(topic_config)
    )
    config: dict[str, str] | None
    if created:
        settled = admin.settled_topic(topic, timeout_s=SETTLE_S)
        if settled is None:
            raise ClusterUnavailable(
                f"Created topic {topic!r}, but the cluster did not show its partitions and configs "
                f"within {SETTLE_S:g} s.",
                hint="Run the same command again: it checks the topic that is there.",
            )
        layout, config = settled
    else:
        layout = layout or admin.topic_layout(topic)
        config = admin.topic_config(topic)
    if layout is None or config is None:
        raise ClusterUnavailable(
            f"Topic {topic!r} exists but this principal may not describe it or its configs.",
            hint="Grant DESCRIBE and DESCRIBE_CONFIGS on the topic to the principal in --command-config.",
        )
    if "compact" not in config.get("cleanup.policy", ""):
        raise _not_compacted(topic, config)
    shown = {key: config[key] for key in topic_config if key in config}
    return ManifestTopicResult(
        topic=topic,
        created=created,
        partitions=layout[0],
        replication_factor=layout[1],
        config=shown,
        acls=acls,
    )


def _render(term: Terminal, result: ManifestTopicResult, output: str, commands: list[str]) -> None:
    if output == "json":
        term.emit_json(result)
        return
    verb = "Created" if result.created else "Already there:"
    term.out.print(
        f"{verb} topic {result.topic} ({result.partitions} partition(s), replication factor "
        f"{result.replication_factor}), " + ", ".join(f"{k}={v}" for k, v in result.config.items()),
        highlight=False,
    )
    rows = [[", ".join(acl.operations), f"{acl.who}: {acl.why}"] for acl in result.acls]
    title = "ACLs on this topic, when the cluster has an authorizer"
    term.out.print(aligned_table(("operations", "who: why"), rows, title=title))
    for command in commands:
        click.echo(command)


@click.command("manifest-topic")
@bootstrap_option()
@command_config_option()
@click.option("--topic", default=DEFAULT_MANIFEST_TOPIC, show_default=True, help="The topic to create.")
@_partitions_option("One is plenty: a member writes a few records a minute.")
@_REPLICATION_OPTION
@click.option(
    "--principal",
    default="User:<service>",
    show_default=True,
    help="Principal shown in the kafka-acls.sh commands printed.",
)
@output_option()
@pass_terminal
def manifest_topic(
    term: Terminal,
    bootstrap: str,
    command_config: Path | None,
    topic: str,
    partitions: int,
    replication_factor: int,
    principal: str,
    output: str,
) -> None:
    """Create the compacted manifest topic (or check the one there) and print the ACLs members need."""
    result = _ensure_compacted(
        term,
        bootstrap,
        command_config,
        topic,
        partitions,
        replication_factor,
        MANIFEST_TOPIC_CONFIG,
        MANIFEST_TOPIC_ACLS,
    )
    commands = [acl.kafka_acls_command(topic, principal, bootstrap) for acl in MANIFEST_TOPIC_ACLS]
    _render(term, result, output, commands)


@click.command("control-topic")
@bootstrap_option()
@command_config_option()
@_partitions_option("One is plenty: a few records per rollout step, and every member reads it all.")
@_REPLICATION_OPTION
@click.option(
    "--operator",
    default="User:<operator>",
    show_default=True,
    help="The principal `rollout run` writes as, shown in the kafka-acls.sh commands printed.",
)
@click.option(
    "--principal",
    default="User:<service>",
    show_default=True,
    help="The members' principal, shown in the kafka-acls.sh commands printed (read only).",
)
@output_option()
@pass_terminal
def control_topic(
    term: Terminal,
    bootstrap: str,
    command_config: Path | None,
    partitions: int,
    replication_factor: int,
    operator: str,
    principal: str,
    output: str,
) -> None:
    """Create the compacted control topic `rollout run` changes kafka-coop members through (or check the
    one there) and print the ACLs: only the operator writes, members read."""
    result = _ensure_compacted(
        term,
        bootstrap,
        command_config,
        CONTROL_TOPIC,
        partitions,
        replication_factor,
        CONTROL_TOPIC_CONFIG,
        CONTROL_TOPIC_ACLS,
    )
    writer, reader = CONTROL_TOPIC_ACLS
    commands = [
        writer.kafka_acls_command(CONTROL_TOPIC, operator, bootstrap),
        reader.kafka_acls_command(CONTROL_TOPIC, principal, bootstrap),
    ]
    _render(term, result, output, commands)
