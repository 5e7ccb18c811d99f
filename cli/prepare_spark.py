"""`kafka-coop prepare-spark`: make what the Spark engine needs once, ahead of the first report."""

from __future__ import annotations

import click

from ._context import Ctx, output_option, pass_ctx


@click.command("prepare-spark")
@click.option(
    "--no-kafka-connector",
    is_flag=True,
    help="Skip fetching the Spark Kafka connector (only needed for kafka://TOPIC sources).",
)
@output_option()
@pass_ctx
def prepare_spark(ctx: Ctx, no_kafka_connector: bool, output: str) -> None:
    """Compile the Spark event decoder, fetch the Kafka connector and train the driver's class
    archive, each once (cached under ~/.cache/kafka-coop): `report --engine spark` then starts fast
    from its first run."""
    from kafka_coop.analytics import prepare_spark as prepare

    prepared = prepare(kafka_connector=not no_kafka_connector, progress=ctx.progress)
    if output == "json":
        ctx.emit_json(prepared)
        return

    def state(made: bool) -> str:
        return "made now" if made else "cached"

    ctx.out.print(f"Event decoder:        {prepared.decoder_jar}", highlight=False)
    if prepared.kafka_connector is None:
        ctx.out.print("Kafka connector:      skipped (--no-kafka-connector)", highlight=False)
    else:
        made = state(prepared.kafka_connector_made)
        ctx.out.print(f"Kafka connector:      {prepared.kafka_connector} ({made})", highlight=False)
    if prepared.class_archive is None:
        ctx.out.print(
            "Driver class archive: none (this JDK wrote none; reports start without it)", highlight=False
        )
    else:
        made = state(prepared.class_archive_made)
        ctx.out.print(f"Driver class archive: {prepared.class_archive} ({made})", highlight=False)
