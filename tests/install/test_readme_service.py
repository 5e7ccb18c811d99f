"""The README's consumer snippet as a service team runs it: the installed wheel's interpreter, outside the
checkout, stopped the way Kubernetes and systemd stop a service (SIGTERM), next to a second member of
its group on six partitions. Its handover is what a rolling deploy waits for."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from kafka_coop.admin import ClusterAdmin
from tests.install.conftest import Installed
from tests.integration.consumer import readme_service as readme
from tests.integration.members import wait_for


def test_the_readme_service_from_the_wheel_on_sigterm_commits_leaves_and_hands_over_at_once(
    base_install: Installed,
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    group, topic = unique("readme"), topic_factory(readme.PARTITIONS)
    events, processed = tmp_path / "events.jsonl", tmp_path / "done.txt"
    program = readme.service_program(bootstrap, group, topic, events, None)
    with readme.running_survivor(bootstrap, group, topic) as survivor:
        service = readme.start_service(
            lambda args: base_install.popen("python", *args),
            program,
            events,
            processed,
            survivor,
            bootstrap,
            topic,
        )
        owned = {p for _, p in readme.events(events)[-1].owned}

        began = time.monotonic()
        service.send_signal(signal.SIGTERM)
        wait_for(
            lambda: survivor.owns() == readme.PARTITIONS,
            timeout_s=60,
            what="the survivor to own every partition",
        )
        handover = time.monotonic() - began
        stdout, stderr = service.communicate(timeout=30)

    print(f"handover after SIGTERM (installed wheel): {handover:.2f} s")
    assert handover < readme.HANDOVER_LIMIT_S
    assert service.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert stdout.rstrip() == "after the block"
    assert readme.module_file(processed).startswith(str(base_install.root)), "imported from the checkout"
    kinds = [e.kind for e in readme.events(events)]
    assert kinds[-2:] == ["revoked", "closed"], kinds
    done = readme.done(processed)
    assert owned <= done.keys(), (owned, done)
    committed = {o.partition: o.committed for o in admin.offsets(group)}
    assert {p: committed[p] for p in owned} == {p: done[p] for p in owned}
