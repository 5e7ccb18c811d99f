"""`sandbox start --controller-port`: the KRaft controller listens where it is told (issue 27: it
opened an undocumented random port), and a port that cannot be used is one sentence."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kafka_coop.errors import InvalidInput
from kafka_coop.sandbox import Sandbox, free_port


def test_a_given_controller_port_is_the_one_each_node_gets_from(tmp_path: Path) -> None:
    port = free_port()
    box = Sandbox(dir=tmp_path, port=free_port(), controller_port=port)
    assert box._controller_ports() == {1: port}


def test_a_controller_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        box = Sandbox(dir=tmp_path, port=free_port(), controller_port=port)
        with pytest.raises(InvalidInput, match=f"Controller port {port} on 127.0.0.1 is already in use"):
            box._controller_ports()


def test_a_controller_port_outside_the_range_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="Controller port 70000 is outside 1-65535"):
        Sandbox(dir=tmp_path, port=free_port(), controller_port=70000)
