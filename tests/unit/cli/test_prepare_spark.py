"""`kafka-coop prepare-spark` without the Spark extra: one sentence saying what to install, exit 2."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import CliResult


def test_prepare_spark_without_pyspark_says_what_to_install_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, invoke_cli: Callable[..., CliResult]
) -> None:
    from kafka_coop.analytics import _prepare

    monkeypatch.setattr(_prepare, "spark_available", lambda: False)
    result = invoke_cli("prepare-spark")
    assert result.code == 2
    assert "needs pyspark, which is not installed" in result.stderr
    assert "pip install 'kafka-coop[spark]'" in result.stderr
    assert result.stdout == ""
