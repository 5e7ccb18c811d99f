"""Runs a program twice on a real broker, on confluent's class and on kafka-coop's, and checks the rule.

After every step the committed offsets are read back from the broker (a side consumer's `committed`)
and held against the app's ledger (tests/differential/app.py) and against the confluent run:
- loss: above what the rule lets anyone commit (what the app finished, or committed itself);
- rewind: below what the app's own synchronous commit put there, where confluent did not go below it;
- regression: at close (or the close SIGTERM makes), more left uncommitted than confluent left, beyond
  what the rule allows (explicit marks: contiguity; the drop-in rule counts the last batch done on a
  normal close; a close while processing raised may commit less: never the record that raised; with
  auto commit off, no more than the app's own commits could commit when they began: a record a poll
  on another thread or task returns while commit() runs is not the app's held batch when it called);
- unclean: SIGTERM did not end the app with exit code 0.
A commit made under a network fault (`cut_commit`) may have landed or not when the app's call returns
(librdkafka sends one whose request or reply was lost again once the coordinator is back): what it
asked for counts as the app's commit (its landing is no loss), toward the floor only where it returned
success; an explicit commit of the app's below its floor is its own rewind, and the floor follows it.

A program with network faults (`cut_commit`) needs `faults`, the test bed's toxiproxy in front of a
`Sandbox(proxied=True)` (testbed/faults.py): the app is bootstrapped at its proxied listener, so all of
its connections go through the proxy, while the reader, the producer and the second member stay on
the direct one. The runs are one after the other, so one proxy serves both, healed between them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_coop.admin import ClusterAdmin
from testbed.faults import NetworkFaults
from tests.differential.program import PARTITIONS, RECORDS, Program, shrink_candidates

ROOT = Path(__file__).resolve().parents[2]
STEP_TIMEOUT_S = 60.0
REBALANCE_UNDER_WAY_S = 1.0  # join_commit: the second member's JoinGroup reached the group
SETTLE_S = 0.15  # an asynchronous commit the step made lands before the read
FAULT_S = 1.0  # cut_commit: the fault is healed this long after the step was sent
OUTAGE_S = 7.0  # cut_commit "outage": longer than the classic programs' 6 s session
DELAY_MS = 500  # cut_commit "delay": each way, beyond SETTLE_S (the read comes before the commit lands)


@dataclass
class Observation:
    step: tuple[Any, ...]
    report: dict[str, Any]
    committed: dict[int, int]


@dataclass
class Run:
    impl: str
    observations: list[Observation] = field(default_factory=list)
    crash: str | None = None
    exit_code: int | None = None  # the app's, after a program that ends with SIGTERM


@dataclass
class Verdict:
    program: Program
    violations: list[str]
    confluent_violations: list[str]
    seconds: float
    errors: list[str] = field(default_factory=list)  # "impl step: error" a step caught (a refused commit)

    @property
    def kinds(self) -> set[str]:
        return {v.split(":", 1)[0] for v in self.violations}


class SecondMember:
    """A plain confluent Consumer on a thread that polls and never commits: it moves partitions, and
    every committed offset stays the app's."""

    def __init__(self, bootstrap: str, group: str, topic: str, program: Program) -> None:
        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "second",
            "auto.offset.reset": "earliest",
            **program.conf(),
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
        }
        self._consumer = Consumer(conf)
        self._consumer.subscribe([topic])
        self.owned = 0  # how many partitions it holds, as of its last poll
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.1)
            self.owned = len(self._consumer.assignment())
        self._consumer.close()

    def leave(self) -> None:
        self._stop.set()

    def join(self) -> None:
        self._stop.set()
        self._thread.join(30)


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(RECORDS):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def read_committed(reader: Consumer, topic: str) -> dict[int, int]:
    tps = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def make_fault(faults: NetworkFaults, fault: str) -> None:
    """One of program.NET_FAULTS on every connection of the app (healed by `faults.heal()`)."""
    if fault == "delay":
        faults.latency(DELAY_MS)
        return
    stream = {"request": "upstream", "response": "downstream", "outage": "downstream"}[fault]
    for proxy in faults.proxies:  # reset_peer, timeout 0: a reset the moment data flows that way
        faults.toxiproxy.add_toxic(proxy, f"reset-{stream}", "reset_peer", stream, {"timeout": 0})


def run_once(
    program: Program, impl: str, bootstrap: str, admin: ClusterAdmin, faults: NetworkFaults | None = None
) -> Run:
    tag = uuid.uuid4().hex[:8]
    topic, group = f"diff-{impl}-{tag}", f"diff-{impl}-{tag}"
    admin.ensure_topic(topic, PARTITIONS)
    produce(bootstrap, topic)
    spec = {"program": repr(program), "impl": impl, "bootstrap": bootstrap, "topic": topic, "group": group}
    if program.network:
        if faults is None:
            raise ValueError(f"{program!r} has network faults: run it with `faults` (testbed/faults.py)")
        spec["app_bootstrap"] = faults.bootstrap
        faults.heal()
    heal: threading.Timer | None = None
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.differential.app", json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": "false"})
    second: SecondMember | None = None
    run = Run(impl)
    last: dict[str, Any] = {"permit": {}, "floor": {}, "hi": {}, "bound": {}, "owned": []}
    assert child.stdin is not None and child.stdout is not None
    try:
        if _line(child) is None:
            run.crash = _stderr(child)
            return run
        for step in program.steps:
            if step[0] == "kill":
                child.send_signal(signal.SIGKILL)
                child.wait(10)
                time.sleep(0.5)
                run.observations.append(Observation(step, last, read_committed(reader, topic)))
                break
            if step[0] in ("join", "join_commit"):
                second = SecondMember(bootstrap, group, topic, program)
                if step[0] == "join_commit":
                    time.sleep(REBALANCE_UNDER_WAY_S)
            elif step[0] == "leave" and second is not None:
                second.leave()
            elif step[0] == "sigterm":
                child.send_signal(signal.SIGTERM)
            elif step[0] == "cut_commit" and faults is not None:
                make_fault(faults, str(step[1]))
                heal = threading.Timer(OUTAGE_S if step[1] == "outage" else FAULT_S, faults.heal)
                heal.start()
            child.stdin.write(json.dumps(list(step)) + "\n")
            child.stdin.flush()
            line = _line(child)
            if line is None:
                run.crash = _stderr(child)
                return run
            last = line
            if step[0] == "leave" and second is not None:
                second.join()
                second = None
            if step[0] == "sigterm":
                try:
                    run.exit_code = child.wait(20)
                except subprocess.TimeoutExpired:
                    run.exit_code = None
            time.sleep(SETTLE_S)
            run.observations.append(Observation(step, last, read_committed(reader, topic)))
            if heal is not None:  # the next step begins on a healed network
                heal.join()
                heal = None
        return run
    finally:
        if heal is not None:
            heal.cancel()
        if faults is not None and program.network:
            faults.heal()
        if child.poll() is None:
            child.kill()
        child.wait(10)
        if second is not None:
            second.join()
        reader.close()


def _line(child: subprocess.Popen[str]) -> dict[str, Any] | None:
    assert child.stdout is not None
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(child.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(STEP_TIMEOUT_S)
    if not result or not result[0]:
        return None
    parsed: dict[str, Any] = json.loads(result[0])
    return parsed


def _stderr(child: subprocess.Popen[str]) -> str:
    if child.poll() is None:
        child.kill()
    child.wait(10)
    assert child.stderr is not None
    return child.stderr.read()[-2000:]


def check(program: Program, run: Run, oracle: Run | None) -> list[str]:
    """The rule's violations in `run`, judged against its own ledger and, where the rule compares,
    against the confluent run `oracle`."""
    found: list[str] = []
    if run.crash is not None:
        if oracle is None or oracle.crash is None:
            found.append(f"crash: {run.crash.strip().splitlines()[-1] if run.crash.strip() else 'no output'}")
        return found
    for i, obs in enumerate(run.observations):
        at = f"after step {i} {obs.step}"
        permit = {int(k): v for k, v in obs.report["permit"].items()}
        floor = {int(k): v for k, v in obs.report["floor"].items()}
        for p, committed in sorted(obs.committed.items()):
            if committed > permit.get(p, -1):
                found.append(f"loss: p{p} committed {committed} > {permit.get(p, -1)} the app finished, {at}")
            if p in floor and committed < floor[p] and not _oracle_below_floor(oracle, i, p):
                found.append(f"rewind: p{p} committed {committed} < {floor[p]} the app committed, {at}")
    if program.steps and program.steps[-1] == ("sigterm",) and run.exit_code != 0:
        found.append(f"unclean: SIGTERM ended the app with exit code {run.exit_code} (not 0)")
    if oracle is not None and oracle.crash is None:
        found.extend(_regressions(program, run, oracle))
    return found


def _oracle_below_floor(oracle: Run | None, i: int, p: int) -> bool:
    if oracle is None or i >= len(oracle.observations):
        return False
    obs = oracle.observations[i]
    floor = {int(k): v for k, v in obs.report["floor"].items()}
    return p in obs.committed and p in floor and obs.committed[p] < floor[p]


def _regressions(program: Program, run: Run, oracle: Run) -> list[str]:
    """At a normal close, per partition: kafka-coop leaves at most as much uncommitted as confluent
    (relative to what each run was handed), plus what contiguity holds back under explicit marks.
    Only where both runs saw the same ownership at every step (which partition a rebalance moves is
    the broker's choice)."""
    if not run.observations or run.observations[-1].step not in (("close",), ("sigterm",)):
        return []
    if len(run.observations) != len(oracle.observations):
        return []
    if any(
        a.report["owned"] != b.report["owned"]
        for a, b in zip(run.observations[:-1], oracle.observations[:-1], strict=True)
    ):
        return []
    mine, theirs = run.observations[-1], oracle.observations[-1]
    found = []
    for p_str, hi in mine.report["hi"].items():
        p = int(p_str)
        their_hi = theirs.report["hi"].get(p_str)
        if their_hi is None:
            continue
        their_gap = their_hi - theirs.committed.get(p, 0)
        bound = mine.report["bound"][p_str]
        if not program.auto_commit:  # only the app's commits commit: contiguity as it was at them
            bound = min(bound, mine.report.get("allowed", {}).get(p_str, -1))
        allowance = hi - bound if program.marks else 0
        expected = hi - their_gap - allowance
        if not program.auto_commit and "entitled" in mine.report:  # as of when the app's commits began
            expected = min(expected, mine.report["entitled"].get(p_str, -1))
        if mine.committed.get(p, 0) < expected:
            found.append(
                f"regression: p{p} committed {mine.committed.get(p, 0)} at close, confluent "
                f"{theirs.committed.get(p, 0)} (kafka-coop should hold {expected} or more)"
            )
    return found


def run_program(
    program: Program, bootstrap: str, admin: ClusterAdmin, faults: NetworkFaults | None = None
) -> Verdict:
    started = time.monotonic()
    oracle = run_once(program, "confluent", bootstrap, admin, faults)
    coop = run_once(program, "coop", bootstrap, admin, faults)
    errors = [
        f"{run.impl} {obs.step[0]}: {obs.report['error']}"
        for run in (oracle, coop)
        for obs in run.observations
        if obs.report.get("error")
    ]
    return Verdict(
        program,
        check(program, coop, oracle),
        check(program, oracle, None),
        time.monotonic() - started,
        errors,
    )


def shrink(
    verdict: Verdict,
    run: Callable[[Program], Verdict],
    *,
    attempts: int = 30,
    log: Callable[[str], None] = lambda _: None,
) -> Verdict:
    """The smallest program found that still violates the rule the same way (greedy: the first smaller
    candidate that still fails is kept, and candidates are tried again from it)."""
    best = verdict
    left = attempts
    improved = True
    while improved and left > 0:
        improved = False
        for candidate in shrink_candidates(best.program):
            if left <= 0:
                break
            left -= 1
            trial = run(candidate)
            log(f"shrink {'kept' if trial.kinds & best.kinds else 'drop'}: {candidate!r}")
            if trial.kinds & best.kinds:
                best = trial
                improved = True
                break
    return best
