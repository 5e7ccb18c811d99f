"""Only the operator's principal may write the control topic: what the runner reads in the ACLs."""

from __future__ import annotations

from kafka_coop.rollout._protection import AclGrant, acls_to_add, operator_principal, unprotected_reason

OPERATOR = "User:admin"


def grant(principal: str, operation: str, permission: str = "ALLOW") -> AclGrant:
    return AclGrant(principal=principal, operation=operation, permission=permission)


MEMBERS_READ = [grant("User:app", "READ"), grant("User:app", "DESCRIBE")]


def test_members_reading_and_the_operator_writing_is_protected() -> None:
    grants = [*MEMBERS_READ, grant(OPERATOR, "WRITE"), grant(OPERATOR, "DESCRIBE")]
    assert unprotected_reason(grants, operator=OPERATOR) is None


def test_a_cluster_without_an_authorizer_is_unprotected() -> None:
    reason = unprotected_reason(None, operator=OPERATOR)
    assert reason is not None and "no authorizer" in reason


def test_a_topic_no_acl_applies_to_is_refused() -> None:
    reason = unprotected_reason([], operator=OPERATOR)
    assert reason is not None and "No ACL" in reason


def test_a_member_principal_allowed_to_write_is_named() -> None:
    reason = unprotected_reason([*MEMBERS_READ, grant("User:app", "WRITE")], operator=OPERATOR)
    assert reason is not None and reason.startswith("User:app may write")


def test_all_counts_as_write() -> None:
    assert unprotected_reason([grant("User:app", "ALL")], operator=OPERATOR) is not None


def test_the_wildcard_principal_allowed_to_write_is_refused() -> None:
    reason = unprotected_reason([*MEMBERS_READ, grant("User:*", "WRITE")], operator=OPERATOR)
    assert reason is not None and "User:*" in reason


def test_a_write_denied_again_to_the_same_principal_is_no_writer() -> None:
    grants = [*MEMBERS_READ, grant("User:app", "WRITE"), grant("User:app", "WRITE", "DENY")]
    assert unprotected_reason(grants, operator=OPERATOR) is None


def test_an_unknown_operator_passes_one_writer_but_not_two() -> None:
    one = [*MEMBERS_READ, grant("User:ops", "WRITE")]
    assert unprotected_reason(one, operator=None) is None
    assert unprotected_reason([*one, grant("User:app", "WRITE")], operator=None) is not None


def test_the_operator_principal_is_the_sasl_username_for_scram_and_plain_only() -> None:
    assert operator_principal({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin"}) == OPERATOR
    assert operator_principal({"sasl.mechanisms": "PLAIN", "sasl.username": "admin"}) == OPERATOR
    assert operator_principal({"sasl.mechanism": "GSSAPI", "sasl.username": "admin"}) is None
    assert operator_principal({}) is None


def test_the_hint_names_the_acls_to_add() -> None:
    words = acls_to_add()
    assert "DESCRIBE, WRITE" in words and "DESCRIBE, READ" in words and "_kafka_coop_control" in words
