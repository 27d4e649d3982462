"""Bots the way players run them, against a live `bf4ps web run` with the Battlelog simulator
and an interactive collector: a gametools-style and a bf4stats-style client each ask for a
soldier BF4PS has never seen (name in, a few fields out). The first answer is the format's
"not yet" with Retry-After and the request's page on the website; the bot waits as told and
gets the soldier's stats once collected, equal to what BF4PS stored. One look-up per soldier
however often the bot asks, and never a Battlelog call made for a bot's request itself."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from bf4ps.db.connect import connection
from bf4ps.domain import Platform
from bf4ps.sim.battlelog.lookup import name_platforms
from bf4ps.web.serve import free_port
from tests import load
from tests.fleet import Fleet, sim_stats, simulator
from tests.procs import web_run

pytestmark = pytest.mark.slow
PATIENCE = 90  # seconds (scaled) a bot waits for its soldier


@dataclass
class Seen:
    """What a bot saw on its way: the not-yet answers' Retry-After and request pages."""

    retry_after: list[int] = field(default_factory=list)
    request_pages: set[str] = field(default_factory=set)
    statuses: list[int] = field(default_factory=list)


async def ask_until_served(c: httpx.AsyncClient, path: str, params: dict[str, str],
                           seen: Seen) -> dict[str, Any]:
    """GET until a 200, sleeping as Retry-After says (at most 2 s here) on a not-yet answer."""
    end = load.deadline(PATIENCE)
    while not end.expired():
        answer = await c.get(path, params=params)
        seen.statuses.append(answer.status_code)
        if answer.status_code == 200:
            body: dict[str, Any] = answer.json()
            return body
        assert answer.status_code == 404, answer.text
        seen.retry_after.append(int(answer.headers["retry-after"]))
        seen.request_pages.add(answer.headers["location"])
        await asyncio.sleep(min(2, seen.retry_after[-1]))
    raise AssertionError(f"{path} {params}: not served within {PATIENCE} s: {seen}")


async def gametools_bot(c: httpx.AsyncClient, name: str, seen: Seen) -> dict[str, Any]:
    """A Discord bot's !stats: K/D, accuracy, time played."""
    s = await ask_until_served(c, "/community/gametools/bf4/stats/", {
        "name": name, "platform": "pc", "format_values": "true", "lang": "en-us",
        "skip_battlelog": "false"}, seen)
    return {"kd": s["killDeath"], "accuracy": s["accuracy"], "kills": s["kills"],
            "time": s["timePlayed"]}


async def bf4stats_bot(c: httpx.AsyncClient, name: str, seen: Seen) -> dict[str, Any]:
    """An old admin tool: rank, skill and K/D from opt=stats,extra."""
    doc = await ask_until_served(c, "/community/bf4stats/api/playerInfo", {
        "plat": "pc", "name": name, "opt": "stats,extra", "output": "json"}, seen)
    return {"rank": doc["stats"]["rank"], "kills": doc["stats"]["kills"],
            "kdr": doc["stats"]["extra"]["kdr"], "name": doc["player"]["name"]}


@contextmanager
def website(fleet: Fleet, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = fleet.env() | {"BF4PS_WEB_HOST": "127.0.0.1", "BF4PS_WEB_PORT": str(port)}
    with web_run(env, tmp_path / "web.log"):
        yield f"http://127.0.0.1:{port}"


STORED = ("SELECT d.kills, d.deaths, d.shots_hit, d.shots_fired, d.rank, "
          "(SELECT count(*) FROM interactive_requests r WHERE r.lookup_name = s.current_name) "
          "AS lookups FROM detailed_stats_current d JOIN soldiers s USING (soldier_id) "
          "WHERE s.current_name = %s")


async def stored_row(db_url: str, name: str) -> dict[str, Any]:
    """The soldier's stored counters; one look-up of him, however often the bot asked."""
    async with connection(db_url) as conn:
        row = await (await conn.execute(STORED, [name])).fetchone()
    assert row is not None and row["lookups"] == 1, (name, row)
    return dict(row)


async def test_bots_get_unknown_soldiers_once_collected(db_url: str, tmp_path: Path) -> None:
    first, second = [n for n in (f"Lookup{i}" for i in range(1000))
                     if Platform.PC in name_platforms(n)][:2]
    with simulator(speed=20, min_interval=0.5) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, {
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.5", "BF4PS_IDLE_POLL_SECONDS": "0.2",
            "BF4PS_HEARTBEAT_SECONDS": "1"})
        fleet.start("web-interactive-01", "interactive-egress", "127.0.0.30", "interactive")
        with website(fleet, tmp_path) as base:
            async with httpx.AsyncClient(base_url=base, timeout=30) as c:
                gt_seen, bs_seen = Seen(), Seen()
                gt, bs = await asyncio.gather(gametools_bot(c, first, gt_seen),
                                              bf4stats_bot(c, second, bs_seen))
                for seen in (gt_seen, bs_seen):
                    assert seen.statuses[0] == 404 and seen.retry_after[0] >= 1
                    assert len(seen.request_pages) == 1  # the same request while it ran
                    page = await c.get(next(iter(seen.request_pages)))
                    assert page.status_code == 200
                served = await c.get("/community/gametools/bf4/all/",
                                     params={"name": first, "platform": "pc"})
                assert served.status_code == 200 and served.headers["x-bf4ps-collected-at"]
        wire = sim_stats(sim)
    a, b = await stored_row(db_url, first), await stored_row(db_url, second)
    assert gt["kills"] == a["kills"] and gt["kd"] == round(a["kills"] / a["deaths"], 2)
    assert gt["accuracy"] == f"{round(a['shots_hit'] / a['shots_fired'] * 100, 2)}%"
    assert bs["name"] == second and bs["kills"] == b["kills"] and bs["rank"] == b["rank"]
    assert bs["kdr"] == b["kills"] / b["deaths"]
    assert wire["by_resource"]["search"] == 2  # one name search per soldier, by the collector
