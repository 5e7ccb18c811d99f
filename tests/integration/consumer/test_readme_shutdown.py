"""The README's consumer snippet as a static member, stopped the way Kubernetes and systemd stop a service
(SIGTERM), run from the project's virtualenv next to a second member of its group on six partitions.

The dynamic member's handover is measured from the installed wheel (tests/install/test_readme_service.py);
a static member hands nothing over, so this one needs no wheel and stays off the install tier's worker.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kafka_coop.admin import ClusterAdmin
from tests.integration.consumer import readme_service as readme


def _launch(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def test_a_static_readme_service_on_sigterm_commits_and_closes_but_does_not_leave(
    bootstrap: str,
    admin: ClusterAdmin,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    group, topic = unique("readme"), topic_factory(readme.PARTITIONS)
    events, processed = tmp_path / "events.jsonl", tmp_path / "done.txt"
    program = readme.service_program(bootstrap, group, topic, events, "readme-static-1")
    with readme.running_survivor(bootstrap, group, topic) as survivor:
        service = readme.start_service(_launch, program, events, processed, survivor, bootstrap, topic)
        owned = {p for _, p in readme.events(events)[-1].owned}

        service.send_signal(signal.SIGTERM)
        stdout, stderr = service.communicate(timeout=30)
        assert service.returncode == 0, stderr
        assert "Traceback" not in stderr, stderr
        assert stdout.rstrip() == "after the block"
        kinds = [e.kind for e in readme.events(events)]
        assert kinds[-1] == "closed", kinds
        committed = {o.partition: o.committed for o in admin.offsets(group)}
        assert {p: committed[p] for p in owned} == {p: readme.done(processed)[p] for p in owned}
        # No LeaveGroup: the broker still holds the static member, so nothing moves before its session ends.
        time.sleep(2.0)
        assert "readme-static-1" in admin.describe_group(group).instance_ids
        assert survivor.owns() == readme.PARTITIONS // 2
