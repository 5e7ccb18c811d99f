"""The CLI at its edges, walked from outside: the real `kafka-coop` in a subprocess, on the session
broker, every command x each class of mistake. The tables are the spec (docs/cli.md "Errors and exit
codes"): each row says the exit code and what the one `Error:` sentence on stderr says; every row also
asserts no traceback and nothing left running. Exit codes: 0 ok, 1 a gate or plan verdict only, 2 bad
input of every kind, 3 the cluster unreachable or not authorized, 130 interrupted.
"""

# ruff: noqa: E501  (the tables are one row a line)
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox import Sandbox, free_port
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec, SteadyProducer
from tests.integration.cli._contract import (
    ERROR,
    Row,
    assert_one_sentence,
    cli_argv,
    run,
    running,
)

pytestmark = pytest.mark.xdist_group("cli-contract")

UNREACHABLE_S = 12.0  # --timeout 2 and the start of a Python process on a loaded 2-core machine
# A name that does not resolve is said at once, not after a request timeout (10 s by default, and a
# Python start on top): at once took 7.3 s under CI's load twice (run S), so 6 s was too tight.
RESOLVE_S = 9.0
REFUSED = "Nothing is listening at {refused}: the connection was refused"
# Told at once: within this much more than a command that fails before connecting (the start of a
# Python process, measured in the same test), though the default --timeout is 10 s.
AT_ONCE_S = 2.0


@dataclass(frozen=True)
class World:
    values: dict[str, str]
    admin: ClusterAdmin
    processes: MemberProcesses

    def argv(self, text: str) -> list[str]:
        return cli_argv(text, self.values)


@pytest.fixture(scope="module")
def blackhole() -> Iterator[str]:
    """An address that accepts connections and never answers: a cluster a command waits on."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


@pytest.fixture(scope="module")
def world(
    bootstrap: str,
    admin: ClusterAdmin,
    manifests_topic: str,
    blackhole: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[World]:
    """A live group of two `kafka-coop consume` members (one static) under a steady producer, and the
    files a user gets wrong."""
    tmp = tmp_path_factory.mktemp("contract")
    run_id = uuid.uuid4().hex[:6]
    group, topic = f"contract-{run_id}", f"contract-{run_id}"
    admin.ensure_topic(topic, 2)
    a_file = tmp / "a-file"
    a_file.write_text("not a directory\n")
    props = {
        "java": "security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n",
        "jaas": 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="b";\n',
        "unknown": "foo.bar=1\n",
        "badvalue": "security.protocol=NOPE\n",
        "missing_ca": f"security.protocol=SSL\nssl.ca.location={tmp / 'missing'}/ca.pem\n",
        "tls": "security.protocol=SSL\n",
    }
    for name, text in props.items():
        (tmp / f"{name}.properties").write_text(text)
    old_checkpoint = tmp / "old-checkpoint"  # a pipeline checkpoint of a format this kafka-coop does not read
    old_checkpoint.mkdir()
    (old_checkpoint / "kafka-coop.json").write_text('{"format": 0, "state_format": 0, "kafka_coop": "0.0.1"}')
    fleet = "broker:\n  version: '{version}'\n  migration_policy: bidirectional\nmembers:\n"
    fleet += "  - family: librdkafka\n    count: 2\n    assignors: [range]\n"
    (tmp / "fleet-b.yaml").write_text("group: other-group\n" + fleet.format(version="4.1"))
    (tmp / "fleet-3x.yaml").write_text("group: old-group\n" + fleet.format(version="3.9"))
    (tmp / "fleet-own.yaml").write_text(f"group: {group}\n" + fleet.format(version="4.1"))
    # a pipeline output whose committed file is not Parquet (a disk error, a copy cut short)
    bad_pipeline = tmp / "bad-pipeline"
    (bad_pipeline / "_spark_metadata").mkdir(parents=True)
    (bad_pipeline / "_kafka_coop_pipeline.json").write_text("{}\n")
    torn = bad_pipeline / f"group={group}" / "date=2026-11-26" / "part-00000.parquet"
    torn.parent.mkdir(parents=True)
    torn.write_bytes(b"not parquet")
    entry = {"path": torn.as_uri(), "size": 11, "isDir": False, "modificationTime": 0, "action": "add"}
    (bad_pipeline / "_spark_metadata" / "0").write_text("v1\n" + json.dumps(entry) + "\n")
    processes = MemberProcesses(bootstrap, tmp / "members")
    producer = SteadyProducer(bootstrap, topic, 2, rate=20).start()
    values = {
        "bootstrap": bootstrap,
        "blackhole": blackhole,
        "refused": f"127.0.0.1:{free_port()}",
        "port": str(free_port()),
        "nohost": "nosuchhost.invalid:9092",
        "group": group,
        "topic": topic,
        "static": "contract-s1",
        "nogroup": f"no-such-group-{run_id}",
        "tmp": str(tmp),
        "file": str(a_file),
        "missing": str(tmp / "missing"),
        "events": str(tmp / "members" / "m0.events.jsonl"),
        "fleet_b": str(tmp / "fleet-b.yaml"),
        "fleet_3x": str(tmp / "fleet-3x.yaml"),
        "plan_b": str(tmp / "plan-b.json"),
        "plan_own": str(tmp / "plan-own.json"),
        "fleet_own": str(tmp / "fleet-own.yaml"),
        "bad_pipeline": str(bad_pipeline),
        **{f"{name}_props": str(tmp / f"{name}.properties") for name in props},
    }
    with processes:
        spec = MemberSpec(name="m0", kind="python", group=group, topics=(topic,), assignors=("range",))
        processes.add_many([spec, spec.replace(name="m1", instance_id="contract-s1")])
        processes.wait_stable(group)
        world = World(values, admin, processes)
        plan = run(world.argv("upgrade-plan --fleet {fleet_b} --to cooperative -o json"))
        assert plan.code == 0, plan.why()
        Path(values["plan_b"]).write_text(plan.stdout)
        own = run(world.argv("upgrade-plan --fleet {fleet_own} --to cooperative -o json"))  # no pause budget
        assert own.code == 0, own.why()
        Path(values["plan_own"]).write_text(own.stdout)
        try:
            yield world
        finally:
            producer.stop()


def _rows(*rows: Row) -> list[pytest.param]:  # type: ignore[valid-type]
    return [pytest.param(row, id=row.id) for row in rows]


# fmt: off
BAD_PATH = _rows(
    Row("describe-config-missing", "describe {group} --bootstrap-server {bootstrap} --command-config {missing}", 2, "does not exist"),
    Row("describe-config-dir", "describe {group} --bootstrap-server {bootstrap} --command-config {tmp}", 2, "Invalid value|directory"),
    Row("verify-plan-missing", "verify-group {group} --bootstrap-server {bootstrap} --plan {missing} --phase 1", 2, "does not exist"),
    Row("verify-plan-not-json", "verify-group {group} --bootstrap-server {bootstrap} --plan {file} --phase 1", 2, "not readable JSON"),
    Row("plan-fleet-under-a-file", "upgrade-plan --fleet {file}/fleet.yaml --to cooperative", 2, "fleet|{file}"),
    Row("report-out-under-a-file", "report {events} --out {file}/report", 2, r"Cannot write the report to '.*a-file/report': a part of its path is a file"),
    Row("report-out-in-proc", "report {events} --out /proc/kafka-coop-report", 2, "Cannot write the report to '/proc/kafka-coop-report'"),
    Row("report-events-missing", "report {missing}.jsonl --out {tmp}/r1", 2, "missing"),
    Row("report-phases-under-a-file", "report {events} --phases {file}/p.json --out {tmp}/r2", 2, "p.json"),
    Row("pipeline-out-under-a-file", "pipeline run kafka://{topic} --bootstrap-server {bootstrap} --out {file}/out", 2, "Cannot write to --out .*a-file/out"),
    Row("pipeline-checkpoint-in-proc", "pipeline run kafka://{topic} --bootstrap-server {bootstrap} --out {tmp}/p4 --checkpoint /proc/kafka-coop-checkpoint", 2, "Cannot write to --checkpoint /proc/kafka-coop-checkpoint"),
    Row("pipeline-checkpoint-other-version", "pipeline run kafka://{topic} --bootstrap-server {bootstrap} --out {tmp}/p5 --checkpoint {tmp}/old-checkpoint", 2, "was written by pipeline format 0 .*this kafka-coop .* writes format 2"),
    Row("pipeline-topic-missing", "pipeline run kafka://no-such-topic-{nogroup} --bootstrap-server {bootstrap} --out {tmp}/p6", 2, "no-such-topic-{nogroup}"),
    Row("consume-events-under-a-file", "consume {group} {topic} --bootstrap-server {bootstrap} --events {file}/e.jsonl", 2, "a-file"),
    Row("consume-records-in-proc", "consume {group} {topic} --bootstrap-server {bootstrap} --records /proc/kafka-coop.txt", 2, "/proc/kafka-coop.txt"),
    Row("sandbox-start-dir-under-a-file", "sandbox start --dir {file}/sandbox --port {port}", 2, "a-file"),
    Row("demo-dir-under-a-file", "demo --bootstrap-server {bootstrap} --dir {file}/demo", 2, "a-file"),
    Row("remove-config-under-a-file", "remove-members {group} --bootstrap-server {bootstrap} --all-static --command-config {file}/c.properties", 2, "c.properties"),
    Row("verify-pipeline-out-missing", "verify-group {group} --bootstrap-server {bootstrap} --pipeline-out {missing} --max-pause-ms 1 --since 0", 2, "Pipeline output {missing} does not exist"),
    Row("verify-pipeline-out-not-the-pipelines", "verify-group {group} --bootstrap-server {bootstrap} --pipeline-out {tmp} --max-pause-ms 1 --since 0", 2, "is not the output of `kafka-coop pipeline run`"),
    Row("verify-pipeline-out-unreadable-parquet", "verify-group {group} --bootstrap-server {bootstrap} --pipeline-out {bad_pipeline} --max-pause-ms 1 --since 0", 2, "The pipeline's output {bad_pipeline} cannot be read"),
    Row("manifest-topic-config-missing", "manifest-topic --bootstrap-server {bootstrap} --command-config {missing}", 2, "does not exist"),
)
BAD_KEY = _rows(
    Row("describe-truststore", "describe {group} --bootstrap-server {bootstrap} --command-config {java_props}", 2, "sets ssl.truststore.location, a Java client property"),
    Row("verify-jaas", "verify-group {group} --bootstrap-server {bootstrap} --command-config {jaas_props}", 2, "sets sasl.jaas.config, a Java client property"),
    Row("upgrade-plan-truststore", "upgrade-plan {group} --to cooperative --bootstrap-server {bootstrap} --command-config {java_props}", 2, "ssl.truststore.location"),
    Row("downgrade-plan-jaas", "downgrade-plan {group} --to eager --bootstrap-server {bootstrap} --command-config {jaas_props}", 2, "sasl.jaas.config"),
    Row("remove-truststore", "remove-members {group} --all-static --bootstrap-server {bootstrap} --command-config {java_props}", 2, "ssl.truststore.location"),
    Row("manifest-topic-jaas", "manifest-topic --bootstrap-server {bootstrap} --command-config {jaas_props}", 2, "sasl.jaas.config"),
    Row("report-kafka-truststore", "report kafka://{topic} --bootstrap-server {bootstrap} --command-config {java_props} --out {tmp}/r3", 2, "ssl.truststore.location"),
    Row("consume-truststore-file", "consume {group} {topic} --bootstrap-server {bootstrap} --command-config {java_props}", 2, "ssl.truststore.location"),
    Row("consume-truststore-conf", "consume {group} {topic} --bootstrap-server {bootstrap} --conf ssl.truststore.location=/x", 2, "--conf sets ssl.truststore.location"),
    Row("consume-unknown-conf", "consume {group} {topic} --bootstrap-server {bootstrap} --conf foo.bar=1", 2, "librdkafka refused the setting foo.bar"),
    Row("describe-unknown-key", "describe {group} --bootstrap-server {bootstrap} --command-config {unknown_props}", 2, 'librdkafka refused the client settings: No such configuration property: "foo.bar"'),
    Row("demo-truststore", "demo --bootstrap-server {bootstrap} --command-config {java_props}", 2, "ssl.truststore.location"),
    Row("sandbox-reserved-key", "sandbox start --dir {tmp}/sb-reserved --config listeners=x", 2, "managed by the sandbox"),
)
BAD_VALUE = _rows(
    Row("describe-bootstrap-not-host-port", "describe {group} --bootstrap-server localhost:port", 2, "is not HOST:PORT"),
    Row("describe-bootstrap-no-port", "describe {group} --bootstrap-server localhost", 2, "'localhost' has no port: give HOST:PORT"),
    Row("verify-bootstrap-scheme", "verify-group {group} --bootstrap-server http://127.0.0.1:29201", 2, r"has a scheme \(http://\): give HOST:PORT without it"),
    Row("upgrade-plan-bootstrap-port-range", "upgrade-plan {group} --to cooperative --bootstrap-server 127.0.0.1:99999", 2, "the port 99999 is not in 1-65535"),
    Row("consume-bootstrap-no-port", "consume {group} {topic} --bootstrap-server localhost", 2, "'localhost' has no port"),
    Row("consume-rebalance-against-conf", "consume {group} {topic} --bootstrap-server {bootstrap} --rebalance eager-range --conf partition.assignment.strategy=cooperative-sticky", 2, r"--rebalance eager-range \(partition.assignment.strategy range\) and --conf partition.assignment.strategy=cooperative-sticky contradict each other"),
    Row("describe-tls-at-a-plaintext-listener", "describe {group} --bootstrap-server {bootstrap} --command-config {tls_props}", 3, r"The TLS handshake with {bootstrap} failed \(security.protocol=SSL\)", 12.0),
    Row("describe-config-ca-missing", "describe {group} --bootstrap-server {bootstrap} --command-config {missing_ca_props}", 2, "sets ssl.ca.location to '{missing}/ca.pem', which does not exist"),
    Row("describe-timeout-negative", "describe {group} --bootstrap-server {bootstrap} --timeout -1", 2, "--timeout"),
    Row("describe-bad-protocol-value", "describe {group} --bootstrap-server {bootstrap} --command-config {badvalue_props}", 2, 'Invalid value "NOPE"'),
    Row("describe-group-and-all", "describe {group} --all --bootstrap-server {bootstrap}", 2, "either a GROUP or --all"),
    Row("consume-bad-number", "consume {group} {topic} --bootstrap-server {bootstrap} --conf session.timeout.ms=soon", 2, "session.timeout.ms"),
    Row("verify-lag-window-word", "verify-group {group} --bootstrap-server {bootstrap} --lag-window soon", 2, "--lag-window"),
    Row("verify-phase-out-of-range", "verify-group {group} --bootstrap-server {bootstrap} --migration eager-to-cooperative --phase 9", 2, "phase"),
    Row("verify-unknown-migration", "verify-group {group} --bootstrap-server {bootstrap} --migration sideways --phase 1", 2, "sideways"),
    Row("verify-max-pause-without-figures", "verify-group {group} --bootstrap-server {bootstrap} --max-pause-ms 1 --since 0", 2, "need the pause figures"),
    Row("verify-two-figure-sources", "verify-group {group} --bootstrap-server {bootstrap} --pipeline-out {tmp} --events kafka://{topic} --max-pause-ms 1 --since 0", 2, "--pipeline-out or --events, not both"),
    Row("verify-events-not-a-topic", "verify-group {group} --bootstrap-server {bootstrap} --events {events} --max-pause-ms 1 --since 0", 2, "is not an events topic"),
    Row("verify-max-pause-without-a-phase", "verify-group {group} --bootstrap-server {bootstrap} --events kafka://{topic} --max-pause-ms 1", 2, "judges a phase, and there is none"),
    Row("verify-since-not-a-time", "verify-group {group} --bootstrap-server {bootstrap} --events kafka://{topic} --max-pause-ms 1 --since soon", 2, "--since 'soon' is not a time"),
    Row("verify-plan-without-a-pause-budget", "verify-group {group} --bootstrap-server {bootstrap} --plan {plan_own} --phase 1 --events kafka://{topic}", 2, "The plan states no pause budget for phase 1"),
    Row("verify-events-topic-missing", "verify-group {group} --bootstrap-server {bootstrap} --events kafka://{nogroup} --max-pause-ms 1 --since 0", 2, "Topic '{nogroup}' does not exist"),
    Row("plan-pause-figures-without-budget", "upgrade-plan --fleet {fleet_b} --to cooperative --pause-figures kafka://{topic}", 2, "no --pause-budget-ms judges them"),
    Row("plan-pause-budget-negative", "upgrade-plan --fleet {fleet_b} --to cooperative --pause-budget-ms -1", 2, "--pause-budget-ms"),
    Row("upgrade-plan-bad-target", "upgrade-plan {group} --to sideways --bootstrap-server {bootstrap}", 2, "--to"),
    Row("sandbox-old-kafka", "sandbox start --dir {tmp}/sb-old --kafka-version 3.6.2", 2, r"not a release the sandbox is tested on: it runs 3\.7\.x, 3\.8\.x, 3\.9\.x, 4\.0\.x, 4\.1\.x, 4\.2\.x and 4\.4\.x"),
    Row("sandbox-kafka-word", "sandbox start --dir {tmp}/sb-word --kafka-version latest", 2, "not a release the sandbox is tested on"),
    Row("sandbox-topic-no-name", "sandbox start --dir {tmp}/sb-topic --topic :3", 2, "no topic name"),
    Row("demo-port-zero", "demo --port 0", 2, "--port"),
    Row("demo-port-and-bootstrap", "demo --port 19092 --bootstrap-server {bootstrap}", 2, "--port is for the sandbox"),
    Row("report-bad-engine", "report {events} --out {tmp}/r4 --engine turbo", 2, "--engine"),
    Row("pipeline-source-not-kafka", "pipeline run {events} --out {tmp}/p7 --bootstrap-server {bootstrap}", 2, "is not an events topic"),
    Row("pipeline-trigger-word", "pipeline run kafka://{topic} --out {tmp}/p8 --bootstrap-server {bootstrap} --trigger soon", 2, "--trigger 'soon' is not a positive duration"),
    Row("pipeline-master-not-a-url", "pipeline run kafka://{topic} --out {tmp}/p9 --bootstrap-server {bootstrap} --master spark://nohost", 2, "is not spark://HOST:PORT"),
    Row("schema-unknown", "schema sideways", 2, "no schema named 'sideways'"),
    Row("remove-unknown-instance-id", "remove-members {group} --bootstrap-server {bootstrap} --instance-id nobody", 2, "has no static member with group.instance.id 'nobody'"),
    Row("remove-nothing-chosen", "remove-members {group} --bootstrap-server {bootstrap}", 2, "instance-id|all-static"),
)
MISSING_GROUP = _rows(
    Row("describe", "describe {nogroup} --bootstrap-server {bootstrap}", 2, "Group '{nogroup}' does not exist"),
    Row("verify-group", "verify-group {nogroup} --bootstrap-server {bootstrap}", 2, "Group '{nogroup}' does not exist"),
    Row("upgrade-plan", "upgrade-plan {nogroup} --to cooperative --bootstrap-server {bootstrap}", 2, "Group '{nogroup}' does not exist"),
    Row("downgrade-plan", "downgrade-plan {nogroup} --to eager --bootstrap-server {bootstrap}", 2, "Group '{nogroup}' does not exist"),
    Row("remove-members", "remove-members {nogroup} --all-static --bootstrap-server {bootstrap}", 2, "Group '{nogroup}' does not exist"),
)
WRONG_PLAN = _rows(
    Row("verify-another-groups-plan", "verify-group {group} --bootstrap-server {bootstrap} --plan {plan_b} --phase 1", 2, "the plan of group 'other-group', not of '{group}'"),
    Row("verify-another-groups-plan-phase-0", "verify-group {group} --bootstrap-server {bootstrap} --plan {plan_b} --phase 0", 2, "the plan of group 'other-group'"),
)
UNREACHABLE = _rows(  # a refused connection at every command: test_a_refused_connection_is_told_at_once
    Row("verify-group-pause-refused", "verify-group {group} --events kafka://{topic} --max-pause-ms 1 --since 0 --bootstrap-server {refused} --timeout 2", 3, REFUSED, UNREACHABLE_S),
    Row("pipeline-master-refused", "pipeline run kafka://{topic} --bootstrap-server {bootstrap} --out {tmp}/p2 --master spark://{refused}", 3, "Could not reach the Spark master at spark://{refused}: connection refused", 30.0),
    *(
        Row(f"{name}-no-such-host", f"{argv} --bootstrap-server {{nohost}}", 3, "does not resolve to any address", RESOLVE_S)
        for name, argv in (
            ("describe", "describe {group}"),
            ("verify-group", "verify-group {group}"),
            ("upgrade-plan", "upgrade-plan {group} --to cooperative"),
            ("downgrade-plan", "downgrade-plan {group} --to eager"),
            ("remove-members", "remove-members {group} --all-static"),
            ("manifest-topic", "manifest-topic"),
            ("consume", "consume {group} {topic}"),
            ("report", "report kafka://{topic} --out {tmp}/r6"),
            ("demo", "demo --no-report"),
            ("pipeline", "pipeline run kafka://{topic} --out {tmp}/p3"),
        )
    ),
)
VERDICTS = _rows(
    Row("verify-pass", "verify-group {group} --bootstrap-server {bootstrap} --expect-members 2", 0),
    Row("verify-fail-is-1", "verify-group {group} --bootstrap-server {bootstrap} --expect-members 5", 1, "gate on group {group} did not pass"),
    Row("verify-wait-for-no-group-is-1", "verify-group {nogroup} --bootstrap-server {bootstrap} --wait --timeout 1 --interval 0.5", 1, "Group '{nogroup}' did not appear"),
    Row("plan-blocked-is-1", "upgrade-plan --fleet {fleet_3x} --to consumer", 1, "blocked"),
    Row("plan-ready-is-0", "upgrade-plan --fleet {fleet_b} --to cooperative", 0),
)
# fmt: on


@pytest.mark.parametrize(
    "row", BAD_PATH + BAD_KEY + BAD_VALUE + MISSING_GROUP + WRONG_PLAN + UNREACHABLE + VERDICTS
)
def test_every_mistake_is_one_sentence_and_its_exit_code(world: World, row: Row) -> None:
    ran = run(world.argv(row.argv), columns=row.columns)
    assert ran.code == row.code, ran.why()
    assert_one_sentence(ran, row.says.format(**world.values) if row.says else None)
    if row.within_s is not None:
        assert ran.seconds < row.within_s, ran.why()


AT_ONCE = (
    ("describe", "describe {group}"),
    ("describe-all", "describe --all"),
    ("verify-group", "verify-group {group}"),
    ("upgrade-plan", "upgrade-plan {group} --to cooperative"),
    ("downgrade-plan", "downgrade-plan {group} --to eager"),
    ("remove-members", "remove-members {group} --all-static"),
    ("manifest-topic", "manifest-topic"),
    ("control-topic", "control-topic"),
    ("report-kafka", "report kafka://{topic} --out {tmp}/r7"),
    ("pipeline", "pipeline run kafka://{topic} --out {tmp}/p10"),
    ("demo", "demo --no-report"),
)


@pytest.fixture(scope="module")
def process_start_s(world: World) -> float:
    """How long a command takes that fails before it connects: the baseline of "at once"."""
    return min(run(world.argv("describe {group} --bootstrap-server localhost")).seconds for _ in range(2))


@pytest.mark.parametrize(("name", "argv"), AT_ONCE, ids=[name for name, _ in AT_ONCE])
def test_a_refused_connection_is_told_at_once_with_its_cause(
    world: World, process_start_s: float, name: str, argv: str
) -> None:
    """Nothing listens at the address: librdkafka knows at its first connect, so the sentence comes
    then, not after the default 10 s --timeout as "no answer from the group coordinator"."""
    ran = run(world.argv(f"{argv} --bootstrap-server {{refused}}"))
    assert ran.code == 3, ran.why()
    assert_one_sentence(ran, REFUSED.format(**world.values))
    assert ran.seconds < process_start_s + AT_ONCE_S, f"baseline {process_start_s:.2f}s\n{ran.why()}"


def test_a_bad_output_path_leaves_no_other_output_behind(world: World, tmp_path: Path) -> None:
    """--records can be written, --events cannot: the command fails before joining the group, and
    the records file it could have made is not left behind (no partial writes)."""
    records = tmp_path / "records.txt"
    argv = "consume {group} {topic} --bootstrap-server {bootstrap} --events {file}/e.jsonl --records " + str(
        records
    )
    ran = run(world.argv(argv))
    assert ran.code == 2, ran.why()
    assert not records.exists()
    report = run(world.argv("report {events} --out /proc/kafka-coop-report"))
    assert report.code == 2 and not list(Path("/proc").glob(".kafka-coop-report*"))


def test_a_refused_pipeline_run_leaves_no_directory_behind(world: World, tmp_path: Path) -> None:
    """The pipeline makes --out and --checkpoint before it checks the topic and the master; a refused
    run removes what it made."""
    for argv in (
        f"pipeline run kafka://no-such-topic-{{nogroup}} --bootstrap-server {{bootstrap}} --out {tmp_path}/a/out",
        f"pipeline run kafka://{{topic}} --bootstrap-server {{bootstrap}} --out {tmp_path}/b/out --master spark://{{refused}}",
    ):
        ran = run(world.argv(argv))
        assert ran.code in (2, 3), ran.why()
    assert list(tmp_path.iterdir()) == []


# --- Ctrl-C at each wait: exit 130 at once, one sentence, nothing left running ---------------------
WAITS = (
    ("describe", "describe {group} --bootstrap-server {blackhole}", None),
    ("describe-all", "describe --all --bootstrap-server {blackhole}", None),
    ("verify-group", "verify-group {group} --bootstrap-server {blackhole}", None),
    (
        "verify-group-wait",
        "verify-group {group} --bootstrap-server {bootstrap} --expect-members 5 --wait --interval 0.5",
        "re-checking",
    ),
    (
        "upgrade-plan",
        "upgrade-plan {group} --to cooperative --bootstrap-server {blackhole}",
        "Inspecting group",
    ),
    (
        "downgrade-plan",
        "downgrade-plan {group} --to eager --bootstrap-server {blackhole}",
        "Inspecting group",
    ),
    ("remove-members", "remove-members {group} --all-static --bootstrap-server {blackhole}", None),
    (
        "remove-members-wait-stopped",
        "remove-members {group} --bootstrap-server {bootstrap} --instance-id {static} --wait-stopped 60",
        None,
    ),
    ("manifest-topic", "manifest-topic --bootstrap-server {blackhole}", None),
)
INTERRUPT_WITHIN_S = 3.0


@pytest.mark.parametrize(("name", "argv", "marker"), WAITS, ids=[w[0] for w in WAITS])
def test_ctrl_c_at_a_wait_ends_the_command_at_once(
    world: World, name: str, argv: str, marker: str | None
) -> None:
    with running(world.argv(argv)) as job:
        if marker is not None:
            job.wait_for(marker)
        time.sleep(1.5)  # inside the wait: a request the silent address never answers, a --wait pause
        ran, took = job.interrupt()
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, r"Interrupted by Ctrl-C \(SIGINT\) before `kafka-coop")
    assert took < INTERRUPT_WITHIN_S, f"took {took:.1f}s after Ctrl-C\n{ran.why()}"


def test_ctrl_c_stops_a_consume_member_cleanly_with_130(world: World, tmp_path: Path) -> None:
    events = tmp_path / "c.events.jsonl"
    # a group of its own: the world's members are eager (range), a cooperative member could not join them
    argv = f"consume {{group}}-ctrl-c {{topic}} --bootstrap-server {{bootstrap}} --events {events}"
    with running(world.argv(argv)) as job:
        job.wait_for("assigned", timeout=60)
        ran, _took = job.interrupt()
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, "Interrupted by Ctrl-C .* the member closed")
    kinds = [json.loads(line)["kind"] for line in events.read_text().splitlines()]
    assert kinds[-1] == "closed", kinds


def test_ctrl_c_during_sandbox_start_stops_the_broker_it_started(tmp_path: Path) -> None:
    argv = cli_argv(f"sandbox start --dir {tmp_path} --port {free_port()}", {})
    with running(argv) as job:
        job.wait_for("Starting Kafka")
        time.sleep(1.0)
        ran, _took = job.interrupt()
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, "Interrupted by Ctrl-C .*sandbox start")
    assert not (tmp_path / "sandbox.json").exists()
    status = run(cli_argv(f"sandbox status --dir {tmp_path}", {}))
    assert status.code == 1 and "No sandbox broker is running" in status.stderr, status.why()


@pytest.mark.parametrize(
    "marker",
    ["Starting 2 eager", "Rolling bounce under eager", "gate PASS"],
    ids=["members-starting", "eager-bounce", "walking-the-plan"],
)
def test_ctrl_c_during_the_demo_removes_what_it_made(world: World, marker: str, tmp_path: Path) -> None:
    """Members stopped (none left running, ppid 1 or otherwise), the demo's group and topic deleted,
    its temporary directory removed (a TMPDIR of its own: other demos may run meanwhile)."""
    argv = "demo --bootstrap-server {bootstrap} --members 2 --partitions 2 --rate 20 --no-report"
    began = int(time.time())
    with running(world.argv(argv), env={"TMPDIR": str(tmp_path)}) as job:
        job.wait_for(marker, timeout=120)
        # the demo names its group and topic kafka-coop-demo-<unix seconds> when it begins: only names
        # from this run's seconds are its own (another demo may run on the session broker meanwhile)
        ours = {f"kafka-coop-demo-{s}" for s in range(began, int(time.time()) + 1)}
        ran, _took = job.interrupt(timeout=90)
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, "Interrupted by Ctrl-C .*demo")
    left = {g.group for g in world.admin.list_groups()} & ours
    assert left == set(), ran.why()
    assert set(world.admin.client.list_topics(timeout=10).topics) & ours == set(), ran.why()
    assert list(tmp_path.glob("kafka-coop-demo-*")) == []


def test_ctrl_c_during_the_demos_own_sandbox_start_stops_it(tmp_path: Path) -> None:
    argv = cli_argv(f"demo --port {free_port()} --dir {tmp_path}/demo --no-report", {})
    with running(argv) as job:
        job.wait_for("Starting Kafka")
        time.sleep(1.0)
        ran, _took = job.interrupt()
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, "Interrupted by Ctrl-C .*demo")


def test_ctrl_c_during_a_spark_report_stops_the_spark_session(world: World, tmp_path: Path) -> None:
    argv = f"report {{events}} --engine spark --out {tmp_path}/report"
    with running(world.argv(argv)) as job:
        job.wait_for("Reading")
        time.sleep(4.0)  # the JVM is starting or the job runs
        ran, _took = job.interrupt()
    assert ran.code == 130, ran.why()
    assert_one_sentence(ran, "Interrupted by Ctrl-C .*report")
    assert not (tmp_path / "report").exists()


# --- a closed pipe: the command's own verdict, not exit 1 -------------------------------------------
CLOSED_PIPE = (
    ("plan-ready", "upgrade-plan {group} --to cooperative --bootstrap-server {bootstrap}", 0),
    ("plan-ready-json", "upgrade-plan {group} --to cooperative --bootstrap-server {bootstrap} -o json", 0),
    ("plan-blocked", "upgrade-plan --fleet {fleet_3x} --to consumer", 1),
    ("describe", "describe {group} --bootstrap-server {bootstrap}", 0),
    ("verify-group", "verify-group {group} --bootstrap-server {bootstrap} --expect-members 2", 0),
    ("report", "report {events} --out {tmp}/pipe-report", 0),
    ("schema", "schema plan", 0),
)


@pytest.mark.parametrize(("name", "argv", "code"), CLOSED_PIPE, ids=[c[0] for c in CLOSED_PIPE])
def test_a_closed_pipe_keeps_the_commands_verdict(world: World, name: str, argv: str, code: int) -> None:
    """`kafka-coop upgrade-plan ... | head -1`: the reader is gone before the command writes."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        ran = run(world.argv(argv), stdout=write_end)
    finally:
        os.close(write_end)
    assert ran.code == code, ran.why()
    assert_one_sentence(ran, "blocked" if code == 1 else None)
    assert "stdout was closed by its reader" in ran.stderr, ran.why()


def test_consume_stops_when_the_reader_of_its_records_goes_away(world: World) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        ran = run(
            world.argv("consume {group}-pipe {topic} --bootstrap-server {bootstrap} --print-records"),
            stdout=write_end,
            timeout=90,
        )
    finally:
        os.close(write_end)
    assert ran.code == 0, ran.why()
    assert_one_sentence(ran, None)


# --- a 40-column CI log: key fields whole ------------------------------------------------------------
NARROW = (
    (
        "describe",
        "describe {group} --bootstrap-server {bootstrap}",
        ("{group}", "m0", "contract-s1", "127.0.0.1", "stable"),
    ),
    ("describe-all", "describe --all --bootstrap-server {bootstrap}", ("{group}", "stable", "eager")),
    (
        "verify-group",
        "verify-group {group} --bootstrap-server {bootstrap}",
        ("verify-group {group}", "no-rebalance-in-progress", "unique-instance-ids", "PASS", "[m0]"),
    ),
    (
        "upgrade-plan",
        "upgrade-plan {group} --to cooperative --bootstrap-server {bootstrap}",
        (
            "upgrade-plan {group} → cooperative: READY",
            "--bootstrap-server {bootstrap}",
            "eager-to-cooperative-cutover",
        ),
    ),
    (
        "downgrade-plan",
        "downgrade-plan {group} --to classic --bootstrap-server {bootstrap}",
        ("downgrade-plan {group} → classic: DONE", "the classic protocol"),
    ),
    (
        "manifest-topic",
        "manifest-topic --bootstrap-server {bootstrap}",
        ("_kafka_coop_manifests", "'User:<service>'", "DESCRIBE, WRITE"),
    ),
    ("report", "report {events} --out {tmp}/narrow-report", ("{group}", "m0", "rebalances by protocol")),
)


@pytest.mark.parametrize("columns", [40, 80])
@pytest.mark.parametrize(("name", "argv", "whole"), NARROW, ids=[n[0] for n in NARROW])
def test_a_narrow_log_keeps_every_key_field_whole(
    world: World, name: str, argv: str, whole: tuple[str, ...], columns: int
) -> None:
    ran = run(world.argv(argv), columns=columns)
    assert ran.code == 0, ran.why()
    for field in whole:
        assert field.format(**world.values) in ran.stdout, (
            f"{field!r} cut at {columns} columns:\n{ran.stdout}"
        )
    assert "…" not in ran.stdout, ran.stdout


def test_sandbox_status_keeps_its_addresses_whole_at_40_columns(sandbox: Sandbox) -> None:
    ran = run(cli_argv(f"sandbox status --dir {sandbox.dir}", {}), columns=40)
    assert ran.code == 0, ran.why()
    state = sandbox.status()
    assert state is not None
    for node in state.nodes:
        assert node.bootstrap in ran.stdout and f"127.0.0.1:{node.controller_port}" in ran.stdout
    assert "…" not in ran.stdout, ran.stdout


# --- judgements that mean what they say ----------------------------------------------------------------
def test_a_healthy_group_under_load_is_not_judged_stalled_over_a_short_window(world: World) -> None:
    """Members commit every 5 s while records arrive: over the window one look takes, an offset that
    did not move says nothing. No STALLED, no warning that --strict would turn into a failed gate."""
    ran = run(
        world.argv("verify-group {group} --bootstrap-server {bootstrap} --strict --expect-members 2 -o json")
    )
    report = json.loads(ran.stdout)
    lag = next(c for c in report["checks"] if c["name"] == "lag-status")
    assert lag["status"] in ("pass", "not-judged"), lag
    assert "STALLED" not in json.dumps(report["lag"]), report["lag"]
    others = [c for c in report["checks"] if c["status"] not in ("pass", "not-judged")]
    assert ran.code == (1 if others else 0), (others, ran.why())


def test_describe_says_only_what_it_knows(world: World) -> None:
    ran = run(world.argv("describe {group} --bootstrap-server {bootstrap}"))
    assert ran.code == 0, ran.why()
    assert "generation  ?" not in ran.stdout and "generation ?" not in ran.stdout
    assert "/127.0.0.1" not in ran.stdout and "127.0.0.1" in ran.stdout
    assert "2 members" in ran.stdout
    listed = run(world.argv("describe --all --bootstrap-server {bootstrap}"))
    count = len(
        json.loads(run(world.argv("describe --all --bootstrap-server {bootstrap} -o json")).stdout)["groups"]
    )
    assert (f"{count} group\n" if count == 1 else f"{count} groups\n") in listed.stdout


def test_consume_members_without_a_client_id_are_told_apart(world: World, tmp_path: Path) -> None:
    """librdkafka names every client `rdkafka`: two plain `kafka-coop consume` members would be one
    member to describe and to the report."""
    group = f"{world.values['group']}-ids"
    names = []
    for i in range(2):
        events = tmp_path / f"{i}.jsonl"
        argv = f"consume {group} {{topic}} --bootstrap-server {{bootstrap}} --events {events} -q"
        with running(world.argv(argv)) as job:
            deadline = time.monotonic() + 60
            while not events.exists() or '"assigned"' not in events.read_text():
                assert time.monotonic() < deadline, job.stderr
                time.sleep(0.2)
            job.interrupt()
        names.append(json.loads(events.read_text().splitlines()[0])["client_id"])
    assert names[0] != names[1] and "rdkafka" not in names, names


# --- every --output json validates against its published schema ----------------------------------
JSON_OUTPUTS = (
    ("describe", "describe {group} --bootstrap-server {bootstrap} -o json"),
    ("describe-all", "describe --all --bootstrap-server {bootstrap} -o json"),
    ("verify-group", "verify-group {group} --bootstrap-server {bootstrap} --expect-members 2 -o json"),
    ("plan", "upgrade-plan {group} --to cooperative --bootstrap-server {bootstrap} -o json"),
    ("plan", "downgrade-plan --fleet {fleet_3x} --to eager -o json"),
    ("manifest-topic", "manifest-topic --bootstrap-server {bootstrap} -o json"),
    ("control-topic", "control-topic --bootstrap-server {bootstrap} -o json"),
    ("report", "report {events} --out {tmp}/json-report -o json"),
    ("prepare-spark", "prepare-spark -o json"),
)


@pytest.mark.parametrize(
    ("schema", "argv"), JSON_OUTPUTS, ids=[a.split(" -")[0].split(" {")[0] + f"-{s}" for s, a in JSON_OUTPUTS]
)
def test_a_commands_json_output_validates_against_its_published_schema(
    world: World, schema: str, argv: str
) -> None:
    """What a pipeline parses is what `kafka-coop schema NAME` publishes, `v` included."""
    import jsonschema

    ran = run(world.argv(argv))
    assert ran.code in (0, 1), ran.why()
    published = run(cli_argv(f"schema {schema}", {}))
    assert published.code == 0, published.why()
    document = json.loads(ran.stdout)
    latest = json.loads(published.stdout)
    jsonschema.validate(document, latest)
    assert latest["title"].endswith(f" v{document['v']}")  # the latest version, printed


def test_sandbox_status_json_validates_against_its_published_schema(sandbox: Sandbox) -> None:
    import jsonschema

    ran = run(cli_argv(f"sandbox status --dir {sandbox.dir} -o json", {}))
    assert ran.code == 0, ran.why()
    published = json.loads(run(cli_argv("schema sandbox-status", {})).stdout)
    jsonschema.validate(json.loads(ran.stdout), published)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        ("describe {nogroup} --bootstrap-server {bootstrap} -o json", 2),
        ("verify-group {group} --bootstrap-server {refused} --timeout 2 -o json", 3),
        ("upgrade-plan --fleet {missing} --to cooperative -o json", 2),
        ("report {events} --out {file}/r -o json", 2),
    ],
    ids=["missing-group", "unreachable", "missing-fleet", "bad-out"],
)
def test_an_error_under_json_output_is_the_published_error_object(world: World, argv: str, code: int) -> None:
    """A pipeline that parses stdout gets one object to read, the error's (schema `error`), never a
    verdict made without data; the sentence is on stderr as well."""
    import jsonschema

    ran = run(world.argv(argv))
    assert ran.code == code, ran.why()
    error = json.loads(ran.stdout)
    jsonschema.validate(error, json.loads(run(cli_argv("schema error", {})).stdout))
    assert error["error"]["exit_code"] == code
    assert_one_sentence(ran, ".")
    assert ERROR.findall(ran.stderr) == [error["error"]["message"]]
