"""`ClusterAdmin.settled_topic`: a topic just created is read once the broker asked shows it.

CreateTopics returns when the controller has the topic; under load the broker asked next showed neither
its metadata nor its configs yet, and `manifest-topic` called that an ACL problem (CI runs S and Q, exit
3). Not reproduced on demand: the broker's lag is stood in for here.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_coop.admin import ClusterAdmin


def lagging(*answers: object) -> Iterator[object]:
    yield from answers
    while True:
        yield answers[-1]


def test_a_topic_just_created_is_read_once_the_broker_shows_it() -> None:
    admin = ClusterAdmin("127.0.0.1:1")
    layouts = lagging(None, None, (1, 3))
    configs = lagging(None, {"cleanup.policy": "compact"})
    admin.topic_layout = lambda topic, **_: next(layouts)  # type: ignore[method-assign]
    admin.topic_config = lambda topic, **_: next(configs)  # type: ignore[method-assign]
    assert admin.settled_topic("m", timeout_s=5.0, every_s=0.01) == ((1, 3), {"cleanup.policy": "compact"})


def test_a_topic_the_broker_never_shows_is_none_after_the_timeout() -> None:
    admin = ClusterAdmin("127.0.0.1:1")
    admin.topic_layout = lambda topic, **_: None  # type: ignore[method-assign]
    assert admin.settled_topic("m", timeout_s=0.1, every_s=0.01) is None
