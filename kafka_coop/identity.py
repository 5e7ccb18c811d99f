"""Static membership identity: instance-id templates, duplicate detection and what a clash does.

A `group.instance.id` must be unique per live member and stable across restarts of the same member,
which is exactly what a StatefulSet pod name is — so ids are usually written as templates (`{pod}`,
`orders-{ordinal}`) and resolved from the environment at start-up. Two processes holding one id is the
classic static-membership outage, and its symptom differs by protocol (docs/protocols.md "Client
capabilities"): the classic coordinator fences the OLD member, KIP-848 rejects the NEW one. Everything here
is pure; the live instance ids come from the caller (an admin describe).
"""

from __future__ import annotations

import os
import re
import socket
import string
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from kafka_coop._vocab import RebalanceProtocol
from kafka_coop.errors import SettingsError

DuplicatePolicy = Literal["off", "warn", "fail"]

POD_ENV = "POD_NAME"
HOSTNAME_ENV = "HOSTNAME"
PLACEHOLDERS = ("pod", "hostname", "ordinal", "group")
_ORDINAL_SEPARATOR = "-"

# Kafka's valid-id rule (org.apache.kafka.common.internals.Topic.validate, used for group.instance.id).
INSTANCE_ID_MAX_LENGTH = 249
INSTANCE_ID_PATTERN = re.compile(r"[a-zA-Z0-9._-]+")
INSTANCE_ID_RESERVED = frozenset({".", ".."})


def validate_instance_id(value: str) -> str:
    """Apply Kafka's valid-id rule, because the coordinator rejects a JoinGroup that breaks it.

    The one implementation of the rule: ConsumerSettings checks ids with it, and resolve_instance_id
    checks what a template resolved to.
    """
    hint = "Use 1-249 characters from a-z, A-Z, 0-9, '.', '_' and '-', e.g. the pod name."
    if not value:
        raise SettingsError("group.instance.id is empty.", hint=hint)
    if value in INSTANCE_ID_RESERVED:
        raise SettingsError(f"group.instance.id cannot be {value!r}.", hint=hint)
    if len(value) > INSTANCE_ID_MAX_LENGTH:
        raise SettingsError(
            f"group.instance.id is {len(value)} characters long; "
            f"Kafka allows at most {INSTANCE_ID_MAX_LENGTH}.",
            hint=hint,
        )
    if not INSTANCE_ID_PATTERN.fullmatch(value):
        bad = sorted({ch for ch in value if not INSTANCE_ID_PATTERN.fullmatch(ch)})
        raise SettingsError(
            f"group.instance.id {value!r} contains characters Kafka does not allow: {''.join(bad)!r}.",
            hint=hint,
        )
    return value


def _pod(environ: Mapping[str, str]) -> str:
    name = environ.get(POD_ENV) or environ.get(HOSTNAME_ENV)
    if not name:
        raise SettingsError(
            f"The instance id uses {{pod}}, but neither {POD_ENV} nor {HOSTNAME_ENV} is set.",
            hint=f"Expose the pod name as {POD_ENV} (Kubernetes downward API: fieldRef metadata.name).",
        )
    return name


def _hostname(environ: Mapping[str, str]) -> str:
    return environ.get(HOSTNAME_ENV) or socket.gethostname()


def _ordinal(environ: Mapping[str, str]) -> str:
    pod = _pod(environ)
    head, sep, tail = pod.rpartition(_ORDINAL_SEPARATOR)
    if not (head and sep and tail.isascii() and tail.isdigit()):
        raise SettingsError(
            f"The instance id uses {{ordinal}}, but the pod name {pod!r} does not end in '-N'.",
            hint="Use {ordinal} only in a StatefulSet (pods named NAME-0, NAME-1, ...), or use {pod}.",
        )
    return tail


def _placeholders(template: str) -> list[str]:
    """Field names in `template`; `{{`/`}}` are literal braces, anything fancier is refused."""
    valid = ", ".join("{" + name + "}" for name in PLACEHOLDERS)
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        raise SettingsError(
            f"Instance id template {template!r} has an unbalanced brace.",
            hint=f"Valid placeholders are {valid}; write {{{{ or }}}} for a literal brace.",
        ) from None
    names: list[str] = []
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in PLACEHOLDERS or spec or conversion:
            shown = (
                "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            )
            raise SettingsError(
                f"Instance id template {template!r} has an unknown placeholder {shown}.",
                hint=f"Valid placeholders are {valid}.",
            )
        names.append(field)
    return names


def resolve_instance_id(
    template_or_value: str | None, *, group: str, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Resolve `{pod}`, `{hostname}`, `{ordinal}` and `{group}` and check the result is a valid id.

    `None` means dynamic membership and stays `None`. Only the placeholders used are resolved, so a
    Deployment can use `{hostname}` without having a StatefulSet ordinal.
    """
    if template_or_value is None:
        return None
    resolvers: dict[str, Callable[[], str]] = {
        "pod": lambda: _pod(environ),
        "hostname": lambda: _hostname(environ),
        "ordinal": lambda: _ordinal(environ),
        "group": lambda: group,
    }
    values = {name: resolvers[name]() for name in _placeholders(template_or_value)}
    resolved = template_or_value.format(**values)
    try:
        return validate_instance_id(resolved)
    except SettingsError as exc:
        if resolved == template_or_value:
            raise
        raise SettingsError(
            f"Instance id template {template_or_value!r} resolved to {resolved!r}: {exc.message}",
            hint=exc.hint,
        ) from None


def duplicate_instance_ids(members: Iterable[tuple[str, str | None]]) -> dict[str, list[str]]:
    """Instance ids held by more than one member id, in first-seen order; dynamic members are ignored.

    More than one holder of a static id in one describe means two processes share it and keep fencing
    each other (or, under KIP-848, one of them cannot join at all).
    """
    holders: dict[str, list[str]] = {}
    for member_id, instance_id in members:
        if instance_id is None:
            continue
        ids = holders.setdefault(instance_id, [])
        if member_id not in ids:
            ids.append(member_id)
    return {instance_id: ids for instance_id, ids in holders.items() if len(ids) > 1}


def fencing_message(instance_id: str, protocol: RebalanceProtocol) -> str:
    """Say which member loses when an id is reused, because the two protocols pick opposite ones."""
    if protocol == "consumer":
        return (
            f"group.instance.id {instance_id!r} is already held by a live member. Under KIP-848 "
            "(group.protocol=consumer) the broker rejects the NEW member with UNRELEASED_INSTANCE_ID until "
            "the current holder leaves the group or its session expires; the running member keeps its "
            "partitions."
        )
    return (
        f"group.instance.id {instance_id!r} is already held by a live member. Under the classic protocol "
        f"({protocol}) a new member joining with an id already in use FENCES THE OLD member: the running "
        "one gets FENCED_INSTANCE_ID and stops consuming, and the new one takes its partitions."
    )


def check_duplicate(
    instance_id: str,
    live_instance_ids: Iterable[str],
    protocol: RebalanceProtocol,
    policy: DuplicatePolicy,
    *,
    holder_running: str = "",
) -> str | None:
    """Check an id against the live group before joining; warn, fail or stay silent per `policy`.

    A listed holder is usually this member's own previous incarnation: a static member stays listed
    after it closes (classic: no LeaveGroup, KIP-345; KIP-848: member epoch -2) until its session ends,
    and the new one takes its place, so a normal bounce must not warn. A describe cannot tell it from a
    second running process, so `warn` speaks only on evidence the holder runs (`holder_running`: what
    shows it, e.g. its manifest, never withdrawn); without it, the loser's own fatal error names the
    twin (classic: the old member's FENCED_INSTANCE_ID; KIP-848: the new one's UNRELEASED_INSTANCE_ID).
    `fail` is for deployments where a restart never reuses a live id: it refuses on the listing alone.
    """
    if policy == "off" or instance_id not in set(live_instance_ids):
        return None
    if policy == "warn" and not holder_running:
        return None
    if policy == "fail":
        raise SettingsError(
            f"group.instance.id {instance_id!r} is already held by a live member of the group.",
            hint=f"Give every member its own id (e.g. '{{pod}}' in a StatefulSet), or wait for the holder to "
            f"leave. {fencing_message(instance_id, protocol)}",
        )
    return (
        f"{fencing_message(instance_id, protocol)} The holder runs: {holder_running}. If it was killed "
        "without closing and this process replaces it, this is expected."
    )
