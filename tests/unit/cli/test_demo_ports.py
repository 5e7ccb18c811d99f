"""`kafka-coop demo --port/--controller-port`: the sandbox the demo starts listens where it is told; a
port for a cluster given with --bootstrap-server is bad input, before anything starts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import CliResult


@pytest.mark.parametrize("option", ["--port", "--controller-port"])
def test_a_sandbox_port_with_a_bootstrap_server_is_exit_2(
    invoke_cli: Callable[..., CliResult], option: str
) -> None:
    result = invoke_cli("demo", "--bootstrap-server", "127.0.0.1:1", option, "19092")
    assert result.code == 2, result.stderr
    assert f"{option} is for the sandbox the demo starts" in result.stderr


def test_a_controller_port_out_of_range_is_exit_2(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli("demo", "--controller-port", "0")
    assert result.code == 2, result.stderr
    assert "--controller-port" in result.stderr
