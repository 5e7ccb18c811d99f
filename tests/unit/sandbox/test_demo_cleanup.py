"""The demo's clean-up note, when the cluster is gone before the demo removed what it made."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kafka_coop.errors import ClusterUnavailable
from kafka_coop.sandbox._demo import _remove_what_it_made


class _GoneAdmin:
    def describe_group(self, *_args: Any, **_kwargs: Any) -> Any:
        raise ClusterUnavailable("Could not reach the Kafka cluster at 127.0.0.1:1.")


def _processes() -> Any:
    return SimpleNamespace(stop_all=lambda **_k: None, admin=_GoneAdmin(), bootstrap="127.0.0.1:1", conf={})


def test_a_demo_that_made_no_topic_names_only_its_group_when_the_cluster_is_gone() -> None:
    (note,) = _remove_what_it_made(_processes(), "demo-g", [])
    assert note.startswith("the demo's group demo-g was not removed: Could not reach")


def test_a_demo_that_made_topics_names_them_when_the_cluster_is_gone() -> None:
    (note,) = _remove_what_it_made(_processes(), "demo-g", ["orders", "_kafka_coop_manifests"])
    assert note.startswith("the demo's group demo-g and topics orders, _kafka_coop_manifests were not")
