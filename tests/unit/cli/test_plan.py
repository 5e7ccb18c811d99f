"""`upgrade-plan` / `downgrade-plan` offline (--fleet): formats, exit codes, one-sentence errors.

No broker is needed, so the commands run in this process (click's CliRunner).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.unit.builders import fleet_file

MIXED = """
group: orders
broker: {version: "4.1", migration_policy: bidirectional, rebalance_protocols: [classic, consumer]}
members:
  - {family: java, count: 4, assignors: [range]}
  - {family: librdkafka, count: 2, assignors: [range, roundrobin]}
"""


def test_offline_plan_as_json_is_a_plan_with_a_gate_per_phase(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    result = invoke_cli(
        "upgrade-plan", "--fleet", fleet_file(tmp_path, MIXED), "--to", "cooperative", "-o", "json"
    )
    assert result.code == 0
    plan = result.json()
    assert (plan["group"], plan["from"], plan["migration"]) == (
        "orders",
        "eager",
        "eager-to-cooperative-cutover",
    )
    assert all(p["gate"].startswith("kafka-coop verify-group orders ") for p in plan["phases"])


def test_markdown_output_is_ready_for_a_change_ticket(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    result = invoke_cli(
        "upgrade-plan", "--fleet", fleet_file(tmp_path, MIXED), "--to", "consumer", "-o", "markdown"
    )
    assert result.code == 0
    assert result.stdout.startswith("## Upgrade plan: `orders` → consumer (ready)")
    assert "```sh\nkafka-coop verify-group orders --migration classic-to-consumer --phase 0" in result.stdout


def test_a_blocked_plan_exits_1_and_says_why(tmp_path: Path, invoke_cli: Callable[..., CliResult]) -> None:
    fleet = fleet_file(tmp_path, MIXED.replace("bidirectional", "disabled"))
    result = invoke_cli("upgrade-plan", "--fleet", fleet, "--to", "consumer")
    assert result.code == 1
    assert "BLOCKED migration-policy" in result.stdout


def test_a_fleet_file_with_a_bad_field_is_exit_2_naming_file_and_field(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(tmp_path, "group: g\nmembers:\n  - {family: java, count: 0}\n")
    result = invoke_cli("upgrade-plan", "--fleet", fleet, "--to", "cooperative")
    assert result.code == 2
    assert "fleet.yaml: field members.0.count" in result.stderr
    assert result.stdout == "", "nothing half-written on stdout"


def test_a_missing_fleet_file_is_exit_2(tmp_path: Path, invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli("downgrade-plan", "--fleet", str(tmp_path / "nope.yaml"), "--to", "eager")
    assert result.code == 2
    assert "does not exist" in result.stderr


def test_neither_a_group_nor_a_fleet_is_a_usage_error(invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli("upgrade-plan", "--to", "cooperative")
    assert result.code == 2
    assert "Give GROUP and --bootstrap-server" in result.stderr


def test_a_downgrade_target_given_to_upgrade_plan_is_refused_by_the_choice(
    invoke_cli: Callable[..., CliResult],
) -> None:
    result = invoke_cli("upgrade-plan", "g", "--to", "eager", "--bootstrap-server", "127.0.0.1:1")
    assert result.code == 2
    assert "'eager' is not one of" in result.stderr


def test_an_unknown_forced_migration_is_exit_2_before_any_cluster_call(
    invoke_cli: Callable[..., CliResult],
) -> None:
    result = invoke_cli(
        "upgrade-plan", "g", "--to", "cooperative", "--migration", "nope", "--bootstrap-server", "127.0.0.1:1"
    )
    assert result.code == 2
    assert "No migration named 'nope'" in result.stderr


def test_a_blocked_plan_says_its_first_blocker_in_one_sentence_on_stderr(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    fleet = fleet_file(tmp_path, MIXED.replace("bidirectional", "disabled"))
    result = invoke_cli("upgrade-plan", "--fleet", fleet, "--to", "consumer", "-o", "json")
    assert result.code == 1
    assert result.json()["status"] == "blocked", "the plan is still written whole"
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "is blocked: migration-policy" in errors[0]


LIBRDKAFKA_EAGER = """
group: orders
broker: {version: "4.1", migration_policy: bidirectional, rebalance_protocols: [classic, consumer]}
members:
  - {family: librdkafka, count: 1, assignors: [range]}
"""


def test_the_pause_line_names_its_kind_once(tmp_path: Path, invoke_cli: Callable[..., CliResult]) -> None:
    for to in ("cooperative", "consumer"):
        result = invoke_cli("upgrade-plan", "--fleet", fleet_file(tmp_path, LIBRDKAFKA_EAGER), "--to", to)
        pauses = [line for line in result.stdout.splitlines() if line.startswith("pause: ")]
        assert pauses, result.stdout
        for line in pauses:
            assert not re.match(r"pause: [a-z-]+: (?:[A-Z][a-z ]*|No pause)[:.]", line), line


def test_counts_of_one_are_singular(tmp_path: Path, invoke_cli: Callable[..., CliResult]) -> None:
    result = invoke_cli(
        "upgrade-plan", "--fleet", fleet_file(tmp_path, LIBRDKAFKA_EAGER), "--to", "cooperative"
    )
    assert "1 members" not in result.stdout and "member(s)" not in result.stdout, result.stdout
    assert "1 member (" in result.stdout and "all 1 members" not in result.stdout


def test_the_kafka_coop_settings_are_printed_as_the_consume_flags_a_user_types(
    tmp_path: Path, invoke_cli: Callable[..., CliResult]
) -> None:
    result = invoke_cli(
        "upgrade-plan", "--fleet", fleet_file(tmp_path, LIBRDKAFKA_EAGER), "--to", "cooperative"
    )
    assert "kafka-coop: rebalance=" not in result.stdout
    assert "partition.assignment.strategy=cooperative-sticky" in result.stdout
    assert "kafka-coop consume: --rebalance cooperative-sticky --instance-id" in result.stdout, result.stdout
