"""The domain's words: one definition each, and the maps between them agree with each other."""

from __future__ import annotations

from typing import get_args

import pytest

from kafka_coop._vocab import (
    ASSIGNOR_PROTOCOL,
    ASSIGNOR_REBALANCE_MODE,
    COOPERATIVE_ASSIGNORS,
    EAGER_ONLY_ASSIGNORS,
    JAVA_ASSIGNOR_CLASSES,
    LIBRDKAFKA_ASSIGNORS,
    REBALANCE_MODE_ASSIGNOR,
    REBALANCE_MODE_PROTOCOL,
    REBALANCE_MODES,
    RebalanceMode,
    connection_conf,
    is_consumer_only,
    mixes_protocols,
    protocol_of,
)


def test_every_rebalance_mode_has_a_protocol_and_every_classic_one_an_assignor() -> None:
    assert get_args(RebalanceMode) == REBALANCE_MODES
    assert set(REBALANCE_MODE_PROTOCOL) == set(REBALANCE_MODES)
    assert set(REBALANCE_MODE_ASSIGNOR) == set(REBALANCE_MODES) - {"consumer"}
    for mode, assignor in REBALANCE_MODE_ASSIGNOR.items():
        assert ASSIGNOR_PROTOCOL[assignor] == REBALANCE_MODE_PROTOCOL[mode]
        assert ASSIGNOR_REBALANCE_MODE[assignor] == mode


def test_assignor_sets_split_the_known_assignors_by_protocol() -> None:
    assert set(JAVA_ASSIGNOR_CLASSES) == COOPERATIVE_ASSIGNORS | EAGER_ONLY_ASSIGNORS
    assert not COOPERATIVE_ASSIGNORS & EAGER_ONLY_ASSIGNORS
    assert set(LIBRDKAFKA_ASSIGNORS) <= set(JAVA_ASSIGNOR_CLASSES)


@pytest.mark.parametrize(
    ("assignors", "protocol", "mixed"),
    [
        (("cooperative-sticky",), "cooperative", False),
        (("range",), "eager", False),
        (("range", "cooperative-sticky"), "eager", True),
        (("sticky", "roundrobin"), "eager", False),
        ((), "eager", False),
    ],
)
def test_a_classic_list_runs_cooperative_only_when_every_assignor_is(
    assignors: tuple[str, ...], protocol: str, mixed: bool
) -> None:
    assert protocol_of(assignors) == protocol
    assert mixes_protocols(assignors) is mixed


def test_connection_conf_keeps_connection_and_security_and_drops_consumer_keys() -> None:
    conf = {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.password": "x",
        "client.id": "ops",
        "group.id": "g",
        "group.instance.id": "i",
        "group.protocol": "consumer",
        "partition.assignment.strategy": "range",
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
        "fetch.min.bytes": "1",
    }
    assert connection_conf(conf) == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.password": "x",
        "client.id": "ops",
    }
    assert not is_consumer_only("ssl.ca.location")
