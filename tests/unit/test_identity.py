"""Static membership identity: templates, duplicates and which member a clash hurts."""

from __future__ import annotations

import socket

import pytest

from kafka_coop.errors import SettingsError
from kafka_coop.identity import check_duplicate, duplicate_instance_ids, fencing_message, resolve_instance_id

POD_ENV = {"POD_NAME": "orders-3", "HOSTNAME": "node-a"}


# --- resolve_instance_id -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("template", "environ", "expected"),
    [
        ("{pod}", POD_ENV, "orders-3"),
        ("{pod}", {"HOSTNAME": "orders-7"}, "orders-7"),
        ("{hostname}", POD_ENV, "node-a"),
        ("{ordinal}", POD_ENV, "3"),
        ("{ordinal}", {"HOSTNAME": "web-12"}, "12"),
        ("{group}-{ordinal}", POD_ENV, "billing-3"),
        ("static-id", {}, "static-id"),
        ("{pod}.{group}", {"POD_NAME": "my-app-0"}, "my-app-0.billing"),
    ],
)
def test_template_resolves_from_the_environment(
    template: str, environ: dict[str, str], expected: str
) -> None:
    assert resolve_instance_id(template, group="billing", environ=environ) == expected


def test_none_means_dynamic_membership() -> None:
    assert resolve_instance_id(None, group="g", environ=POD_ENV) is None


def test_hostname_falls_back_to_the_socket_hostname(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "box-1")
    assert resolve_instance_id("{hostname}", group="g", environ={}) == "box-1"


def test_unused_placeholders_are_not_resolved() -> None:
    # No pod name at all: fine as long as neither {pod} nor {ordinal} is used.
    assert resolve_instance_id("{group}-x", group="g", environ={}) == "g-x"


def test_doubled_braces_are_literal_and_then_fail_the_id_rule() -> None:
    with pytest.raises(SettingsError, match="contains characters Kafka does not allow"):
        resolve_instance_id("{{pod}}", group="g", environ=POD_ENV)


@pytest.mark.parametrize(
    ("template", "environ", "fragment"),
    [
        ("{node}", POD_ENV, "unknown placeholder {node}"),
        ("{pod!r}", POD_ENV, "unknown placeholder {pod!r}"),
        ("{pod:>5}", POD_ENV, "unknown placeholder {pod:>5}"),
        ("{pod", POD_ENV, "unbalanced brace"),
        ("{ordinal}", {"POD_NAME": "orders"}, "does not end in '-N'"),
        ("{ordinal}", {"POD_NAME": "orders-x1"}, "does not end in '-N'"),
        ("{pod}", {}, "neither POD_NAME nor HOSTNAME is set"),
        ("{group}", POD_ENV, "resolved to 'my group'"),
        ("", {}, "group.instance.id is empty"),
        ("a" * 250, {}, "250 characters long"),
    ],
)
def test_bad_templates_raise_settings_error(template: str, environ: dict[str, str], fragment: str) -> None:
    with pytest.raises(SettingsError) as info:
        resolve_instance_id(template, group="my group", environ=environ)
    assert fragment in info.value.message
    assert info.value.hint


def test_unknown_placeholder_error_lists_the_valid_ones() -> None:
    with pytest.raises(SettingsError) as info:
        resolve_instance_id("{zone}-{pod}", group="g", environ=POD_ENV)
    for name in ("{pod}", "{hostname}", "{ordinal}", "{group}"):
        assert name in (info.value.hint or "")


# --- duplicate_instance_ids ----------------------------------------------------------------------
def test_duplicates_list_every_member_holding_the_same_id() -> None:
    members = [("m1", "orders-0"), ("m2", "orders-1"), ("m3", "orders-0"), ("m4", None), ("m5", None)]
    assert duplicate_instance_ids(members) == {"orders-0": ["m1", "m3"]}


def test_dynamic_members_never_count_as_duplicates() -> None:
    assert duplicate_instance_ids([("m1", None), ("m2", None)]) == {}


def test_the_same_member_listed_twice_is_not_a_duplicate() -> None:
    assert duplicate_instance_ids([("m1", "a"), ("m1", "a")]) == {}


# --- fencing_message ------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_classic_protocol_fences_the_old_member(protocol: str) -> None:
    message = fencing_message("orders-0", protocol)  # type: ignore[arg-type]
    assert "FENCES THE OLD member" in message
    assert "FENCED_INSTANCE_ID" in message
    assert "'orders-0'" in message


def test_consumer_protocol_rejects_the_new_member() -> None:
    message = fencing_message("orders-0", "consumer")
    assert "rejects the NEW member" in message
    assert "UNRELEASED_INSTANCE_ID" in message
    assert "session expires" in message


# --- check_duplicate -----------------------------------------------------------------------------
def test_policy_off_never_reports() -> None:
    assert check_duplicate("orders-0", ["orders-0"], "cooperative", "off") is None


@pytest.mark.parametrize("policy", ["warn", "fail"])
def test_no_clash_reports_nothing(policy: str) -> None:
    assert check_duplicate("orders-0", ["orders-1"], "eager", policy) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_a_listed_holder_with_no_sign_it_runs_is_not_warned(protocol: str) -> None:
    """A static member stays listed after it closes (classic: no LeaveGroup; KIP-848: epoch -2), so the
    listing alone is this member's previous incarnation on every normal bounce."""
    assert check_duplicate("orders-0", ["orders-0"], protocol, "warn") is None  # type: ignore[arg-type]


def test_a_holder_shown_running_is_warned_with_the_protocol_specific_message() -> None:
    message = check_duplicate(
        "orders-0", iter(["orders-0"]), "cooperative", "warn", holder_running="its manifest was republished"
    )
    assert message is not None
    assert "FENCED_INSTANCE_ID" in message
    assert "The holder runs: its manifest was republished." in message


def test_a_kip848_member_restarted_in_a_normal_bounce_is_not_warned() -> None:
    """Its closed incarnation stays listed until its session ends; the broker's UNRELEASED_INSTANCE_ID,
    not this describe, tells a live holder (the consumer's fatal error names it)."""
    assert check_duplicate("orders-0", ["orders-0"], "consumer", "warn") is None


def test_fail_policy_still_refuses_a_held_id_under_kip848() -> None:
    with pytest.raises(SettingsError) as info:
        check_duplicate("orders-0", ["orders-0"], "consumer", "fail")
    assert "UNRELEASED_INSTANCE_ID" in (info.value.hint or "")


def test_fail_policy_raises_with_the_fencing_explanation() -> None:
    with pytest.raises(SettingsError) as info:
        check_duplicate("orders-0", ["orders-0"], "cooperative", "fail")
    assert "already held by a live member" in info.value.message
    assert "FENCED_INSTANCE_ID" in (info.value.hint or "")
