"""A restart hook as a user writes one, and the deployment that answers it in a test.

The hook script asks for a restart of {member} on {settings} and returns once the member runs again.
What answers it stands for the user's deployment (`kubectl rollout restart`): a thread of the test that
restarts the test bed's member process with the settings the hook passed. Requests that arrive
together (a cutover's) are served together: every member stops, then every member starts.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from kafka_coop._vocab import JAVA_ASSIGNOR_CLASSES
from kafka_coop.sandbox.testing import MemberProcesses

ASSIGNOR_OF_CLASS = {v: k for k, v in JAVA_ASSIGNOR_CLASSES.items()}
GATHER_S = 0.3  # requests this close together are one batch

HOOK = """\
import json, os, sys, time
from pathlib import Path

requests, member, phase, settings = sys.argv[1:5]
name = f"{member}-{time.time_ns()}"
tmp = Path(requests) / (name + ".tmp")
tmp.write_text(json.dumps({"member": member, "phase": phase, "settings": json.loads(settings)}))
os.rename(tmp, Path(requests) / (name + ".req"))
done = Path(requests) / (name + ".done")
deadline = time.monotonic() + 120
while not done.exists():
    if time.monotonic() > deadline:
        sys.exit(124)
    time.sleep(0.05)
print(f"restarted {member} for phase {phase}")
sys.exit(int(done.read_text() or 0))
"""


class Deployment:
    """Answers the hook's requests: restarts the named member process on the settings it was given."""

    def __init__(self, processes: MemberProcesses, requests: Path) -> None:
        self.processes = processes
        self.requests = requests
        self.restarts: list[tuple[str, tuple[str, ...]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> Deployment:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _serve(self) -> None:
        while not self._stop.is_set():
            if list(self.requests.glob("*.req")):
                time.sleep(GATHER_S)
                batch = sorted(self.requests.glob("*.req"))
                asked = [json.loads(r.read_text()) for r in batch]
                codes = self._restart([(a["member"], a["settings"]) for a in asked])
                for request, code in zip(batch, codes, strict=True):
                    request.with_suffix(".done").write_text(str(code))
                    request.unlink()
            time.sleep(0.05)

    def _restart(self, asked: list[tuple[str, dict[str, Any]]]) -> list[int]:
        """Stop every member asked for, then start each on its settings; an exit code per request."""
        planned: list[tuple[str, tuple[str, ...]] | None] = []
        static: set[str] = set()
        for name, settings in asked:
            classes = settings.get("partition.assignment.strategy")
            assignors = tuple(ASSIGNOR_OF_CLASS[c.strip()] for c in classes.split(",")) if classes else None
            planned.append((name, assignors) if assignors else None)
            if "group.instance.id" in settings:  # the phase runs static members: each its own stable id
                static.add(name)
        for entry in planned:
            if entry is not None:
                self.processes[entry[0]].stop()
        for entry in planned:
            if entry is not None:
                member = self.processes[entry[0]]
                instance_id = member.spec.instance_id or (entry[0] if entry[0] in static else None)
                member.spec = member.spec.replace(assignors=entry[1], instance_id=instance_id)
                member.start()
                self.restarts.append(entry)
        return [0 if entry is not None else 3 for entry in planned]
