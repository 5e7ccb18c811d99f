"""The domain's words: one definition each, and the maps between them agree with each other."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from kafka_coop._vocab import (
    ASSIGNOR_PROTOCOL,
    ASSIGNOR_REBALANCE_MODE,
    COOPERATIVE_ASSIGNORS,
    EAGER_ONLY_ASSIGNORS,
    JAVA_ASSIGNOR_CLASSES,
    LIBRDKAFKA_ASSIGNORS,
    REBALANCE_MODE_ASSIGNOR,
    REBALANCE_MODE_PROTOCOL,
    REBALANCE_MODES,
    RebalanceMode,
    connection_conf,
    is_consumer_only,
    mixes_protocols,
    protocol_of,
)


def test_every_rebalance_mode_has_a_protocol_and_every_classic_one_an_assignor() -> None:
    assert get_args(RebalanceMode) == REBALANCE_MODES
    assert set(REBALANCE_MODE_PROTOCOL) == set(REBALANCE_MODES)
    assert set(REBALANCE_MODE_ASSIGNOR) == set(REBALANCE_MODES) - {"consumer"}
    for mode, assignor in REBALANCE_MODE_ASSIGNOR.items():
        assert ASSIGNOR_PROTOCOL[assignor] == REBALANCE_MODE_PROTOCOL[mode]
        assert ASSIGNOR_REBALANCE_MODE[assignor] == mode


def test_assignor_sets_split_the_known_assignors_by_protocol() -> None:
    assert set(JAVA_ASSIGNOR_CLASSES) == COOPERATIVE_ASSIGNORS | EAGER_ONLY_ASSIGNORS
    assert not COOPERATIVE_ASSIGNORS & EAGER_ONLY_ASSIGNORS
    assert set(LIBRDKAFKA_ASSIGNORS) <= set(JAVA_ASSIGNOR_CLASSES)


@pytest.mark.parametrize(
    ("assignors", "protocol", "mixed"),
    [
        (("cooperative-sticky",), "cooperative", False),
        (("range",), "eager", False),
        (("range", "cooperative-sticky"), "eager", True),
        (("sticky", "roundrobin"), "eager", False),
        ((), "eager", False),
    ],
)
def test_a_classic_list_runs_cooperative_only_when_every_assignor_is(
    assignors: tuple[str, ...], protocol: str, mixed: bool
) -> None:
    assert protocol_of(assignors) == protocol
    assert mixes_protocols(assignors) is mixed


def test_connection_conf_keeps_connection_and_security_and_drops_consumer_keys() -> None:
    conf = {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.password": "x",
        "client.id": "ops",
        "group.id": "g",
        "group.instance.id": "i",
        "group.protocol": "consumer",
        "partition.assignment.strategy": "range",
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
        "fetch.min.bytes": "1",
    }
    assert connection_conf(conf) == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.password": "x",
        "client.id": "ops",
    }
    assert not is_consumer_only("ssl.ca.location")


# --- one name per closed set ------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "kafka_coop").rglob("*.py"), *(ROOT / "cli").rglob("*.py")])


def _literal_members(node: ast.expr) -> frozenset[object] | None:
    """The members of `Literal["a", "b"]` (also `typing.Literal[...]`), else None."""
    if not isinstance(node, ast.Subscript):
        return None
    name = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
    if name != "Literal":
        return None
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if not all(isinstance(item, ast.Constant) for item in items):
        return None
    return frozenset(item.value for item in items if isinstance(item, ast.Constant))


@functools.cache
def _module_ast(path: Path) -> ast.Module:
    """Parsed once per run: every test below reads the same trees (nothing mutates them)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _aliases(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """Module-level `Name = ...` and `Name: TypeAlias = ...` assignments."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            yield stmt.targets[0].id, stmt.value
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.value is not None
            and "TypeAlias" in ast.unparse(stmt.annotation)
        ):
            yield stmt.target.id, stmt.value


def _named_sets() -> dict[frozenset[object], list[str]]:
    named: dict[frozenset[object], list[str]] = {}
    for path in SOURCES:
        for name, value in _aliases(_module_ast(path)):
            members = _literal_members(value)
            if members is not None:
                named.setdefault(members, []).append(f"{path.relative_to(ROOT)}:{name}")
    return named


def test_every_closed_set_of_words_is_defined_once_under_one_name() -> None:
    """Two Literals with the same members drift apart; the second is imported, not written again."""
    twice = {
        tuple(sorted(map(str, members))): where for members, where in _named_sets().items() if len(where) > 1
    }
    assert twice == {}


def test_no_literal_alias_is_given_a_second_name() -> None:
    """`MemberKind = SeenMemberType` makes a reader learn two words for one set: use the first."""
    literal_names = {where.rsplit(":", 1)[1] for places in _named_sets().values() for where in places}
    renamed = [
        f"{path.relative_to(ROOT)}:{name} = {value.id}"
        for path in SOURCES
        for name, value in _aliases(_module_ast(path))
        if isinstance(value, ast.Name) and value.id in literal_names
    ]
    assert renamed == []


def test_no_field_spells_out_a_set_that_has_a_name() -> None:
    """An inline `Literal["classic", "consumer"]` is a copy of a named set: name it instead."""
    named = _named_sets()
    spelled = []
    for path in SOURCES:
        tree = _module_ast(path)
        definitions = {id(value) for _, value in _aliases(tree)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and id(node) not in definitions:
                members = _literal_members(node)
                if members is not None and members in named:
                    spelled.append(f"{path.relative_to(ROOT)}:{node.lineno} is {named[members][0]}")
    assert spelled == []


# Where another name is the outside world's: ConsumerSettings mirrors librdkafka's `group.id`, and the
# protocol package decodes Kafka's own schemas field by field.
OUTSIDE_NAMES = ("kafka_coop/settings/", "kafka_coop/protocol/")
ONE_FIELD_NAME = {"group_id": "group", "type": "group_type", "assignor": "selected_assignor"}


def test_a_model_names_the_group_its_type_and_its_assignor_one_way() -> None:
    """`group`, `group_type` and `selected_assignor` in every model, whatever a JSON alias says."""
    drifted = [
        f"{path.relative_to(ROOT)}:{stmt.lineno} {node.name}.{stmt.target.id}"
        for path in SOURCES
        if not str(path.relative_to(ROOT)).startswith(OUTSIDE_NAMES)
        for node in ast.walk(_module_ast(path))
        if isinstance(node, ast.ClassDef)
        for stmt in node.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
        if stmt.target.id in ONE_FIELD_NAME
    ]
    assert drifted == []


# --- one member record from inspection to the plan -------------------------------------------------------
PLAN_PATH = ("kafka_coop/inspection/", "kafka_coop/rollout/", "cli/")
# a member's identity and the facts inspection and the planner hold of it, under the names they had
# when each hop renamed them (`family`, `protocol`, `static`, `version`...)
MEMBER_FIELDS = {
    "member_id",
    "client_id",
    "client_family",
    "family",
    "rebalance_protocol",
    "protocol",
    "client_version",
    "version",
    "static",
    "assignment_user_data",
    "subscribed_regex",
    "pattern",
    "subscription_error",
    "metadata_error",
}
ONE_MEMBER_RECORD = "kafka_coop/inspection/_model.py:MemberSnapshot"
# `watch -o json`'s row per member, as published: an output, not on the plan path, but the facts it
# copies keep the record's names and closed sets
OUTPUT_ROWS = {"kafka_coop/rollout/_watch.py:WatchedMember"}
NOT_A_SECOND_RECORD = {
    # the words a fleet file's entry is written in: parsed, then it fills a MemberSnapshot
    "kafka_coop/rollout/_fleet.py:_FileMember",
    *OUTPUT_ROWS,
}


def _member_fields(node: ast.ClassDef) -> set[str]:
    declared = {
        s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }
    return declared & MEMBER_FIELDS


def test_one_record_carries_a_member_from_inspection_to_the_plan() -> None:
    """A second model with a member's identity or two of its facts is a copy with fields renamed at the
    hop (FleetMember's `family` for `client_family`): fill MemberSnapshot instead, as the fleet file does."""
    records = sorted(
        f"{path.relative_to(ROOT)}:{node.name}"
        for path in SOURCES
        if str(path.relative_to(ROOT)).startswith(PLAN_PATH)
        for node in ast.walk(_module_ast(path))
        if isinstance(node, ast.ClassDef)
        and (len(fields := _member_fields(node)) >= 2 or fields & {"member_id", "client_id"})
    )
    assert [r for r in records if r not in NOT_A_SECOND_RECORD] == [ONE_MEMBER_RECORD]


def _class(where: str) -> ast.ClassDef:
    path, name = where.split(":")
    return next(
        node
        for node in ast.walk(_module_ast(ROOT / path))
        if isinstance(node, ast.ClassDef) and node.name == name
    )


def _annotations(node: ast.ClassDef) -> dict[str, str]:
    return {
        s.target.id: ast.unparse(s.annotation)
        for s in node.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }


def test_an_output_row_of_a_member_copies_its_facts_under_the_records_names_and_sets() -> None:
    """WatchedMember's `family: str` was `client_family: Fact[SeenFamily]` renamed and widened at the hop:
    a member's fact in an output row is the record's field name, typed with the record's closed set."""
    record = _annotations(_class(ONE_MEMBER_RECORD))
    facts = {name: ann.removeprefix("Fact[").removesuffix("]") for name, ann in record.items()}
    drifted = [
        f"{where}.{name}: {ann}"
        for where in sorted(OUTPUT_ROWS)
        for name, ann in _annotations(_class(where)).items()
        if name in MEMBER_FIELDS and (name not in record or ann != facts[name])
    ]
    assert drifted == []
