"""The checkpoint records the step's state format so that a restart with another one is refused in one
sentence; the number it records must be the one the JVM step writes."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark  # imports the pipeline's shell (PySpark)

GROUP_STEP = Path(__file__).resolve().parents[3] / "kafka_coop" / "analytics" / "java" / "GroupStep.java"


def test_the_checkpoint_records_the_state_format_the_jvm_step_writes() -> None:
    from kafka_coop.analytics._pipeline import STATE_FORMAT

    written = re.search(r"public static final int STATE_FORMAT = (\d+);", GROUP_STEP.read_text())
    assert written is not None
    assert int(written.group(1)) == STATE_FORMAT
