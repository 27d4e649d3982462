"""The chaos plan is a pure function of the configuration and the seed, and keeps its rules."""

from __future__ import annotations

import itertools

import pytest

from tests.chaos.harness import ChaosConfig
from tests.chaos.plan import (
    KILL,
    KILL_SCHEDULER,
    PG_RESTART,
    ZOMBIE,
    PlanError,
    PlanSpec,
    make_plan,
)


@pytest.mark.parametrize("seconds", [90, 1200])
@pytest.mark.parametrize("seed", [1, 2, 20261101])
def test_plan_is_deterministic_and_keeps_its_rules(seconds: int, seed: int) -> None:
    cfg = ChaosConfig.scaled(seconds, seed=seed)
    plan = cfg.plan()
    assert plan == cfg.plan()
    kinds = [a.kind for a in plan]
    assert kinds.count(KILL) == cfg.kills >= 8
    assert kinds.count(PG_RESTART) == cfg.pg_restarts >= 2
    assert kinds.count(KILL_SCHEDULER) == cfg.scheduler_kills >= 1
    assert kinds.count(ZOMBIE) == cfg.zombies >= 1
    assert all(0 <= a.at <= seconds for a in plan)
    zombies = [(a.at, a.at + cfg.zombie_window, a.target) for a in plan if a.kind == ZOMBIE]
    restarts = sorted(a.at for a in plan if a.kind == PG_RESTART)
    assert all(b - a >= 12 for a, b in itertools.pairwise(restarts))
    for lo, hi, target in zombies:
        assert not any(lo - 4 <= t <= hi + 3 for t in restarts)
        assert not any(a.kind == KILL and a.target == target and lo - 8 <= a.at <= hi + 2
                       for a in plan)
    # a collector is never killed while it is still down from its previous kill
    last_up: dict[str, float] = {}
    for a in plan:
        if a.kind == KILL:
            assert a.at >= last_up.get(a.target, -1.0), a
            last_up[a.target] = a.at + a.down_for + (3.0 if a.mid_job else 0.0)
    # some kills outlast heartbeat_lost_after: the detector and the restart are exercised
    assert any(a.down_for > cfg.lost_after + 1 for a in plan if a.kind == KILL)


def test_a_plan_that_cannot_fit_is_refused() -> None:
    with pytest.raises(PlanError):
        make_plan(PlanSpec(40, 8, 1, 6, 1, ["a", "b"], 4, 38, 1))
