"""What every report engine hands the shell, and the names of what it writes.

Both engines (the pure-Python reference in `_report`, PySpark in `_spark`) build an `EngineOutcome`;
keeping the contract here lets the shell load the Spark engine lazily without the two modules
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kafka_coop.analytics._model import Malformed, Summary
from kafka_coop.analytics._timeline import LevelChange

INTERVALS_TABLE: Final = "intervals"
PAUSES_TABLE: Final = "pauses"
MAX_MALFORMED_KEPT: Final = 10_000
SPARK_HINT: Final = "Install the Spark extra: pip install 'kafka-coop[spark]' (PySpark, Java 17+)."


@dataclass
class EngineOutcome:
    """What an engine hands back to the shell."""

    summary: Summary
    malformed: list[Malformed]
    unowned: list[LevelChange]
    paused: list[LevelChange]
