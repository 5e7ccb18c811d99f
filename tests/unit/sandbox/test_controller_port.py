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


def test_the_free_ports_picked_for_the_nodes_controllers_are_all_different(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ports are picked free but bound only when the nodes start, so a pick can repeat an earlier one
    (two nodes of a CI run's 3-node cluster got the same controller port: "Address already in use")."""
    first = free_port()
    picks = iter([first, first, first + 1])
    monkeypatch.setattr("kafka_coop.sandbox._broker.free_ports", lambda count=1: next(picks))
    box = Sandbox(dir=tmp_path, port=free_port(), brokers=2)
    assert box._controller_ports() == {1: first, 2: first + 1}


def test_a_controller_port_is_never_a_nodes_client_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, other = free_port(), free_port()
    picks = iter([client + 1, other, client, other + 1])  # node 2's client port, then node 1's
    monkeypatch.setattr("kafka_coop.sandbox._broker.free_ports", lambda count=1: next(picks))
    box = Sandbox(dir=tmp_path, port=client, brokers=2)
    assert box._controller_ports() == {1: other, 2: other + 1}
