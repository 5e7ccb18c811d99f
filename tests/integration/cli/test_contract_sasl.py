"""A refused login is one sentence and exit 3, for every command that logs in: the SASL_SSL sandbox with a
wrong password (the rest of the CLI's error contract is test_contract.py)."""

from __future__ import annotations

import pytest

from kafka_coop.sandbox import Sandbox
from tests.conftest import SASL_GROUP, SECURE_CANARIES
from tests.integration.cli._contract import assert_one_sentence, cli_argv, run

# The SASL_SSL sandbox is started by the one worker that runs its group (test_security.py is in it too).
pytestmark = pytest.mark.xdist_group(SASL_GROUP)

# --- refused login: the SASL_SSL sandbox, a wrong password -----------------------------------------
LOGIN = (
    ("describe", "describe app-orders"),
    ("describe-all", "describe --all"),
    ("verify-group", "verify-group app-orders"),
    ("upgrade-plan", "upgrade-plan app-orders --to cooperative"),
    ("downgrade-plan", "downgrade-plan app-orders --to eager"),
    ("remove-members", "remove-members app-orders --all-static"),
)


@pytest.fixture(scope="module")
def wrong_login(secure_sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    app = secure_sandbox.properties_path("app")
    assert app is not None
    wrong = tmp_path_factory.mktemp("login") / "wrong.properties"
    text = app.read_text()
    password = next(line for line in text.splitlines() if line.startswith("sasl.password="))
    wrong.write_text(text.replace(password, "sasl.password=not-the-password"))
    return {"bootstrap": secure_sandbox.bootstrap, "wrong": str(wrong), "tmp": str(wrong.parent)}


@pytest.mark.parametrize(("name", "argv"), LOGIN, ids=[name for name, _ in LOGIN])
def test_a_refused_login_is_one_sentence_and_exit_3(
    wrong_login: dict[str, str], name: str, argv: str
) -> None:
    ran = run(
        cli_argv(
            f"{argv} --bootstrap-server {{bootstrap}} --command-config {{wrong}} --timeout 5", wrong_login
        )
    )
    assert ran.code == 3, ran.why()
    assert_one_sentence(ran, "Authentication to the Kafka cluster at .* failed")
    assert ran.seconds < 30, ran.why()


@pytest.mark.parametrize(
    "argv",
    [
        "manifest-topic --bootstrap-server {bootstrap} --command-config {wrong}",
        "report kafka://app-orders --bootstrap-server {bootstrap} --command-config {wrong} --out {tmp}/r",
        "demo --bootstrap-server {bootstrap} --command-config {wrong} --no-report",
    ],
    ids=["manifest-topic", "report-kafka", "demo"],
)
def test_a_refused_login_without_timeout_option_is_exit_3_too(wrong_login: dict[str, str], argv: str) -> None:
    ran = run(cli_argv(argv, wrong_login))
    assert ran.code == 3, ran.why()
    assert_one_sentence(ran, "Authentication|reach|answer")
    assert ran.seconds < 60, ran.why()


# --- told at once: the login, the security protocol ------------------------------------------------
AT_ONCE_S = 2.0  # more than a command that fails before it connects (the start of a Python process)


def _process_start_s(argv: str) -> float:
    """The same command failing before it connects (a host without a port: exit 2), timed right before
    the run it is the baseline of, so both see the same machine load (CI's two cores are busy)."""
    return min(run(cli_argv(f"{argv} --bootstrap-server localhost", {})).seconds for _ in range(2))


@pytest.mark.parametrize(("name", "argv"), LOGIN, ids=[name for name, _ in LOGIN])
def test_a_refused_login_is_told_at_once_whatever_the_timeout(
    wrong_login: dict[str, str], name: str, argv: str
) -> None:
    """librdkafka knows after the SCRAM exchange (~0.3 s); --timeout 30 must not make it wait."""
    process_start_s = _process_start_s(argv)
    ran = run(
        cli_argv(
            f"{argv} --bootstrap-server {{bootstrap}} --command-config {{wrong}} --timeout 30", wrong_login
        )
    )
    assert ran.code == 3, ran.why()
    assert_one_sentence(ran, "Authentication to the Kafka cluster at .* failed .*invalid credentials")
    assert ran.seconds < process_start_s + AT_ONCE_S, f"baseline {process_start_s:.2f}s\n{ran.why()}"


def test_a_plaintext_client_at_the_sasl_ssl_listener_is_told_the_security_protocol(
    wrong_login: dict[str, str],
) -> None:
    process_start_s = _process_start_s("describe app-orders")
    ran = run(cli_argv("describe app-orders --bootstrap-server {bootstrap}", wrong_login))
    assert ran.code == 3, ran.why()
    assert_one_sentence(
        ran,
        "The broker at .* closed the connection before answering a PLAINTEXT client: its listener speaks "
        "another security.protocol",
    )
    assert "Hint: Set security.protocol" in ran.stderr
    assert ran.seconds < process_start_s + AT_ONCE_S, f"baseline {process_start_s:.2f}s\n{ran.why()}"


def test_a_refused_login_under_json_is_the_error_object_without_any_password(
    wrong_login: dict[str, str], secure_sandbox: Sandbox
) -> None:
    import json

    ran = run(
        cli_argv(
            "verify-group app-orders --bootstrap-server {bootstrap} --command-config {wrong} -o json",
            wrong_login,
        )
    )
    assert ran.code == 3, ran.why()
    error = json.loads(ran.stdout)
    assert (error["kind"], error["error"]["meaning"]) == ("error", "cluster")
    assert error["error"]["message"].startswith("Authentication to the Kafka cluster at")
    for secret in ("not-the-password", *SECURE_CANARIES.values()):
        assert secret not in ran.stdout + ran.stderr
