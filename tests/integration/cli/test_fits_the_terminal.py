"""`describe` and `verify-group` as a person sees them: the real command in a real pseudo-terminal
(tmux) 80 and 120 columns wide, against a live group. No line may be wider than the terminal, and what
the output is read for (member ids, partitions, check names, the verdict) must still be there.

tmux is part of the test bed like Java (docs/contributing.md): a missing tmux fails, it never skips.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from kafka_coop.admin import ClusterAdmin
from kafka_coop.sandbox.testing import MemberProcesses, MemberSpec

DONE = "__h6_done__"


def _shown_in_tmux(argv: list[str], width: int, tmp_path: Path) -> str:
    """The screen after `argv` ran in a detached tmux session `width` columns wide, each line as the
    program wrote it: -J joins the lines the terminal wrapped, so a line too wide shows as one."""
    tmux = shutil.which("tmux")
    assert tmux is not None, "tmux is part of the test bed (apt-get install tmux)"
    session = f"fit-{uuid.uuid4().hex[:8]}"
    script = tmp_path / f"{session}.sh"
    script.write_text(f"clear; NO_COLOR=1 {shlex.join(argv)}; echo {DONE}; sleep 600\n")
    subprocess.run(
        [tmux, "new-session", "-d", "-s", session, "-x", str(width), "-y", "100", f"bash --norc {script}"],
        check=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [tmux, "capture-pane", "-p", "-J", "-t", session], capture_output=True, text=True, check=True
            ).stdout
            if DONE in screen:
                return "\n".join(line.rstrip() for line in screen.splitlines())
            time.sleep(0.2)
        raise AssertionError(f"the command did not finish in tmux:\n{screen}")
    finally:
        subprocess.run([tmux, "kill-session", "-t", session], check=False)


def test_describe_and_verify_group_fit_80_and_120_columns(
    bootstrap: str,
    admin: ClusterAdmin,
    processes: MemberProcesses,
    topic_factory: Callable[[int], str],
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topic, group = topic_factory(4), unique("fit")
    processes.add(MemberSpec(name="m0", kind="python", group=group, topics=(topic,), manifests=False))
    processes.add(MemberSpec(name="m1", kind="python", group=group, topics=(topic,), manifests=False))
    processes.wait_stable(group, members=2, partitions=4)
    member_ids = [m.member_id for m in admin.describe_group(group).members]
    cli = [sys.executable, "-m", "kafka_coop.cli"]
    for width in (80, 120):
        describe = _shown_in_tmux([*cli, "describe", group, "--bootstrap-server", bootstrap], width, tmp_path)
        lines = describe.splitlines()
        assert max(len(line) for line in lines) <= width, describe
        for member_id in member_ids:
            assert member_id in describe, describe
        assert f"{topic}:0,1" in describe and f"{topic}:2,3" in describe, describe
        gate = [*cli, "verify-group", group, "--bootstrap-server", bootstrap, "--expect-members", "2"]
        verify = _shown_in_tmux(gate, width, tmp_path)
        assert max(len(line) for line in verify.splitlines()) <= width, verify
        assert "group-stable" in verify and "member-count" in verify, verify
        assert "gate PASS" in verify or "gate WARN" in verify, verify
