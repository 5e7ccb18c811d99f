"""Shared fixtures: one real Kafka broker (the sandbox) per test session, fleets and topics per test.

There is no skip path: a missing Java, Maven or broker fails the run (README "Tests").
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox import Fleet, Sandbox, free_port

_counter = itertools.count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.fspath)
        if f"{os.sep}integration{os.sep}" in path:
            item.add_marker(pytest.mark.integration)
        elif f"{os.sep}e2e{os.sep}" in path:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    box = Sandbox(dir=tmp_path_factory.mktemp("kafka"), port=free_port())
    box.start()
    try:
        yield box
    finally:
        box.stop()


@pytest.fixture(scope="session")
def bootstrap(sandbox: Sandbox) -> str:
    return sandbox.bootstrap


@pytest.fixture(scope="session")
def admin(bootstrap: str) -> ClusterAdmin:
    return ClusterAdmin(bootstrap)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Names unique across the session, so tests sharing one broker never see each other's groups."""
    run = uuid.uuid4().hex[:6]

    def make(prefix: str) -> str:
        return f"{prefix}-{run}-{next(_counter)}"

    return make


@pytest.fixture
def topic_factory(admin: ClusterAdmin, unique: Callable[[str], str]) -> Callable[[int], str]:
    def make(partitions: int) -> str:
        name = unique("topic")
        admin.ensure_topic(name, partitions)
        return name

    return make


@pytest.fixture
def fleet(bootstrap: str, tmp_path: Path) -> Iterator[Fleet]:
    with Fleet(bootstrap, tmp_path / "fleet") as f:
        yield f
