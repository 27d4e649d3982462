"""Search that never lies, end to end: a real interactive collector process against the
simulator behind a search login wall (anonymous searches answer an empty list). No look-up
ends as "no such soldier" while the search is refused; the request page says the search is
unavailable; look-ups by persona id need no search; with an operator's session file the
look-ups succeed (and the session id is never logged)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from bf4ps import policy
from bf4ps.db.connect import Conn, connection, open_pool
from bf4ps.domain import Platform
from bf4ps.interactive.lookup import SEARCH_UNAVAILABLE_NOTE
from bf4ps.interactive.submit import Submission, submit
from bf4ps.interactive.target import parse_target
from bf4ps.policy import Policy
from bf4ps.settings import Settings
from bf4ps.sim.battlelog.lookup import name_platforms, search_body
from bf4ps.sim.battlelog.server import SimProcess
from bf4ps.sim.personas import persona_id_for
from bf4ps.web.app import create_app
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, wait_for

pytestmark = pytest.mark.slow

ENV = {"BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.3", "BF4PS_IDLE_POLL_SECONDS": "0.2",
       "BF4PS_HEARTBEAT_SECONDS": "1"}


def pc_name(on_pc: bool = True, skip: int = 0) -> str:
    names = (f"Walled{i}" for i in range(1000))
    return [n for n in names if (Platform.PC in name_platforms(n)) is on_pc][skip]


async def status_of(conn: Conn, sub: Submission) -> dict[str, object]:
    cur = await conn.execute("SELECT status, message FROM interactive_requests "
                             "WHERE request_id = %s", [sub.request_id])
    row = await cur.fetchone()
    assert row is not None
    return dict(row)


async def test_a_refused_search_never_says_no_such_soldier(db_url: str, tmp_path: Path) -> None:
    name, absent, by_id = pc_name(), pc_name(on_pc=False), pc_name(skip=1)
    async with connection(db_url) as conn:
        await policy.set_value(conn, "backoff_interactive_seconds", "[1, 1, 2]", by="test")
    with simulator(speed=20, min_interval=0.3, login_wall="search") as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, dict(ENV))
        fleet.start("int-wall-1", "int-wall-egress", "127.0.0.50", "interactive")
        async with connection(db_url) as conn:
            found = await submit(conn, parse_target(platform="pc", name=name), client_key="t",
                                 policy=Policy())
            missing = await submit(conn, parse_target(platform="pc", name=absent), client_key="t",
                                   policy=Policy())
            known = await submit(conn, parse_target(
                platform="pc", name=by_id, persona_id=persona_id_for(by_id, Platform.PC)),
                client_key="t", policy=Policy())
            # both searches were refused (an empty answer, no good session) at least twice
            await wait_for(conn, "SELECT count(*) = 2 FROM collection_jobs WHERE resource = "
                                 "'lookup' AND attempt_count >= 2", timeout=60)
            await wait_for(conn, "SELECT count(*) FROM interactive_requests WHERE status = "
                                 "'done' AND request_id = %(r)s", {"r": known.request_id},
                           timeout=120)  # by persona id: no search needed (served between
            # the look-ups' retries, which come first by rank: slower under load)
            for sub in (found, missing):
                row = await status_of(conn, sub)
                assert row["status"] in ("queued", "collecting"), row  # open, retried later
                assert row["message"] == SEARCH_UNAVAILABLE_NOTE
            assert await count(conn, "SELECT count(*) FROM interactive_requests "
                                     "WHERE status = 'not_found'") == 0
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "resource = 'lookup' AND error_class = 'not_found'") == 0
            page = await _request_page(db_url, found)
            assert SEARCH_UNAVAILABLE_NOTE in page
        assert fleet.stop_all() == {"int-wall-1": 0}

        session = httpx.post(sim.url("/__sim/login"), timeout=10).json()["session"]
        secret = tmp_path / "battlelog-session"
        secret.write_text(session + "\n")
        secret.chmod(0o600)
        fleet.env_extra["BF4PS_BATTLELOG_SESSION_FILE"] = str(secret)
        fleet.start("int-wall-1", "int-wall-egress", "127.0.0.50", "interactive")
        async with connection(db_url) as conn:
            await wait_for(conn, "SELECT count(*) FROM interactive_requests WHERE status = "
                                 "'done' AND request_id = %(r)s", {"r": found.request_id},
                           timeout=90)
            await wait_for(conn, "SELECT count(*) FROM interactive_requests WHERE status = "
                                 "'not_found' AND request_id = %(r)s",
                           {"r": missing.request_id}, timeout=90)
            assert await count(conn, "SELECT count(*) FROM soldiers WHERE persona_id = "
                                     "%(p)s", {"p": persona_id_for(name, Platform.PC)}) == 1
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "details::text LIKE %(s)s OR error_message LIKE %(s)s",
                               {"s": f"%{session[:10]}%"}) == 0
        assert fleet.stop_all() == {"int-wall-1": 0}
        wire = sim_stats(sim)
    assert wire["by_outcome"]["login_wall"] >= 4
    assert session[:10] not in fleet.log("int-wall-1")


async def _request_page(db_url: str, sub: Submission) -> str:
    pool = await open_pool(db_url, max_size=2)
    try:
        app = create_app(Settings(secret_key="k"), pool=pool)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as web:
            response = await web.get(f"/requests/{sub.request_id}")
            assert response.status_code == 200
            return response.text
    finally:
        await pool.close()


async def test_every_hop_of_a_redirecting_start_page_is_counted(db_url: str,
                                                                tmp_path: Path) -> None:
    """The start page bounces twice before its session: each hop is a request of its own, so
    each takes a counted slot of the egress (the ledger), and the simulator sees the
    egress's spacing kept between them."""
    name = pc_name()
    with simulator(speed=20, min_interval=0.3, session_redirects=2) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, dict(ENV))
        fleet.start("int-hops-1", "int-hops-egress", "127.0.0.51", "interactive")
        async with connection(db_url) as conn:
            sub = await submit(conn, parse_target(platform="pc", name=name), client_key="t",
                               policy=Policy())
            await wait_for(conn, "SELECT count(*) FROM collection_events WHERE resource = "
                                 "'lookup' AND event_type = 'succeeded'", timeout=60,
                           context=fleet.tails)
            cur = await conn.execute("SELECT job_id FROM collection_events WHERE resource = "
                                     "'lookup' AND event_type = 'succeeded'")
            job = (await cur.fetchone() or {})["job_id"]
            ledger = await count(conn, "SELECT count(*) FROM request_ledger WHERE job_id = "
                                       "%(j)s AND unsent_at IS NULL", {"j": job})
            assert (await status_of(conn, sub))["status"] in ("collecting", "done")
        assert fleet.stop_all() == {"int-hops-1": 0}
        stats = sim_stats(sim)
    assert stats["by_resource"]["index"] == 3  # the start page and its two redirects
    assert ledger == 4, ledger  # those three and the search, each in a counted slot
    assert stats["violations"]["total"] == 0, stats["violations"]


async def test_an_empty_answer_after_a_good_one_never_says_no_such_soldier(
        db_url: str, tmp_path: Path) -> None:
    """End to end: look-ups asked for on the website's API, a real interactive collector, the
    simulator switched (over its config endpoint) to answer every search with an empty list
    once one search found personas. After the first look-up found its soldier, a look-up of
    another existing soldier (and one of a name nobody has) waits as "search unavailable": the
    session's earlier success is no reason to believe an empty answer, and the check search
    for the soldier just found comes back empty too. Healed, the existing soldier is found and
    the unknown name is "no such soldier" (its check search found its soldier). Every request,
    the check searches too, went through the gate and the ledger; each finished request says
    what finished."""
    first, second = pc_name(skip=2), pc_name(skip=3)
    nobody = next(n for n in (f"Nobody{i}" for i in range(5000))
                  if search_body(n).endswith(b'"data":[]}'))
    async with connection(db_url) as conn:
        await policy.set_value(conn, "backoff_interactive_seconds", "[1, 1, 2]", by="test")
    with simulator(speed=20, min_interval=0.3) as sim:
        configure(sim, empty_search_after=1)
        fleet = Fleet(db_url, sim.base_url, tmp_path, dict(ENV))
        fleet.start("int-lie-1", "int-lie-egress", "127.0.0.52", "interactive")
        async with connection(db_url) as conn, _website(db_url) as web:
            found = await _ask(web, first)
            await wait_for(conn, "SELECT count(*) FROM interactive_requests WHERE status = "
                                 "'done' AND request_id = %(r)s", {"r": found}, timeout=90)
            lied, absent = await _ask(web, second), await _ask(web, nobody)
            # both searches answered empty and their checks failed, at least twice each
            await wait_for(conn, "SELECT count(*) = 2 FROM collection_jobs WHERE resource = "
                                 "'lookup' AND attempt_count >= 3", timeout=90)
            for request_id in (lied, absent):
                shown = await _shown(web, request_id)
                assert shown["status"] in ("queued", "collecting"), shown
                assert shown["message"] == SEARCH_UNAVAILABLE_NOTE, shown
            assert await count(conn, "SELECT count(*) FROM interactive_requests "
                                     "WHERE status = 'not_found'") == 0
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE resource "
                                     "= 'lookup' AND error_class = 'not_found'") == 0
            assert await count(conn, "SELECT count(*) FROM collection_events WHERE resource "
                                     "= 'lookup' AND details->>'canary' = 'failed'") >= 4
            configure(sim, empty_search_after=None)  # healed
            await wait_for(conn, "SELECT count(*) = 2 FROM interactive_requests WHERE "
                                 "finished_at IS NOT NULL AND request_id IN (%(a)s, %(b)s)",
                           {"a": lied, "b": absent}, timeout=90)
            ended = {r: await _shown(web, r) for r in (found, lied, absent)}
            ledger = await count(conn, "SELECT count(*) FROM request_ledger l JOIN collectors "
                                       "c USING (collector_uuid) WHERE c.collector_name = "
                                       "'int-lie-1' AND l.unsent_at IS NULL")
        assert fleet.stop_all() == {"int-lie-1": 0}
        wire = sim_stats(sim)
    assert ended[lied]["status"] == "done" and ended[found]["status"] == "done", ended
    for request_id in (found, lied):
        assert ended[request_id]["message"] == "finished: 4 of 4 collected", ended
    assert ended[absent]["status"] == "not_found", ended
    assert ended[absent]["message"] == f"no BF4 soldier named {nobody!r} on pc", ended
    assert wire["by_ip"]["127.0.0.52"]["count"] == ledger  # the checks were counted too
    assert wire["by_outcome"]["empty_search"] >= 8  # 2 look-ups x >= 2 attempts x (search, check)


def configure(sim: SimProcess, **knobs: object) -> None:
    httpx.post(sim.url("/__sim/config"), json=knobs, timeout=10).raise_for_status()


@asynccontextmanager
async def _website(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    pool = await open_pool(db_url, max_size=2)
    try:
        app = create_app(Settings(secret_key="k"), pool=pool)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as web:
            yield web
    finally:
        await pool.close()


async def _ask(web: httpx.AsyncClient, name: str) -> str:
    sub = await web.post("/api/requests", json={"platform": "pc", "name": name})
    assert sub.status_code == 202, sub.text
    return str(sub.json()["request_id"])


async def _shown(web: httpx.AsyncClient, request_id: str) -> dict[str, Any]:
    got = await web.get(f"/api/requests/{request_id}")
    assert got.status_code == 200, got.text
    shown: dict[str, Any] = got.json()
    return shown
