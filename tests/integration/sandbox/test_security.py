"""Every command against a SASL_SSL (SCRAM-SHA-512 over TLS) sandbox with ACLs, as a restricted user.

The sandbox's user passwords are canaries: no output, JSON, markdown plan, event, manifest or log of any
command may contain them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, MANIFEST_TOPIC_CONFIG
from kafka_coop.sandbox import Sandbox
from kafka_coop.sandbox.testing import read_events
from tests.conftest import SASL_GROUP, SECURE_CANARIES

CANARIES = SECURE_CANARIES
TOPIC, GROUP = "app-orders", "app-billing"


class Seen:
    """Everything the commands of this module wrote, for the canary check at the end."""

    texts: list[str] = []
    files: list[Path] = []


def _run(*args: str, timeout: float = 180) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_coop.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        check=False,
    )
    Seen.texts += [proc.stdout, proc.stderr]
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, time.monotonic() - began


pytestmark = pytest.mark.xdist_group(SASL_GROUP)


@pytest.fixture(scope="module")
def secure(secure_sandbox: Sandbox) -> Iterator[Sandbox]:
    box = secure_sandbox
    admin = box.admin()
    admin.ensure_topic(TOPIC, 3)
    admin.ensure_topic("restricted-elsewhere", 1)
    admin.ensure_topic(DEFAULT_MANIFEST_TOPIC, 1, config=MANIFEST_TOPIC_CONFIG)
    try:
        yield box
    finally:
        Seen.files += [Path(box.log_path)]


@pytest.fixture(scope="module")
def member(secure: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A `kafka-coop consume` member of GROUP as the restricted user; yields its events file."""
    work = tmp_path_factory.mktemp("member")
    events, log = work / "events.jsonl", work / "member.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kafka_coop.cli",
                "consume",
                GROUP,
                TOPIC,
                "--bootstrap-server",
                secure.bootstrap,
                "--command-config",
                str(secure.properties_path("app")),
                "--events",
                str(events),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while not any(e["kind"] == "assigned" for e in read_events(events)) and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.3)
        assert any(e["kind"] == "assigned" for e in read_events(events)), log.read_text()
        yield events
    finally:
        proc.terminate()
        proc.wait(30)
        Seen.files += [events, log]


def _app(secure: Sandbox) -> list[str]:
    return ["--bootstrap-server", secure.bootstrap, "--command-config", str(secure.properties_path("app"))]


def test_status_names_the_client_properties_files(secure: Sandbox) -> None:
    result, _ = _run("sandbox", "status", "--dir", str(secure.dir), "-o", "json")
    assert result.returncode == 0
    state = json.loads(result.stdout)
    assert state["security"] == "sasl_ssl"
    assert set(state["client_properties"]) == {"admin", "app"}
    props = Path(state["client_properties"]["app"]).read_text()
    assert "security.protocol=SASL_SSL" in props and "sasl.mechanism=SCRAM-SHA-512" in props
    assert oct(Path(state["client_properties"]["app"]).stat().st_mode & 0o777) == "0o600"
    _run("sandbox", "status", "--dir", str(secure.dir))


def test_each_nodes_server_properties_holds_the_admin_password_and_is_its_owners_only(
    secure: Sandbox,
) -> None:
    """docs/sandbox.md says so: the broker's own login (admin) and the keystore passwords are in it."""
    for node in secure.node_ids:
        path = secure.node_dir(node) / "server.properties"
        assert oct(path.stat().st_mode & 0o777) == "0o600", path
        text = path.read_text()
        assert CANARIES["admin"] in text and "ssl.keystore.password=" in text


def test_describe_as_the_restricted_user_shows_the_member(secure: Sandbox, member: Path) -> None:
    result, _ = _run("describe", GROUP, *_app(secure), "-o", "json")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["members"]) == 1
    _run("describe", GROUP, *_app(secure))


def test_verify_group_as_the_restricted_user_gives_a_verdict(secure: Sandbox, member: Path) -> None:
    result, _ = _run("verify-group", GROUP, *_app(secure), "--expect-members", "1", "-o", "json")
    assert result.returncode in (0, 1), result.stderr
    checks = {c["name"]: c["status"] for c in json.loads(result.stdout)["checks"]}
    assert checks, result.stdout


@pytest.mark.parametrize("output", ["json", "markdown", "table"])
def test_upgrade_plan_live_as_the_restricted_user(secure: Sandbox, member: Path, output: str) -> None:
    result, _ = _run("upgrade-plan", GROUP, "--to", "consumer", *_app(secure), "-o", output)
    assert result.returncode in (0, 1), result.stderr
    if output == "json":
        assert json.loads(result.stdout)["group"] == GROUP


def test_wrong_password_is_one_sentence_and_exit_3_within_the_timeout(
    secure: Sandbox, tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong.properties"
    text = Path(str(secure.properties_path("app"))).read_text()
    wrong.write_text(text.replace(CANARIES["app"], "not-the-password"))
    for command in (["describe", GROUP], ["verify-group", GROUP]):
        result, took = _run(
            *command, "--bootstrap-server", secure.bootstrap, "--command-config", str(wrong), "--timeout", "8"
        )
        assert result.returncode == 3, (command, result.stdout, result.stderr)
        assert "Authentication to the Kafka cluster" in result.stderr, result.stderr
        assert took < 40, f"{command[0]} took {took:.0f}s"


def test_a_group_without_describe_acl_names_the_operation_and_the_group(secure: Sandbox) -> None:
    result, _ = _run("describe", "payments", *_app(secure), "--timeout", "15")
    assert result.returncode == 3, result.stderr
    assert "Not authorized to DESCRIBE group 'payments'" in result.stderr
    result, _ = _run("verify-group", "payments", *_app(secure), "--timeout", "15")
    assert result.returncode == 3, result.stderr
    assert "Not authorized to DESCRIBE group 'payments'" in result.stderr


def test_the_coordinators_view_is_read_over_sasl_ssl_as_the_restricted_user(
    secure: Sandbox, tmp_path: Path
) -> None:
    """ConsumerGroupDescribe goes through kafka-python with the same --command-config (SCRAM over TLS)."""
    group, events = "app-kip848", tmp_path / "kip848.jsonl"
    argv = [sys.executable, "-m", "kafka_coop.cli", "consume", group, TOPIC, *_app(secure)]
    proc = subprocess.Popen(
        [*argv, "--rebalance", "consumer", "--events", str(events)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while not any(e["kind"] == "assigned" for e in read_events(events)) and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.3)
        result, _ = _run("describe", group, *_app(secure), "-o", "json")
        assert result.returncode == 0, result.stderr
        snap = json.loads(result.stdout)
        assert snap["coordinator_view"]["api"] == "ConsumerGroupDescribe v1", snap["coordinator_view"]
        ((member_type),) = [m["member_type"] for m in snap["members"]]
        assert (member_type["value"], member_type["source"]) == ("consumer", "broker")
        assert snap["broker"]["group_version"]["source"] == "broker"
    finally:
        proc.terminate()
        proc.wait(30)
        Seen.files += [events]


def test_remove_members_over_sasl_ssl_as_the_restricted_user_removes_a_stopped_static_member(
    secure: Sandbox, tmp_path: Path
) -> None:
    """kafka-python (remove-members' client) takes the same --command-config as every other command."""
    group, events = "app-static", tmp_path / "static.jsonl"
    argv = [sys.executable, "-m", "kafka_coop.cli", "consume", group, TOPIC, *_app(secure)]
    proc = subprocess.Popen(
        [*argv, "--instance-id", "app-s0", "--events", str(events)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 90
    while not any(e["kind"] == "assigned" for e in read_events(events)) and time.monotonic() < deadline:
        time.sleep(0.3)
    proc.terminate()
    assert proc.wait(30) == 0
    Seen.files += [events]
    result, _ = _run("remove-members", group, *_app(secure), "--instance-id", "app-s0", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["removed"] == ["app-s0"]


def test_remove_members_on_a_group_the_user_may_not_touch_is_exit_3(secure: Sandbox) -> None:
    result, _ = _run("remove-members", "payments", *_app(secure), "--all-static", "--timeout", "15")
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("Error:") == 1 and "Not authorized" in result.stderr


def test_manifest_topic_as_a_user_without_create_is_one_sentence(secure: Sandbox) -> None:
    result, _ = _run("manifest-topic", *_app(secure), "--topic", "elsewhere-manifests")
    assert result.returncode == 3, result.stderr
    assert "Not authorized to create topic 'elsewhere-manifests'" in result.stderr
    there, _ = _run("manifest-topic", *_app(secure))  # exists; app may describe it, not its configs
    assert there.returncode == 3, there.stderr
    assert "Topic '_kafka_coop_manifests' exists but this principal may not describe" in there.stderr


@pytest.mark.parametrize(
    ("target", "output"), [("eager", "json"), ("eager", "markdown"), ("classic", "table")]
)
def test_downgrade_plan_live_as_the_restricted_user(
    secure: Sandbox, member: Path, target: str, output: str
) -> None:
    result, _ = _run("downgrade-plan", GROUP, "--to", target, *_app(secure), "-o", output)
    assert result.returncode in (0, 1), result.stderr
    if output == "json":
        plan = json.loads(result.stdout)
        assert plan["group"] == GROUP and plan["fleet"]["members"] == 1
        assert plan["fleet"]["source"] == "live"


def _admin_member(secure: Sandbox, group: str, topic: str, events: Path) -> subprocess.Popen[bytes]:
    """A member as the super user: a group the restricted user may describe, on a topic it may not."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "kafka_coop.cli", "consume", group, topic),
            *(
                "--bootstrap-server",
                secure.bootstrap,
                "--command-config",
                str(secure.properties_path("admin")),
            ),
            *("--events", str(events), "--no-manifests"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )


def test_a_group_on_a_topic_without_describe_acl_names_the_operation_and_the_topic(
    secure: Sandbox, tmp_path: Path
) -> None:
    """app may DESCRIBE the group (app-*) but not its topic: its committed offsets come back filtered
    (Kafka drops what the principal may not see), which must not read as "no commits yet"."""
    from confluent_kafka import Producer

    group, topic, events = "app-foreign", "restricted-elsewhere", tmp_path / "foreign.jsonl"
    proc = _admin_member(secure, group, topic, events)
    try:
        producer = Producer({"bootstrap.servers": secure.bootstrap, **secure.client_conf("admin")})
        for i in range(20):
            producer.produce(topic, f"r{i}".encode())
        assert producer.flush(30) == 0
        del producer  # no client left to retry a stopped sandbox at teardown
        admin = secure.admin()
        deadline = time.monotonic() + 90
        while not any(o.committed for o in admin.offsets(group, timeout_s=15)):
            assert proc.poll() is None and time.monotonic() < deadline, "the member committed nothing"
            time.sleep(0.5)
        for command in (["describe", group], ["verify-group", group, "--lag-window", "0"]):
            result, took = _run(*command, *_app(secure), "--timeout", "15", "-o", "json")
            assert result.returncode == 3, (command, result.stdout, result.stderr)
            error = json.loads(result.stdout)  # no verdict or snapshot on missing data: the error object
            assert (error["kind"], error["error"]["exit_code"]) == ("error", 3), result.stdout
            assert f"Not authorized to DESCRIBE topic '{topic}'" in result.stderr, result.stderr
            assert result.stderr.count("Error:") == 1
            assert took < 60
    finally:
        proc.terminate()
        proc.wait(30)
        Seen.files += [events]


@pytest.fixture(scope="module")
def events_topic(secure: Sandbox, member: Path) -> tuple[str, int]:
    """The member's RebalanceEvent lines on a topic the restricted user may read (app-*)."""
    from confluent_kafka import Producer

    topic = "app-rebalance-events"
    secure.admin().ensure_topic(topic, 1)
    lines = [line for line in member.read_text().splitlines() if line.strip()]
    producer = Producer({"bootstrap.servers": secure.bootstrap, **secure.client_conf("admin")})
    for line in lines:
        producer.produce(topic, line.encode())
    assert producer.flush(30) == 0
    return topic, len(lines)


def test_report_of_an_events_topic_as_the_restricted_user(
    secure: Sandbox, events_topic: tuple[str, int], tmp_path: Path
) -> None:
    """The python engine here; the spark engine gets the same settings as Java client options
    (tests/unit/cli/test_report.py), kept out of this module for CI time (a Spark start is ~30-50 s)."""
    topic, produced = events_topic
    out = tmp_path / "report"
    result, _ = _run(
        "report", f"kafka://{topic}", *_app(secure), "--engine", "python", "--out", str(out), "-o", "json"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["events"] == produced
    Seen.files += [p for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]


def test_report_of_a_topic_without_describe_acl_is_one_sentence_and_exit_3(
    secure: Sandbox, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    result, _ = _run(
        "report", "kafka://restricted-elsewhere", *_app(secure), "--engine", "python", "--out", str(out)
    )
    assert result.returncode == 3, result.stderr
    assert "Not authorized to DESCRIBE topic 'restricted-elsewhere'" in result.stderr
    assert result.stderr.count("Error:") == 1 and not out.exists()


def test_demo_walks_its_upgrade_and_back_over_sasl_ssl_losing_nothing(secure: Sandbox) -> None:
    """The demo as the super user (its kafka-coop-demo-* names are outside the restricted user's ACLs):
    members, producer, every look and every printed gate go through --command-config."""
    result, _ = _run(
        "demo",
        "--bootstrap-server",
        secure.bootstrap,
        "--command-config",
        str(secure.properties_path("admin")),
        *("--members", "2", "--partitions", "2", "--no-report", "-o", "json"),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    demo = json.loads(result.stdout)
    assert [p["migration"] for p in demo["plans"]] == [
        "eager-to-cooperative-cutover",
        "cooperative-to-eager-cutover",
    ]
    assert demo["records"]["produced"] > 0 and demo["records"]["lost"] == 0
    assert "gate PASS" in result.stderr and "--command-config" in result.stderr
    workdir = Path(demo["workdir"])
    Seen.files += [p for p in workdir.rglob("*") if p.is_file()]


def test_no_canary_password_appears_in_any_output_event_manifest_or_log(
    secure: Sandbox, member: Path, tmp_path: Path
) -> None:
    # the manifests the member published, read back as the super user
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": secure.bootstrap,
            "group.id": "canary-reader",
            "enable.auto.commit": False,
            **secure.client_conf("admin"),
        }
    )
    consumer.assign([TopicPartition(DEFAULT_MANIFEST_TOPIC, 0, 0)])
    manifests = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error() and msg.value():
            manifests.append(msg.value().decode())
            break
    consumer.close()
    assert manifests, "the member published its manifest"
    texts = [*Seen.texts, *manifests]
    files = [*Seen.files, member, Path(secure.dir) / "sandbox.json"]
    files += [p for p in Path(secure.dir).rglob("*.log")]
    for path in files:
        if path.exists():
            texts.append(path.read_text(errors="replace"))
    assert len(texts) > 10
    for canary in CANARIES.values():
        leaks = [t[max(0, t.find(canary) - 80) : t.find(canary) + 20] for t in texts if canary in t]
        assert not leaks, leaks
