"""restart_floor's JVM variants: a wrong or unavailable one is refused before any bed starts."""

from __future__ import annotations

import pytest

from bench import _restart_floor_jvms as member_jvms
from bench._restart_floor_jvms import MemberJvm, check_jvms, member_command


def test_an_unknown_jvm_variant_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown jvm.*graal.*known: default-cds"):
        check_jvms(["default-cds", "graal"])


def test_a_variant_whose_jdk_is_missing_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = MemberJvm("/nonexistent/jdk/bin/java", ("-Xmx192m",), "aot", live=False)
    monkeypatch.setitem(member_jvms.MEMBER_JVMS, "elsewhere", missing)
    with pytest.raises(ValueError, match="needs /nonexistent/jdk/bin/java"):
        check_jvms(["elsewhere"])


def test_a_variant_replaces_the_fleets_jvm_options_and_keeps_the_members_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fleet's options and archive go; the member's own options, classpath and arguments stay."""
    monkeypatch.setitem(
        member_jvms.MEMBER_JVMS, "x", MemberJvm("/opt/j/bin/java", ("-Xint",), "aot", live=True)
    )
    fleet_cmd = [
        "java",
        *member_jvms.JVM_OPTIONS,
        "-XX:SharedArchiveFile=/c/member.jsa",
        "-Dmember=1",
        "-cp",
        "/c/coop-member.jar",
        "CoopMember",
        "--group",
        "g",
    ]
    assert member_command(fleet_cmd, "x", "4.1.1", "classic") == [
        "/opt/j/bin/java",
        "-Xint",
        "-Dmember=1",
        "-cp",
        "/c/coop-member.jar",
        "CoopMember",
        "--group",
        "g",
    ]
