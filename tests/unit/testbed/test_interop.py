"""Building the other families' test-bed members: a missing toolchain is an error, never a skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_coop.errors import InvalidInput
from testbed import interop as _interop


@pytest.mark.parametrize(("kind", "tool"), [("franz-go", "go"), ("kafkajs", "node")])
def test_a_missing_toolchain_names_what_to_install(
    kind: str, tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_interop, "_BUILT", {})
    monkeypatch.setattr(_interop, "_WELL_KNOWN", {})
    with pytest.raises(InvalidInput, match=f"{tool} was not found on PATH") as err:
        _interop.member_command(kind, cache=tmp_path)
    assert "make setup" in (err.value.hint or "")
    assert not (tmp_path / "interop").exists(), "nothing half-built is left behind"


def test_an_unknown_member_kind_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="known: java, python, kafka-python, aiokafka"):
        _interop.member_command("rust-rdkafka", cache=tmp_path)
