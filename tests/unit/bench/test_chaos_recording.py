"""What the chaos run records about its broker: the Kafka version and the KIP-1263 assignment interval,
read with the bed's own client settings (the bed may be a sasl_ssl sandbox that refuses a plaintext
admin). Fakes stand in for the sandbox and the admin: no broker here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import pytest

import bench.chaos as chaos
import bench.harness.frame as frame
from bench.harness.frame import BenchResult, Machine, Versions

SASL_CONF = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u"}


class FakeBox:
    bootstrap = "localhost:9092"
    kafka_version = "4.4.0"

    def client_conf(self) -> dict[str, str]:
        return dict(SASL_CONF)


class FakeAdmin:
    seen: list[tuple[str, Mapping[str, str] | None]] = []

    def __init__(self, bootstrap: str, conf: Mapping[str, str] | None = None) -> None:
        FakeAdmin.seen.append((bootstrap, conf))

    def broker_configs(self) -> tuple[int, dict[str, str]]:
        return 1, {"group.consumer.assignment.interval.ms": "1000"}


def blank_result() -> BenchResult:
    return BenchResult(
        name="chaos",
        title="Chaos",
        started=dt.datetime(2026, 12, 2, tzinfo=dt.UTC),
        machine=Machine(cores=2, platform="Linux", python_implementation="CPython"),
        versions=Versions(python="3.11.7"),
    )


@pytest.fixture
def fake_admin(monkeypatch: pytest.MonkeyPatch) -> type[FakeAdmin]:
    import kafka_coop.admin

    FakeAdmin.seen = []
    monkeypatch.setattr(kafka_coop.admin, "ClusterAdmin", FakeAdmin)
    monkeypatch.setattr(frame, "java_version", lambda: "17.0.15")
    return FakeAdmin


def test_assignment_interval_is_read_with_the_given_client_settings(fake_admin: type[FakeAdmin]) -> None:
    assert frame.assignment_interval_ms("localhost:9092", SASL_CONF) == 1000
    assert fake_admin.seen == [("localhost:9092", SASL_CONF)]


def test_chaos_records_the_broker_version_and_interval_over_the_beds_security(
    fake_admin: type[FakeAdmin],
) -> None:
    result = blank_result()
    chaos.record_broker(result, FakeBox())
    assert result.versions.kafka == "4.4.0"
    assert result.versions.java == "17.0.15"
    assert result.parameters["assignment_interval_ms"] == 1000
    assert fake_admin.seen == [("localhost:9092", SASL_CONF)]
