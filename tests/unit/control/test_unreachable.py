"""The runner's calls on a cluster that does not answer: one sentence, exit 3, no traceback."""

from __future__ import annotations

import pytest

from kafka_coop.control import ControlRecord, publish_control, read_outcomes
from kafka_coop.errors import ClusterUnavailable

NOBODY = {"bootstrap.servers": "127.0.0.1:1"}


def test_publishing_to_an_unreachable_cluster_is_exit_3() -> None:
    record = ControlRecord(plan_id="p", group="g", step=1, phase="1", kind="reconfigure", issued_at_ms=1)
    with pytest.raises(ClusterUnavailable) as raised:
        publish_control(NOBODY, record, timeout_s=0.5)
    assert raised.value.exit_code == 3
    assert "127.0.0.1:1" in str(raised.value)


def test_reading_answers_from_an_unreachable_cluster_is_exit_3() -> None:
    with pytest.raises(ClusterUnavailable) as raised:
        read_outcomes(NOBODY, "g", "p", 1, timeout_s=0.5)
    assert raised.value.exit_code == 3
