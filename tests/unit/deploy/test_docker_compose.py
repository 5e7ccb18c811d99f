"""docker-compose.yml offers the same broker as the sandbox: same Kafka version, same listener port."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kafka_coop.sandbox import DEFAULT_KAFKA_VERSION, DEFAULT_PORT

COMPOSE = Path(__file__).resolve().parents[3] / "docker-compose.yml"


def _kafka_service() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]["kafka"]


def test_compose_runs_the_sandbox_kafka_version() -> None:
    assert _kafka_service()["image"] == f"apache/kafka:{DEFAULT_KAFKA_VERSION}"


def test_compose_publishes_the_sandbox_port_on_loopback_only() -> None:
    assert _kafka_service()["ports"] == [f"127.0.0.1:{DEFAULT_PORT}:{DEFAULT_PORT}"]


def test_compose_advertises_the_same_bootstrap_as_the_sandbox() -> None:
    env = _kafka_service()["environment"]
    assert env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://127.0.0.1:{DEFAULT_PORT}"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
