"""Battlelog answering another game's or another endpoint's answer (the simulator's
``fault_other_game`` / ``fault_other_endpoint``) to a small real fleet (a scheduler and two
collector processes): every such answer is ``unrecognized`` with a signature naming what it
was, nothing of it is stored, nothing is parked, the egress is not cooled as for a throttle,
and the raw answers are archived for replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf4ps import policy
from bf4ps.db.connect import connection
from tests.fleet import sim_stats, simulator
from tests.helpers import count, seed_work, wait_for
from tests.system.test_truth_fleet import start_fleet

pytestmark = pytest.mark.slow
RESOURCES = ("detailed", "profile", "weapons", "vehicles")
POLICY = {"max_consecutive_failures": "2", "backoff_seconds": "[1, 1, 1, 1]",
          "backoff_jitter": "0", "archive_answers_kept": "3"}
STORED = ("detailed_stats_current", "profile_current", "soldier_weapon_stats",
          "soldier_vehicle_stats", "detailed_stats_history", "soldier_intervals")


async def test_other_games_and_endpoints_answers_are_unrecognized_never_stored_or_parked(
        db_url: str, tmp_path: Path) -> None:
    soldiers = 6
    async with connection(db_url) as conn:
        await seed_work(conn, soldiers, RESOURCES)
        for key, value in POLICY.items():
            await policy.set_value(conn, key, value, by="test")
    knobs = {"speed": 50, "min_interval": 0.0, "fault_other_game": 0.5,
             "fault_other_endpoint": 0.5}
    with simulator(**knobs) as sim:
        fleet = start_fleet(db_url, sim, tmp_path)
        async with connection(db_url) as conn:
            for kind in ("other_game", "other_endpoint"):
                await wait_for(conn, "SELECT count(*) >= 6 FROM raw_answers WHERE outcome "
                                     "LIKE %(k)s", {"k": f"unrecognized:{kind}:%"}, timeout=120)
            await wait_for(conn, "SELECT count(*) >= 3 FROM collection_state "  # past parking
                                 "WHERE consecutive_failures > 2", timeout=120)
            failed = await conn.execute(
                "SELECT error_class, details->>'signal' AS signal, details->>'soft_throttle' "
                "AS soft FROM collection_events WHERE event_type = 'failed'")
            failures = await failed.fetchall()
            stored = {t: await count(conn, f"SELECT count(*) FROM {t}") for t in STORED}
            parked = await count(conn, "SELECT count(*) FROM collection_state "
                                       "WHERE status = 'unavailable'")
            signals = await conn.execute("SELECT DISTINCT outcome FROM raw_answers")
            outcomes = {r["outcome"] for r in await signals.fetchall()}
        codes = fleet.stop_all()
    served = sim_stats(sim)["by_outcome"]
    print(f"{len(failures)} failed attempts; archived as {sorted(outcomes)}; served {served}")
    assert served.get("other_game", 0) >= 6 and served.get("other_endpoint", 0) >= 6
    assert len(failures) >= 12 and all(f["error_class"] == "unrecognized" for f in failures)
    assert all(f["signal"].startswith(("other_game:", "other_endpoint:")) for f in failures)
    assert not any(f["soft"] for f in failures)  # not taken for a soft throttle
    assert stored == dict.fromkeys(STORED, 0)  # nothing of it stored
    assert parked == 0  # far past max_consecutive_failures, nothing parked
    assert {"unrecognized:other_game:hardline", "unrecognized:other_endpoint:profile",
            "unrecognized:other_endpoint:detailed"} <= outcomes
    assert set(codes.values()) == {0}, codes
