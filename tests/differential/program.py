"""App programs for the differential harness: what a confluent-kafka service does, as data.

A `Program` is the dimensions (protocol, driver, commit settings) and a list of steps; `generate(seed)`
draws one, `shrink_candidates(p)` lists smaller ones, and `repr(p)` is a literal that rebuilds it (the
form kept in regressions.py). Pure: no client, no broker. A program with a `cut_commit` step (the third
stream, `generate(seed, network=True)`) reaches the broker through toxiproxy (testbed/faults.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace

PROTOCOLS = ("eager-range", "cooperative-sticky", "consumer")
DRIVERS = ("sync", "aio")
MARK_STYLES = ("mark_done", "store_offsets")
PARTITIONS = 2
RECORDS = 40  # per partition, produced before the program starts

# Steps are tuples, so a program prints as a short literal:
#   ("poll", n)            poll() one record at a time until n more records
#   ("consume", n)         consume(n) batches until n more records
#   ("mark", which)        explicit marks: mark_done/store_offsets of the unfinished records ("all",
#                          "odd": every other one, "last": only the newest); drop-in: nothing
#   ("mark_thread", n)     poll n more records while another thread (task) marks the earlier ones
#   ("commit", how, sync)  commit() / commit(message=newest) / commit(offsets=what is done), sync or not
#   ("commit_thread", n)   n records trickle in and are polled (all but the first marked) while another
#                          thread (task) calls commit(asynchronous=False) in a loop
#   ("pause", ms)          no call at all for ms (an interval commit falls due)
#   ("idle", ms)           poll for ms, processing what comes
#   ("join",) ("leave",)   a second member (a plain confluent Consumer that never commits) joins/leaves
#   ("join_commit", how, sync)  the second member joins and, while the group rebalances (before the
#                          app's next poll), the app commits: a commit the group may refuse for real
#                          (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, STALE_MEMBER_EPOCH)
#   ("overrun", how, sync) no call for longer than max.poll.interval.ms: the group drops the member;
#                          then a commit ("none": no commit) before any poll, which the group refuses
#                          for real (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION); the next poll serves the
#                          lost partitions, and the app polls until it owns partitions again
#   ("cut_commit", fault, how, sync)  a commit ("commit"'s how and sync) made while the network between
#                          the app and the broker is faulty, healed runner.py's FAULT_S after the step began:
#                          "request": every connection is reset the moment the app sends (the commit
#                          never reaches the broker); "response": reset the moment the broker answers
#                          (the commit lands, its reply is lost); "delay": runner.py's DELAY_MS more each way
#                          (the commit lands after the runner read the offsets back); "outage": as
#                          "response", healed only after runner.py's OUTAGE_S, longer than a classic
#                          session (the member is dropped; a commit that landed may still raise)
#   ("close",) ("kill",)   the program ends: close(), or SIGKILL of its process
#   ("raise",)             the program ends: processing the next record raises, the loop ends on the
#                          exception and the app closes the consumer while it propagates (its `with`)
#   ("sigterm",)           the program ends: SIGTERM; kafka-coop's app is inside `with`/`async with`
#                          (no handler of its own), confluent's has examples/service.py's handler (a
#                          `running` flag its loop reads, then close())
Step = tuple[object, ...]
COMMIT_HOWS = ("plain", "message", "offsets")
ENDS = ("close", "kill", "raise", "sigterm")
NET_FAULTS = ("request", "response", "delay", "outage")
NET_WEIGHTS = (3, 3, 3, 1)  # an outage costs a classic program ~15 s a run
MAX_POLL_INTERVAL_MS = 6000  # programs with an overrun: the least librdkafka allows (>= session timeout)


@dataclass(frozen=True)
class Program:
    protocol: str
    driver: str
    auto_commit: bool
    auto_store: bool
    mark_style: str
    steps: tuple[Step, ...]

    @property
    def overruns(self) -> bool:
        return any(step[0] == "overrun" for step in self.steps)

    @property
    def network(self) -> bool:
        """The app reaches the broker through toxiproxy: a step cuts or delays its connections."""
        return any(step[0] == "cut_commit" for step in self.steps)

    @property
    def marks(self) -> bool:
        """Explicit marks (enable.auto.offset.store=false): the app says which records are done."""
        return not self.auto_store

    def conf(self) -> dict[str, str]:
        conf = {
            "enable.auto.commit": str(self.auto_commit).lower(),
            "enable.auto.offset.store": str(self.auto_store).lower(),
            "auto.commit.interval.ms": "300",
        }
        if self.protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf["partition.assignment.strategy"] = self.protocol.removeprefix("eager-")
            conf["session.timeout.ms"] = "6000"
            conf["heartbeat.interval.ms"] = "500"
        if self.overruns:
            conf["max.poll.interval.ms"] = str(MAX_POLL_INTERVAL_MS)
        return conf

    def __repr__(self) -> str:
        return (
            f"Program(protocol={self.protocol!r}, driver={self.driver!r}, auto_commit={self.auto_commit!r}, "
            f"auto_store={self.auto_store!r}, mark_style={self.mark_style!r}, steps={self.steps!r})"
        )


def generate(seed: int, *, max_steps: int = 9, faults: bool = True, network: bool = False) -> Program:
    """One program, the same for the same seed. `faults=False` draws the program of the first
    generator (no raise, SIGTERM, poll overrun or commit during a rebalance): the seeds CI named before
    those existed keep their programs. With faults, the same draws are made and a second stream,
    seeded apart, adds them; with `network`, a third stream, seeded apart again, adds commits under a
    network fault (`cut_commit`), so the programs of the seeds named before it stay the same."""
    rng = random.Random(seed)
    steps: list[Step] = []
    joined = False
    for _ in range(rng.randint(2, max_steps)):
        kind = rng.choices(
            ["poll", "consume", "mark", "mark_thread", "commit", "commit_thread", "pause", "idle", "member"],
            weights=[4, 3, 4, 1, 4, 1, 1, 1, 2],
        )[0]
        if kind in ("poll", "consume"):
            steps.append((kind, rng.choice([1, 3, 10, 25])))
        elif kind == "mark":
            steps.append(("mark", rng.choice(["all", "all", "odd", "last"])))
        elif kind in ("mark_thread", "commit_thread"):
            steps.append((kind, rng.choice([5, 10])))
        elif kind == "commit":
            steps.append(("commit", rng.choice(COMMIT_HOWS), rng.random() < 0.6))
        elif kind == "pause":
            steps.append(("pause", 500))
        elif kind == "idle":
            steps.append(("idle", 500))
        else:
            steps.append(("leave",) if joined else ("join",))
            joined = not joined
    steps.append(("kill",) if rng.random() < 0.3 else ("close",))
    program = Program(
        protocol=rng.choice(PROTOCOLS),
        driver=rng.choice(DRIVERS),
        auto_commit=rng.random() < 0.5,
        auto_store=rng.random() < 0.4,
        mark_style=rng.choice(MARK_STYLES),
        steps=tuple(steps),
    )
    if faults:
        program = _with_faults(program, random.Random(f"faults-{seed}"))
    return _with_network(program, random.Random(f"network-{seed}")) if network else program


def _with_faults(program: Program, rng: random.Random) -> Program:
    steps = list(program.steps)
    joins = [i for i, step in enumerate(steps) if step[0] == "join"]
    if joins and rng.random() < 0.5:
        steps[rng.choice(joins)] = ("join_commit", rng.choice(COMMIT_HOWS), rng.random() < 0.6)
    if rng.random() < 0.2:
        how = rng.choice(("none", *COMMIT_HOWS))
        steps.insert(rng.randrange(len(steps)), ("overrun", how, rng.random() < 0.6))
    if steps[-1] == ("close",):
        end = rng.random()
        steps[-1] = ("raise",) if end < 0.25 else ("sigterm",) if end < 0.55 else ("close",)
    return replace(program, steps=tuple(steps))


def _with_network(program: Program, rng: random.Random) -> Program:
    """One commit under a network fault in most programs, now and then two, anywhere before the end."""
    steps = list(program.steps)
    for _ in range(rng.choices([0, 1, 2], weights=[1, 6, 2])[0]):
        fault = rng.choices(NET_FAULTS, weights=NET_WEIGHTS)[0]
        cut = ("cut_commit", fault, rng.choice(COMMIT_HOWS), rng.random() < 0.6)
        steps.insert(rng.randrange(len(steps)), cut)
    return replace(program, steps=tuple(steps))


def _valid(steps: tuple[Step, ...]) -> bool:
    joined = False
    for step in steps:
        if step[0] in ("join", "join_commit"):
            if joined:
                return False
            joined = True
        elif step[0] == "leave":
            if not joined:
                return False
            joined = False
    return bool(steps) and steps[-1][0] in ENDS and all(step[0] not in ENDS for step in steps[:-1])


def shrink_candidates(program: Program) -> Iterator[Program]:
    """Smaller programs, most reducing first: a step fewer, a count lower, simpler dimensions."""
    steps = program.steps
    for i in range(len(steps) - 1):
        fewer = steps[:i] + steps[i + 1 :]
        if _valid(fewer):
            yield replace(program, steps=fewer)
    for i, step in enumerate(steps):
        if step[0] in ("poll", "consume", "mark_thread", "commit_thread") and int(str(step[1])) > 1:
            smaller = (step[0], max(1, int(str(step[1])) // 2))
            yield replace(program, steps=(*steps[:i], smaller, *steps[i + 1 :]))
    for i, step in enumerate(steps):
        if step[0] == "join_commit":
            yield replace(program, steps=(*steps[:i], ("join",), *steps[i + 1 :]))
        if step[0] == "cut_commit" and step[2] != "plain":
            yield replace(program, steps=(*steps[:i], (*step[:2], "plain", step[3]), *steps[i + 1 :]))
    if steps[-1] != ("close",):
        yield replace(program, steps=(*steps[:-1], ("close",)))
    for field, simple in (("driver", "sync"), ("protocol", "eager-range"), ("mark_style", "mark_done")):
        if getattr(program, field) != simple:
            yield replace(program, **{field: simple})
