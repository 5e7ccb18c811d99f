"""`kafka-coop remove-members`: static members leave now instead of after session.timeout.ms (KIP-345)."""

from __future__ import annotations

import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click
from pydantic import BaseModel, ConfigDict

from kafka_coop.errors import GateFailed, KafkaCoopError
from kafka_coop.events import now_ms
from kafka_coop.manifest import DEFAULT_MANIFEST_TOPIC, Manifest
from kafka_coop.membership import choose_members, refuse_unobservable, still_running

if TYPE_CHECKING:
    from kafka_coop.membership import ManifestWatch

from ._context import (
    Terminal,
    admin_for,
    bootstrap_option,
    command_config_option,
    missing_group,
    output_option,
    pass_terminal,
)
from ._tables import aligned_table, plural

WAIT_POLL_S = 0.1


class RemovalReport(BaseModel):
    """What `remove-members --output json` prints (schema `remove-members`)."""

    model_config = ConfigDict(frozen=True)

    v: Literal[1] = 1
    group: str
    removed: tuple[str, ...]
    already_gone: tuple[str, ...]
    failed: dict[str, str]
    state_after: str
    members_after: int
    notes: tuple[str, ...]


@click.command("remove-members")
@click.argument("group")
@bootstrap_option()
@command_config_option()
@click.option(
    "--instance-id",
    "instance_ids",
    multiple=True,
    metavar="ID",
    help="group.instance.id of a stopped static member; repeatable.",
)
@click.option("--all-static", is_flag=True, help="Every static member the group still lists.")
@click.option(
    "--force", is_flag=True, help="Remove members whose manifest says they still run (they rejoin)."
)
@click.option(
    "--wait-stopped",
    type=click.FloatRange(min=0),
    default=0.0,
    metavar="SECONDS",
    help="Start it together with the stop: wait up to SECONDS for the members' manifests to say they "
    "closed, then remove them at once (members without a manifest are refused).",
)
@click.option("--manifests-topic", default=DEFAULT_MANIFEST_TOPIC, show_default=True, help="'' to read none.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds.")
@output_option()
@pass_terminal
def remove_members(
    term: Terminal,
    group: str,
    bootstrap: str,
    command_config: Path | None,
    instance_ids: tuple[str, ...],
    all_static: bool,
    force: bool,
    wait_stopped: float,
    manifests_topic: str,
    timeout: float,
    output: str,
) -> None:
    """Send LeaveGroup for stopped static members of GROUP, so the group rebalances (or empties) now."""
    # lazy: remove-members --help loads no client (~0.25 s, ~0.1 s)
    from kafka_coop.inspection import read_manifest_keys
    from kafka_coop.membership import LeaveGroupClient, ManifestWatch

    admin, conf = admin_for(bootstrap, command_config)
    watch: ManifestWatch | None = None
    # The reads wait on librdkafka's threads while this one imports kafka-python and bootstraps it.
    pool = ThreadPoolExecutor(max_workers=3)
    try:
        live_f = pool.submit(admin.describe_group, group, timeout_s=timeout)
        watch_f = (
            pool.submit(ManifestWatch, bootstrap, conf, manifests_topic, timeout_s=timeout)
            if manifests_topic and wait_stopped > 0
            else None
        )
        read_f = (
            pool.submit(read_manifest_keys, bootstrap, conf, topic=manifests_topic, timeout_s=timeout)
            if manifests_topic and wait_stopped == 0
            else None
        )
        # kafka-python's bootstrap waits out --timeout on a refused connection or login, which
        # librdkafka's describe tells at once: whichever fails first ends the wait.
        client_f = pool.submit(LeaveGroupClient, bootstrap, conf, timeout)
        wait([live_f, client_f], return_when=FIRST_EXCEPTION)  # type: ignore[arg-type]
        if live_f.done():
            live_f.result()
        try:
            client = client_f.result()
        except KafkaCoopError:
            # kafka-python says only "Unable to bootstrap" for a refused login too; librdkafka's answer
            # to the same request says why (authentication failed, not authorized), so it goes first.
            live_f.result()
            raise
    except BaseException:  # an error or Ctrl-C does not wait for the reads in flight
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    try:
        live = live_f.result()
        if live.state == "dead" and not live.members:
            raise missing_group(group, bootstrap)
        if watch_f is not None:
            watch = watch_f.result()
            ages, closed = _observe(group, watch.latest, watch.error)
        else:
            ages, closed = _observe(group, *(read_f.result() if read_f is not None else ({}, "not read")))
        if wait_stopped > 0:
            chosen = choose_members(
                group, live.instance_ids, requested=instance_ids, all_static=all_static, force=True
            ).instance_ids
            refuse_unobservable(group, chosen, ages, closed)
            assert watch is not None  # refuse_unobservable refused every member without a watch
            ages, closed = _wait_until_closed(group, chosen, watch, wait_stopped)
        choice = choose_members(
            group,
            live.instance_ids,
            requested=instance_ids,
            all_static=all_static,
            manifest_age_s=ages,
            force=force,
            closed=closed,
        )
        outcomes = client.remove(group, choice.instance_ids)
    finally:
        client.close()
        if watch is not None:
            watch.close()
    after = admin.describe_group(group, timeout_s=timeout) if outcomes else live
    report = RemovalReport(
        group=group,
        removed=tuple(o.instance_id for o in outcomes if o.error is None),
        already_gone=tuple(o.instance_id for o in outcomes if o.error == "UNKNOWN_MEMBER_ID"),
        failed={o.instance_id: o.error for o in outcomes if o.error not in (None, "UNKNOWN_MEMBER_ID")},
        state_after=after.state,
        members_after=len(after.members),
        notes=choice.notes,
    )
    if output == "json":
        term.emit_json(report)
    else:
        _render(term, report)
    if report.failed:
        raise click.exceptions.Exit(1)


def _observe(
    group: str, latest: dict[str, Manifest | None], error: str | None
) -> tuple[dict[str, float] | None, set[str]]:
    """(seconds since each static member of `group` last published its manifest, or None if the topic
    was unreadable; the instance ids whose latest record is the tombstone of their close)."""
    prefix = f"{group}/"
    closed = {key.removeprefix(prefix) for key, m in latest.items() if m is None and key.startswith(prefix)}
    if error is not None:
        return None, closed
    now = now_ms()
    ages = {
        m.instance_id: (now - m.heartbeat_ms) / 1000.0
        for m in latest.values()
        if m is not None and m.group == group and m.instance_id
    }
    return ages, closed


def _wait_until_closed(
    group: str, chosen: tuple[str, ...], watch: ManifestWatch, wait_s: float
) -> tuple[dict[str, float] | None, set[str]]:
    """Follow the manifests until none of `chosen` is fresh (a close publishes a tombstone)."""
    deadline = time.monotonic() + wait_s
    while True:
        ages, closed = _observe(group, watch.latest, watch.error)
        if ages is not None and not still_running(chosen, ages):
            return ages, closed
        if time.monotonic() >= deadline:
            if ages is None:
                raise GateFailed(
                    f"The manifests of group {group!r} could not be read while waiting ({watch.error}).",
                    hint="Run remove-members after the members stopped, without --wait-stopped.",
                )
            return ages, closed  # choose_members refuses what still runs, in its one sentence
        watch.poll(WAIT_POLL_S)


def _render(term: Terminal, report: RemovalReport) -> None:
    if not (report.removed or report.already_gone or report.failed):
        term.out.print(f"Group {report.group} has no static members to remove.", highlight=False)
        return
    rows = [[instance_id, "removed"] for instance_id in report.removed]
    rows += [[instance_id, "already gone"] for instance_id in report.already_gone]
    rows += [[instance_id, f"refused by the broker: {error}"] for instance_id, error in report.failed.items()]
    term.out.print(aligned_table(("instance id", "result"), rows, title=f"remove-members {report.group}"))
    for note in report.notes:
        term.out.print(f"note: {note}", highlight=False)
    term.out.print(
        f"group {report.group} is now {report.state_after} with {plural(report.members_after, 'member')}",
        highlight=False,
    )
