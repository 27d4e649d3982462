"""The chaos plan: what happens when, drawn from one random.Random(seed) before the run starts.

Given the same configuration and seed the plan is the same list of actions (times are offsets in
seconds from the start of the chaos phase); only the moment each action really lands depends on
the machine. Rules that keep every action attributable:

* a zombie (a collector frozen with SIGSTOP mid-request past its lease, then SIGCONT) owns a
  window: no PostgreSQL restart inside it (the restart would cut the frozen process's
  connections and its late finalize would never reach the database to be rejected) and its
  collector is never killed inside it;
* PostgreSQL restarts are far enough apart to be told apart (one heartbeat_lost per outage), and
  scheduler kills keep clear of them;
* a collector is killed only while it is up; every other kill waits (up to 3 s) until it holds
  a job, so there is a lease to recover; every third kill keeps it down past the scheduler's
  heartbeat_lost_after, so the detector marks it lost and its restart must close the outage.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

KILL = "kill"
KILL_SCHEDULER = "kill_scheduler"
PG_RESTART = "pg_restart"
ZOMBIE = "zombie"


class PlanError(ValueError):
    """The configuration leaves no room for the actions asked for."""


@dataclass(frozen=True, slots=True)
class Action:
    at: float  # seconds after the chaos phase began
    kind: str
    target: str = ""  # collector name (kill, zombie)
    down_for: float = 0.0  # seconds before the restart (kill, kill_scheduler)
    mid_job: bool = False  # kill: wait (≤ 3 s) until the collector holds a job

    def describe(self) -> str:
        what = f"{self.kind} {self.target}".strip()
        tail = f" (down {self.down_for:.1f} s)" if self.down_for else ""
        tail += " holding a job" if self.mid_job else ""
        return f"t+{self.at:6.1f} s  {what}{tail}"


@dataclass(frozen=True, slots=True)
class PlanSpec:
    seconds: float
    kills: int
    scheduler_kills: int
    pg_restarts: int
    zombies: int
    collectors: Sequence[str]
    lost_after: float
    zombie_window: float  # how long one zombie episode may take, search to rejection
    seed: int


def _overlaps(t: float, windows: Iterable[tuple[float, float]]) -> bool:
    return any(lo <= t <= hi for lo, hi in windows)


def _place(rng: random.Random, lo: float, hi: float, ok: object, what: str,
           tries: int = 20_000) -> float:
    assert callable(ok)
    for _ in range(tries):
        t = round(rng.uniform(lo, hi), 2)
        if ok(t):
            return t
    raise PlanError(f"no room for {what} in {hi - lo:.0f} s; lengthen the run or ask for less")


def make_plan(spec: PlanSpec) -> list[Action]:
    if spec.seconds < 30:
        raise PlanError("a chaos phase needs at least 30 s")
    if len(spec.collectors) < 2 and spec.kills:
        raise PlanError("kills need at least two background collectors")
    rng = random.Random(spec.seed)
    s = spec.seconds
    actions: list[Action] = []

    # zombies first: each one in its own segment, early in it
    zombie_windows: list[tuple[float, float, str]] = []
    if spec.zombies:
        seg = s / spec.zombies
        if seg < spec.zombie_window + 10:
            raise PlanError(f"{spec.zombies} zombies need {spec.zombie_window + 10:.0f} s each")
        for i in range(spec.zombies):
            start = i * seg + rng.uniform(0.05, 0.15) * seg
            start = round(min(start, (i + 1) * seg - spec.zombie_window - 2), 2)
            target = rng.choice(list(spec.collectors))
            zombie_windows.append((start, start + spec.zombie_window, target))
            actions.append(Action(start, ZOMBIE, target))
    z_spans = [(lo - 4, hi + 3) for lo, hi, _ in zombie_windows]

    pg_times: list[float] = []
    for _ in range(spec.pg_restarts):
        pg_times.append(_place(
            rng, 5, s - 8,
            lambda t: not _overlaps(t, z_spans) and all(abs(t - o) >= 12 for o in pg_times),
            "a PostgreSQL restart"))
    actions += [Action(t, PG_RESTART) for t in pg_times]

    sched_times: list[float] = []
    for _ in range(spec.scheduler_kills):
        sched_times.append(_place(
            rng, 5, s - 8,
            lambda t: all(abs(t - o) >= 8 for o in pg_times)
            and all(abs(t - o) >= 10 for o in sched_times),
            "a scheduler kill"))
    actions += [Action(t, KILL_SCHEDULER, down_for=round(rng.uniform(2.0, 5.0), 2))
                for t in sched_times]

    # collector kills: only while up, never the zombie of the moment
    down: dict[str, list[tuple[float, float]]] = {name: [] for name in spec.collectors}
    for lo, hi, target in zombie_windows:
        down[target].append((lo - 8, hi + 2))
    times = sorted(round(rng.uniform(2, s - 3), 2) for _ in range(spec.kills))
    for i, t in enumerate(times):
        long_outage = i % 3 == 2
        down_for = (rng.uniform(spec.lost_after + 1.5, spec.lost_after + 4.0) if long_outage
                    else rng.uniform(1.0, max(1.2, spec.lost_after - 1.5)))
        for shift in range(60):
            at = t + shift * 0.5
            up = sorted(n for n, spans in down.items() if not _overlaps(at, spans))
            if up and at < s - 1:
                break
        else:
            raise PlanError("too many kills for the collectors and the time available")
        target = rng.choice(up)
        mid_job = i % 2 == 0
        down[target].append((at - 0.5, at + (3.0 if mid_job else 0.0) + down_for + 2.0))
        actions.append(Action(round(at, 2), KILL, target, round(down_for, 2),
                              mid_job=mid_job))

    actions.sort(key=lambda a: (a.at, a.kind, a.target))
    return actions
