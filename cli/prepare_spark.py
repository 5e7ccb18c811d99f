"""`kafka-coop prepare-spark`: make what the Spark engine needs once, ahead of the first report."""

from __future__ import annotations

from typing import Literal

import click

from kafka_coop.analytics import SparkPrepared
from kafka_coop.analytics import prepare_spark as prepare

from ._context import Terminal, output_option, pass_terminal


class PrepareSparkOutput(SparkPrepared):
    """What `prepare-spark --output json` prints: what is cached, and what was made now."""

    v: Literal[1] = 1


@click.command("prepare-spark")
@click.option(
    "--no-kafka-connector",
    is_flag=True,
    help="Skip fetching the Spark Kafka connector (only needed for kafka://TOPIC sources).",
)
@output_option()
@pass_terminal
def prepare_spark(term: Terminal, no_kafka_connector: bool, output: str) -> None:
    """Compile the Spark event decoder, fetch the Kafka connector and train the driver's class
    archive, each once (cached under ~/.cache/kafka-coop): `report --engine spark` then starts fast
    from its first run."""
    prepared = prepare(kafka_connector=not no_kafka_connector, progress=term.progress)
    if output == "json":
        term.emit_json(PrepareSparkOutput.model_construct(**dict(prepared)))
        return

    def state(made: bool) -> str:
        return "made now" if made else "cached"

    term.out.print(f"Spark jar:            {prepared.decoder_jar}", highlight=False)
    if prepared.kafka_connector is None:
        term.out.print("Kafka connector:      skipped (--no-kafka-connector)", highlight=False)
    else:
        made = state(prepared.kafka_connector_made)
        term.out.print(f"Kafka connector:      {prepared.kafka_connector} ({made})", highlight=False)
    if prepared.class_archive is None:
        term.out.print(
            "Driver class archive: none (this JDK wrote none; reports start without it)", highlight=False
        )
    else:
        made = state(prepared.class_archive_made)
        term.out.print(f"Driver class archive: {prepared.class_archive} ({made})", highlight=False)
