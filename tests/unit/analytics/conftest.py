"""The JVM step's replay process, one per test session (each pytest-xdist worker starts its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.analytics.jvm_replay import StepReplay


@pytest.fixture(scope="session")
def step_replay() -> Iterator[StepReplay]:
    replay = StepReplay()
    yield replay
    replay.close()
