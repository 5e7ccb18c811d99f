"""The public face: `import kafka_coop` is cheap and client-free, and every name in `__all__` resolves."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import kafka_coop

HEAVY = ("confluent_kafka", "click", "rich", "pyspark")


def _loaded_after(code: str) -> list[str]:
    """Top-level packages among HEAVY that `code` loads in a fresh interpreter."""
    probe = (
        f"import json, sys; {code}; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(result.stdout)
    return loaded


def test_import_kafka_coop_loads_no_client_cli_or_terminal_library() -> None:
    assert _loaded_after("import kafka_coop") == []


def test_the_pure_public_names_load_no_client_library() -> None:
    code = "from kafka_coop import ConsumerSettings, RebalanceEvent, JsonlSink, MemorySink, KafkaCoopError"
    assert _loaded_after(code) == []


def test_the_consumers_import_from_the_package_root() -> None:
    from kafka_coop import CoopAIOConsumer, CoopConsumer
    from kafka_coop.consumer import CoopAIOConsumer as AioFromModule
    from kafka_coop.consumer import CoopConsumer as SyncFromModule

    assert CoopConsumer is SyncFromModule
    assert CoopAIOConsumer is AioFromModule


def test_only_touching_a_consumer_loads_confluent_kafka() -> None:
    assert _loaded_after("from kafka_coop import CoopConsumer") == ["confluent_kafka"]


@pytest.mark.parametrize("name", kafka_coop.__all__)
def test_every_name_in_all_resolves(name: str) -> None:
    assert getattr(kafka_coop, name) is not None


def test_all_lists_the_documented_surface() -> None:
    expected = {
        "CoopConsumer",
        "CoopAIOConsumer",
        "ConsumerSettings",
        "RebalanceEvent",
        "EventSink",
        "JsonlSink",
        "KafkaTopicSink",
        "CallableSink",
        "MemorySink",
        "KafkaCoopError",
        "SettingsError",
        "ConsumerFailed",
        "InstanceIdConflict",
        "RebalanceListener",
    }
    assert expected <= set(kafka_coop.__all__)
    assert set(kafka_coop.__all__) == {*kafka_coop._LAZY, "__version__"}, "every lazy name is public"
    assert set(dir(kafka_coop)) >= set(kafka_coop.__all__)


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        kafka_coop.no_such_thing  # noqa: B018
