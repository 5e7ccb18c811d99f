"""The consumers are typed as confluent-kafka's stubs type its consumers: mypy catches a typo."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

SNIPPET = """
from kafka_coop import CoopAIOConsumer, CoopConsumer


def sync(consumer: CoopConsumer) -> None:
    msg = consumer.pol(1.0)
    consumer.mark_done("not a message")
    consumer.commit(asynchronus=False)
    records: list[str] = consumer.consume(10, 1.0)


async def aio(consumer: CoopAIOConsumer) -> None:
    await consumer.consum(10, 1.0)
    await consumer.comit()
"""


def test_mypy_catches_a_misspelt_call_a_wrong_argument_and_a_wrong_result_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checkout on mypy's path: an editable install's import hook (PEP 660) is invisible to mypy.
    monkeypatch.setenv("MYPYPATH", str(Path(__file__).resolve().parents[3]))
    source = tmp_path / "service.py"
    source.write_text(SNIPPET)
    out, _, code = api.run(
        ["--strict", "--no-incremental", "--follow-imports=silent", f"--cache-dir={tmp_path}", str(source)]
    )
    assert code == 1, out
    for expected in (
        'has no attribute "pol"; maybe "poll"?',
        'Argument 1 to "mark_done" of "CoopConsumer" has incompatible type "str"',
        'Unexpected keyword argument "asynchronus"',
        'Incompatible types in assignment (expression has type "list[Message',
        'has no attribute "consum"; maybe "consume"',
        'has no attribute "comit"; maybe "commit"?',
    ):
        assert expected in out, out
