"""Looking at a live group the way a user does, through the CLI, in integration tests."""

from __future__ import annotations

from collections.abc import Callable

from kafka_coop.inspection import GroupSnapshot
from tests.conftest import CliResult


def snapshot_via_cli(run_cli: Callable[..., CliResult], bootstrap: str, group: str) -> GroupSnapshot:
    """`describe GROUP -o json`, read back into the snapshot it printed (it must succeed)."""
    result = run_cli("describe", group, "--bootstrap-server", bootstrap, "-o", "json")
    assert result.code == 0, result.stderr
    return GroupSnapshot.model_validate(result.json())
