"""Everything the Spark engine makes once, made ahead: `kafka-coop prepare-spark`.

A first `report --engine spark` otherwise pays for it inside the report: compiling the event decoder
(a few seconds), fetching the Kafka connector from Maven Central (for `kafka://` sources; tens of
seconds), and it never gets the driver's class archive, which only a training run makes (about 25 s,
then about 2 s off every session start). `make setup` runs this for a checkout; a `pip install
'kafka-coop[spark]'` user runs the command once. Each step is skipped when its result is cached, so a
second run returns at once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kafka_coop.analytics._engine import SPARK_HINT
from kafka_coop.analytics._report import spark_available
from kafka_coop.errors import InvalidInput


class SparkPrepared(BaseModel):
    """What `prepare_spark` made or found; `*_made` says whether this run made it."""

    model_config = ConfigDict(frozen=True)

    decoder_jar: Path  # our Spark jar: the decoder and the live step (the name is the v1 schema's)
    kafka_connector: Path | None  # the connector's directory; None when skipped
    kafka_connector_made: bool
    class_archive: Path | None  # None: this JDK wrote none (reports then start without one)
    class_archive_made: bool


def prepare_spark(
    *, kafka_connector: bool = True, progress: Callable[[str], None] | None = None
) -> SparkPrepared:
    """Compile the decoder, fetch the Kafka connector (unless `kafka_connector` is False) and train the
    driver's class archive, each only if not cached yet. Raises InvalidInput without PySpark or a JDK."""
    say = progress or (lambda _message: None)
    if not spark_available():
        raise InvalidInput("The Spark engine needs pyspark, which is not installed.", hint=SPARK_HINT)
    from kafka_coop.analytics._spark import java_options
    from kafka_coop.analytics._spark_cds import archive_path, make_archive
    from kafka_coop.analytics._spark_jars import analytics_jar, cached_kafka_jars, resolve_kafka_jars

    say("Preparing kafka-coop's Spark jar (event decoder, live step)…")
    jar = analytics_jar()
    connector: Path | None = None
    connector_made = False
    if kafka_connector:
        cached = cached_kafka_jars()
        if cached is None:
            say("Fetching the Spark Kafka connector from Maven Central (once, up to a minute)…")
            connector_made = True
        connector = (cached or resolve_kafka_jars())[0].parent
    options = java_options()
    planned = archive_path(options)
    archive_made = planned is not None and not planned.exists()
    if archive_made:
        say("Training the Spark driver's class archive (once, about 25 s)…")
    archive = make_archive(options)
    return SparkPrepared(
        decoder_jar=jar,
        kafka_connector=connector,
        kafka_connector_made=connector_made,
        class_archive=archive,
        class_archive_made=archive_made and archive is not None,
    )
