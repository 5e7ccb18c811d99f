"""`kafka-coop pipeline run`: the live pipeline, a Spark Structured Streaming job from the events topic
to Parquet (`kafka_coop.analytics._pipeline`); this module only parses and renders."""

from __future__ import annotations

import re
from pathlib import Path

import click
from rich.text import Text

from kafka_coop._vocab import connection_conf
from kafka_coop.errors import InvalidInput

from ._context import Terminal, bootstrap_option, check_resolves, command_config_option, pass_terminal

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0}


def seconds(value: str, what: str) -> float:
    """`5s`, `500ms`, `1m` or a bare number of seconds; anything else is one sentence (exit 2)."""
    match = _DURATION.match(value)
    if match is None or float(match.group(1)) <= 0:
        raise InvalidInput(
            f"{what} {value!r} is not a positive duration.", hint="Write it as 5s, 500ms or 1m."
        )
    return float(match.group(1)) * _SCALE[match.group(2) or "s"]


def topic_of(source: str) -> str:
    if not source.startswith("kafka://") or not source[len("kafka://") :].strip("/"):
        raise InvalidInput(
            f"{source!r} is not an events topic.",
            hint="Name it kafka://EVENTS_TOPIC (the KafkaTopicSink's topic).",
        )
    return source[len("kafka://") :].strip("/")


@click.group()
def pipeline() -> None:
    """The live pipeline: fleet-wide rebalance figures from the events topic, as they happen."""


@pipeline.command("run")
@click.argument("source", metavar="kafka://EVENTS_TOPIC")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Parquet output directory (partitioned by group and date); `report` reads it.",
)
@click.option(
    "--checkpoint",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Checkpoint directory; a restart resumes from it (default: OUT/_checkpoint).",
)
@click.option("--master", default=None, metavar="URL", help="Spark master URL (default local[*]).")
@click.option("--trigger", default="5s", show_default=True, help="Micro-batch interval.")
@click.option("--watermark", default="2s", show_default=True, help="How long events wait for late ones.")
@click.option("--window", default="1m", show_default=True, help="Window of the per-group figures.")
@click.option(
    "--idle",
    default="10s",
    show_default=True,
    help="How long a partition that brings a group nothing holds the group's event-time clock back.",
)
@click.option(
    "--figures-topic",
    default=None,
    metavar="TOPIC",
    help="Also keep the current figures on this compacted Kafka topic (made if missing).",
)
@bootstrap_option()
@command_config_option()
@pass_terminal
def run(
    term: Terminal,
    source: str,
    out_dir: Path,
    checkpoint: Path | None,
    master: str | None,
    trigger: str,
    watermark: str,
    window: str,
    idle: str,
    figures_topic: str | None,
    bootstrap: str,
    command_config: Path | None,
) -> None:
    """Run the pipeline until Ctrl-C or SIGTERM (exit 130 / 0); the checkpoint stays consistent."""
    from kafka_coop.analytics import PipelineConfig, run_pipeline  # lazy: PySpark (~1.5 s)
    from kafka_coop.settings import read_properties  # lazy: pipeline --help: ~0.1 s

    config = PipelineConfig(
        topic=topic_of(source),
        out=out_dir,
        checkpoint=checkpoint if checkpoint is not None else out_dir / "_checkpoint",
        bootstrap=bootstrap,
        kafka_conf=connection_conf(read_properties(command_config)) if command_config is not None else {},
        master=master,
        trigger_s=seconds(trigger, "--trigger"),
        watermark_ms=int(seconds(watermark, "--watermark") * 1000),
        window_ms=int(seconds(window, "--window") * 1000),
        idle_ms=int(seconds(idle, "--idle") * 1000),
        figures_topic=figures_topic,
    )
    term.progress(f"Starting the pipeline over {source} (Spark {master or 'local[*]'})…")
    check_resolves(bootstrap)
    publisher = None
    if figures_topic is not None:
        from kafka_coop.analytics import FiguresPublisher  # lazy: PySpark (~1 s)

        publisher = FiguresPublisher(config.out, figures_topic, bootstrap, config.kafka_conf)

    def batch_done(batch: int, _batch_time_ms: int) -> None:
        term.err.print(Text(f"batch {batch} committed", style="dim"), highlight=False)
        if publisher is not None:
            publisher.publish()

    result = run_pipeline(config, on_batch=batch_done)
    if publisher is not None:
        publisher.publish()  # the batch that committed while the query stopped
    term.err.print(
        Text(f"stopped ({result.stopped_by}) after {result.batches} batch(es); resume with the same command"),
        highlight=False,
    )
    if result.interrupted:
        raise SystemExit(130)
