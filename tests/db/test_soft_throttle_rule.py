"""A soft throttle (an answer with nothing in it) alone is Battlelog's noise: the job retries and
the egress goes on. A run of them on one egress (gates/throttle.py ``soft_answer``: 4 of its
last 5 answers since its last cool-down) cools it like a 403, once, with an event that names
the signal and the resource. The real queue engine and event log on a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from bf4ps.db.connect import Conn
from bf4ps.domain import ErrorClass
from bf4ps.gates import throttle
from bf4ps.policy import Policy
from bf4ps.queue import finalize
from bf4ps.queue.finalize import Attempt
from bf4ps.queue.jobs import CollectorRef
from tests.helpers import GATE_ENSURE, count, make_collector, make_soldier, started_job

POLICY = Policy(backoff_seconds=(1, 1, 1), backoff_jitter=0)
SOFT = throttle.Cause(throttle.SOFT_THROTTLE, "detailed", 200)


async def answer(conn: Conn, me: CollectorRef, soldier: int, soft: bool) -> bool:
    """One finished attempt on the egress (a soft throttle, or a 5xx: an answer that is not
    one); for a soft one, whether the rule cooled the egress."""
    job = await started_job(conn, me, soldier)
    error, details = ((ErrorClass.MALFORMED, {"soft_throttle": 1, "signal": "soft_throttle"})
                      if soft else (ErrorClass.SERVER, {"signal": "http_5xx"}))
    outcome = await finalize.fail(conn, me, job, error, "x", Attempt(200, 5, dict(details)),
                                  POLICY)
    assert outcome.committed
    if not soft:
        return False
    return await throttle.soft_answer(conn, me, 60, 600, POLICY, SOFT)


async def test_scattered_soft_throttles_never_cool_a_run_does_once(
        conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "soft-1", egress="soft-eg")
    await conn.execute(GATE_ENSURE, {"egress_key": "soft-eg", "min_interval": 0.1,
                                     "window_requests": None, "window_seconds": None})
    soldier = await make_soldier(conn, 3_100_001)
    # one soft answer in two, far more than the record's 1.6-8.4 %: never 4 of the last 5
    scattered = [await answer(conn, me, soldier, soft) for soft in [True, False] * 5]
    assert not any(scattered)
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'egress_throttled'") == 0
    # after two answers that are not soft, a streak: its 4th soft answer in a row is the 4th
    # of the last 5 and cools the egress
    await answer(conn, me, soldier, False)
    await answer(conn, me, soldier, False)
    streak = [await answer(conn, me, soldier, True) for _ in range(4)]
    assert streak == [False, False, False, True]
    row = await (await conn.execute(
        "SELECT resource, http_status, result, details FROM collection_events "
        "WHERE event_type = 'egress_throttled'")).fetchone()
    assert row is not None
    assert (row["resource"], row["result"], row["details"]["signal"]) == (
        "detailed", "soft_throttle", "soft_throttle")
    assert row["details"]["soft_answers"] == 4 and row["details"]["streak"] == 1
    # answers in flight land during the cool-down: they cool nothing more
    assert await answer(conn, me, soldier, True) is False
    # after the cool-down only the answers since it count: one soft answer is not a run
    await conn.execute("UPDATE egress_gates SET cooldown_until = now() "
                       "WHERE egress_key = 'soft-eg'")
    assert await answer(conn, me, soldier, True) is False
    assert await count(conn, "SELECT count(*) FROM collection_events "
                             "WHERE event_type = 'egress_throttled'") == 1
