"""Which static members remove-members sends, and the refusals (one sentence, the right exit code)."""

from __future__ import annotations

import pytest

from kafka_coop.errors import GateFailed, InvalidInput
from kafka_coop.membership import (
    RUNNING_WITHIN_S,
    choose_members,
    kafka_python_conf,
    refuse_unobservable,
    still_running,
)


def test_named_members_are_chosen_once_in_the_order_given() -> None:
    choice = choose_members("g", ["a", "b", "c"], requested=["c", "a", "c"])
    assert choice.instance_ids == ("c", "a")


def test_all_static_takes_every_static_member_the_group_lists() -> None:
    assert choose_members("g", ["a", "b"], all_static=True).instance_ids == ("a", "b")


def test_all_static_on_a_group_without_static_members_chooses_nothing() -> None:
    assert choose_members("g", [], all_static=True).instance_ids == ()


def test_an_unknown_instance_id_is_refused_with_exit_2_naming_the_members_there() -> None:
    with pytest.raises(InvalidInput) as err:
        choose_members("orders", ["svc-0", "svc-1"], requested=["svc-0", "svc-9"])
    assert err.value.exit_code == 2
    assert err.value.message == (
        "Group 'orders' has no static member with group.instance.id 'svc-9' "
        "(its static members: 'svc-0', 'svc-1')."
    )


@pytest.mark.parametrize(("requested", "all_static"), [((), False), (("a",), True)])
def test_naming_members_both_ways_or_neither_is_a_usage_error(
    requested: tuple[str, ...], all_static: bool
) -> None:
    with pytest.raises(InvalidInput) as err:
        choose_members("g", ["a"], requested=requested, all_static=all_static)
    assert err.value.exit_code == 2


def test_a_member_with_a_fresh_manifest_still_runs_and_is_refused_with_exit_1() -> None:
    with pytest.raises(GateFailed) as err:
        choose_members("g", ["a", "b"], all_static=True, manifest_age_s={"a": 12.0, "b": 400.0})
    assert err.value.exit_code == 1
    assert "'a'" in err.value.message and "'b'" not in err.value.message
    assert err.value.message.count(". ") == 0, "one sentence"


def test_force_removes_running_members_and_says_so() -> None:
    choice = choose_members("g", ["a"], requested=["a"], manifest_age_s={"a": 1.0}, force=True)
    assert choice.instance_ids == ("a",)
    assert any("--force" in note for note in choice.notes)


def test_a_stale_manifest_is_a_member_that_stopped_without_a_tombstone() -> None:
    choice = choose_members("g", ["a"], requested=["a"], manifest_age_s={"a": RUNNING_WITHIN_S + 1})
    assert choice.instance_ids == ("a",)


def test_members_without_a_manifest_are_removed_on_trust_and_the_note_says_so() -> None:
    choice = choose_members("g", ["a"], requested=["a"], manifest_age_s={})
    assert choice.notes == ("no manifest for 'a': that they stopped is taken on trust",)


def test_librdkafka_security_settings_become_kafka_python_arguments() -> None:
    conf = kafka_python_conf(
        "b1:9093,b2:9093",
        {
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "svc",
            "sasl.password": "s3cret",
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.endpoint.identification.algorithm": "none",
            "reconnect.backoff.ms": "20",
        },
    )
    assert conf == {
        "bootstrap_servers": ["b1:9093", "b2:9093"],
        "client_id": "kafka-coop-admin",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": "s3cret",
        "ssl_cafile": "/etc/ca.pem",
        "ssl_check_hostname": False,
    }


def test_a_setting_kafka_python_cannot_take_is_refused_without_echoing_values() -> None:
    with pytest.raises(InvalidInput) as err:
        kafka_python_conf("b:9092", {"sasl.oauthbearer.client.secret": "hush"})
    assert err.value.exit_code == 2
    assert "'sasl.oauthbearer.client.secret'" in err.value.message
    assert "hush" not in str(err.value)


def test_still_running_are_the_members_with_a_fresh_manifest() -> None:
    assert still_running(["a", "b", "c"], {"a": 3.0, "b": RUNNING_WITHIN_S + 5}) == ["a"]


def test_waiting_for_members_that_publish_no_manifest_is_refused_with_exit_1() -> None:
    with pytest.raises(GateFailed) as err:
        refuse_unobservable("g", ["a", "b"], {"a": 3.0})
    assert err.value.exit_code == 1
    assert err.value.message.startswith("Cannot see when 'b' of group 'g' stop")
    with pytest.raises(GateFailed):
        refuse_unobservable("g", ["a"], None)
