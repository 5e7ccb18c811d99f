"""The `kafka-coop` command line: parse, call the library, render (installed as kafka_coop.cli)."""

from __future__ import annotations

import sys

from kafka_coop._extras import install_hint, missing
from kafka_coop._lazy import lazy_attributes

# What every command needs; the base install (the consumer, for services) has none of them.
CLI_MODULES = ("click", "rich", "yaml", "kafka")


def run() -> None:
    """The console script: one sentence and exit 2 when the `cli` extra is not installed."""
    absent = missing(CLI_MODULES)
    if absent:
        sys.stderr.write(
            f"Error: the kafka-coop command needs {', '.join(absent)}, which the base install (the "
            f"consumer library) leaves out.\n{install_hint('click')}\n"
        )
        raise SystemExit(2)
    from .main import main  # after the check: main imports click and rich, which may be missing

    main()


# For code that renders outside a command (benchmarks timing a renderer): loaded on first use, since
# the console script must not import click before it has said which extra is missing.
_LAZY: dict[str, str] = {"Terminal": "kafka_coop.cli._context"}


__getattr__ = lazy_attributes(__name__, _LAZY)
