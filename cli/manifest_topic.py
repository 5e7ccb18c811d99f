"""`kafka-coop manifest-topic`: create the compacted topic member manifests go to, and say who needs what.

Run once per cluster, before members start: without the topic every member warns once and inspection
infers member protocols from the wire instead of reading what members declare (docs/manifests.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click
from pydantic import BaseModel, ConfigDict

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
    """What `manifest-topic --output json` prints (schema `manifest-topic`)."""

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
        f"Topic {topic!r} exists with cleanup.policy={policy}, so manifests of members that left would "
        "expire and tombstones would not remove them.",
        hint=f"kafka-configs.sh --alter --entity-type topics --entity-name {topic} "
        "--add-config cleanup.policy=compact (or choose another --topic).",
    )


@click.command("manifest-topic")
@bootstrap_option()
@command_config_option()
@click.option("--topic", default=DEFAULT_MANIFEST_TOPIC, show_default=True, help="The topic to create.")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="One is plenty: a member writes a few records a minute.",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=-1),
    default=-1,
    show_default=True,
    help="-1: the broker's default.replication.factor.",
)
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
    if replication_factor == 0:
        raise InvalidInput("--replication-factor 0 cannot hold a record; give -1 (broker default) or >= 1.")
    admin, _ = admin_for(bootstrap, command_config)
    # Look first: Kafka checks CREATE before it checks existence, so a principal without CREATE would be
    # refused even for a topic that is already there.
    layout = admin.topic_layout(topic)
    created = layout is None and admin.create_topic(
        topic, partitions, replication_factor=replication_factor, config=MANIFEST_TOPIC_CONFIG
    )
    config: dict[str, str] | None
    if created:
        settled = admin.settled_topic(topic, timeout_s=SETTLE_S)
        if settled is None:
            raise ClusterUnavailable(
                f"Created topic {topic!r}, but the cluster did not show its partitions and configs "
                f"within {SETTLE_S:g} s.",
                hint="Run the same manifest-topic command again: it checks the topic that is there.",
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
    shown = {key: config[key] for key in MANIFEST_TOPIC_CONFIG if key in config}
    result = ManifestTopicResult(
        topic=topic,
        created=created,
        partitions=layout[0],
        replication_factor=layout[1],
        config=shown,
        acls=MANIFEST_TOPIC_ACLS,
    )
    if output == "json":
        term.emit_json(result)
        return
    verb = "Created" if created else "Already there:"
    term.out.print(
        f"{verb} topic {topic} ({result.partitions} partition(s), replication factor "
        f"{result.replication_factor}), " + ", ".join(f"{k}={v}" for k, v in shown.items()),
        highlight=False,
    )
    rows = [[", ".join(acl.operations), f"{acl.who}: {acl.why}"] for acl in MANIFEST_TOPIC_ACLS]
    title = "ACLs on this topic, when the cluster has an authorizer"
    term.out.print(aligned_table(("operations", "who: why"), rows, title=title))
    for acl in MANIFEST_TOPIC_ACLS:
        click.echo(acl.kafka_acls_command(topic, principal, bootstrap))
