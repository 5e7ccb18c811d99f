"""`kafka-coop report` input errors: one sentence, the right exit code, nothing written.

None of these cases reaches a broker or Spark, so the command runs in this process (click's CliRunner).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["missing.jsonl"], 2, "No such file or directory"),
        (["empty.jsonl"], 2, "hold no valid rebalance events"),
        (["kafka://events"], 2, "need --bootstrap-server"),
    ],
)
def test_cli_errors_are_one_sentence_with_the_right_exit_code(
    tmp_path: Path, invoke_cli: Callable[..., CliResult], args: list[str], code: int, message: str
) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    args = [str(tmp_path / a) if a.endswith(".jsonl") else a for a in args]
    result = invoke_cli("report", *args, "--out", str(tmp_path / "out"))
    assert result.code == code, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "out").exists(), "a failed run writes nothing"


def test_librdkafka_security_settings_become_spark_kafka_options() -> None:
    from kafka_coop.analytics._kafka_options import java_client_options

    options = java_client_options(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "app",
            "sasl.password": 'p"w',
            "ssl.ca.location": "/tls/ca.pem",
            "ssl.endpoint.identification.algorithm": "none",
        }
    )
    assert options == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="app" password="p\\"w";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/tls/ca.pem",
        "kafka.ssl.endpoint.identification.algorithm": "",
    }


def test_a_sasl_login_the_spark_engine_cannot_translate_is_one_sentence() -> None:
    from kafka_coop.analytics._kafka_options import java_client_options
    from kafka_coop.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"cannot log in with sasl\.mechanism 'OAUTHBEARER'"):
        java_client_options({"sasl.mechanism": "OAUTHBEARER", "sasl.username": "u"})
    assert java_client_options({}) == {}


def test_the_text_report_says_how_much_unavailability_is_bounded_from_a_vanished_owners_last_event(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    """A SIGKILLed member's gap is an upper bound, and the person reading the report is told so."""
    from tests.unit.analytics.test_engine import KILLED_SHARED_CLIENT_ID

    source = tmp_path / "events.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in KILLED_SHARED_CLIENT_ID))
    result = invoke_cli("report", str(source), "--out", str(tmp_path / "out"))
    assert result.code == 0, result.stderr
    assert "117,000 partition-ms in 3 intervals" in result.stdout
    assert "3 from a vanished owner: at most 117,000" in result.stdout
