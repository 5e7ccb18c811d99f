"""`kafka-coop consume` refuses a config librdkafka would refuse, before it joins anything.

The refusal happens while the settings are validated, so no broker is needed: the command runs in this
process (click's CliRunner) against an address that is never contacted.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import CliResult


def test_consume_with_a_mixed_assignor_list_is_refused_with_one_sentence_and_exit_2(
    invoke_cli: Callable[..., CliResult],
) -> None:
    result = invoke_cli(
        "consume",
        "g",
        "t",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--conf",
        "partition.assignment.strategy=range,cooperative-sticky",
    )
    assert result.code == 2
    assert "Traceback" not in result.stderr
    assert "upgrade-plan" in result.stderr
