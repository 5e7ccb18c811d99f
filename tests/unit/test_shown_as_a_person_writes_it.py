"""What the CLI prints for a person to read or paste: a member's host without Java's `/`, and an ACL
command line a shell runs as written (issue 27)."""

from __future__ import annotations

import shlex

from kafka_coop.admin import client_host
from kafka_coop.manifest import MANIFEST_TOPIC_ACLS


def test_a_host_kafka_did_not_look_up_is_shown_without_javas_leading_slash() -> None:
    assert client_host("/127.0.0.1") == "127.0.0.1"


def test_a_looked_up_host_keeps_its_name_and_address() -> None:
    assert client_host("app-1/10.0.0.7") == "app-1/10.0.0.7"


def test_the_acl_command_quotes_a_placeholder_principal_so_a_shell_does_not_read_a_redirect() -> None:
    line = MANIFEST_TOPIC_ACLS[0].kafka_acls_command("_kafka_coop_manifests", "User:<service>", "b:9092")
    words = shlex.split(line)
    assert words[words.index("--allow-principal") + 1] == "User:<service>"
    assert "'User:<service>'" in line
