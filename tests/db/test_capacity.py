"""Capacity read models against a real database: `bf4ps forecast` on a fresh database (every
input missing, documented defaults marked), backlog age in `bf4ps status` and /metrics, the
fleet-history record and its retention, the scheduler's start-up capacity check."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from bf4ps.capacity.forecast import forecast
from bf4ps.cli.common import to_json
from bf4ps.cli.main import cli
from bf4ps.db.connect import Conn, open_pool
from bf4ps.scheduler import history
from bf4ps.scheduler.service import Scheduler
from bf4ps.settings import Settings
from bf4ps.views import forecast_inputs
from bf4ps.views.fleet_status import render_status, status_report
from bf4ps.web.app import create_app
from bf4ps.web.metrics import Metrics
from tests.db.test_web_api import OPS, SETTINGS, client_for
from tests.helpers import count, gated_collector, make_soldier


def run(settings: Settings, *args: str) -> str:
    result = CliRunner().invoke(cli, list(args), obj=settings, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def gauge(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v
                                           for k, v in labels.items()):
                return float(sample.value)
    return None


def test_forecast_on_a_fresh_database_names_every_missing_input(db_url: str,
                                                                tmp_path: Path) -> None:
    settings = Settings(database_url=db_url, data_dir=tmp_path)
    text = run(settings, "forecast")
    assert "not measured yet (documented defaults used, marked 'default')" in text
    for missing in ("population and its activity", "egresses", "fleet budget",
                    "detailed: requests per attempt"):
        assert missing in text, text
    assert "steady-state demand (requests/h):" in text and "bootstrap completion" in text
    data = json.loads(run(settings, "forecast", "--json"))
    assert data["inputs"]["population"]["total"] == {
        "value": 190000.0, "source": data["inputs"]["population"]["total"]["source"],
        "measured": False}
    assert not data["inputs"]["costs"]["detailed"]["requests_per_attempt"]["measured"]
    assert data["capacity"]["budget_per_hour"] == 1296.0
    assert data["demand_per_hour"] > 0 and data["egresses_needed"] >= 1
    # the documented population is still to bootstrap: a date, from the modelled rate
    assert all(b["remaining"] == 190000 and b["completes_at"] for b in data["bootstrap"])
    assert data["bootstrap"][0]["source"].startswith("modelled")
    assert data["fits"] is True, data  # the shipped defaults fit the documented budget
    # ... with the closing snapshots of the census's play sessions: what they cost, and that
    # the rest fits
    shape = "[default: exponential session lengths, mean 2.8 h (the census)]"
    assert (f"final refreshes (detailed after sessions of 2 h or more, 510 an hour {shape}; "
            f"weapons and vehicles after sessions of 8 h or more, 60 an hour {shape}; of "
            "1,042 sessions ending an hour [default: the documented deployment "
            "(docs/operations.md), a session a day per soldier seen]): beyond the freshness "
            "refreshes they replace ") in text, text
    line = next(t for t in text.splitlines() if t.startswith("final refreshes"))
    assert line.endswith(": the rest fits"), line
    assert data["inputs"]["policy"]["final_refresh_min_play_seconds"] == 7200


async def test_the_forecast_counts_the_fleet_s_own_sessions_at_the_policy_s_minimums(
        conn: Conn, db_url: str, tmp_path: Path) -> None:
    """Sessions ended within 24 h: 36 of 3 h, 12 of 10 minutes. The final refreshes' demand
    counts those with the policy's minimum play (2 h: 36, 1.5 an hour; 8 h: none), not the
    documented shape."""
    now = datetime.now(UTC)
    for i in range(48):
        sid = await make_soldier(conn, 880_000 + i, seen=now - timedelta(hours=1))
        played = timedelta(hours=3) if i < 36 else timedelta(minutes=10)
        end = now - timedelta(hours=2, minutes=i)
        await conn.execute(
            "INSERT INTO play_sessions (soldier_id, server_guid, server_name, started_at, "
            "last_seen_at, ended_at, final_refresh_at) VALUES (%s, 'g', 'n', %s, %s, %s, %s)",
            [sid, end - played, end, end, end])
    text = await asyncio.to_thread(run, Settings(database_url=db_url, data_dir=tmp_path),
                                   "forecast")
    measured = "[measured: play sessions ended within 24 h]"
    assert (f"final refreshes (detailed after sessions of 2 h or more, 2 an hour {measured}; "
            f"weapons and vehicles after sessions of 8 h or more, 0 an hour {measured}; of 2 "
            f"sessions ending an hour {measured})") in text, text


async def seed_waiting(conn: Conn, hours: float) -> int:
    sid = await make_soldier(conn, 777)
    await conn.execute("UPDATE collection_state SET eligible_since = now() - CASE resource "
                       "WHEN 'detailed' THEN make_interval(hours => %s) ELSE interval '0' END "
                       "WHERE soldier_id = %s", [hours, sid])
    return sid


async def test_backlog_age_in_status_and_metrics_and_the_history_record(conn: Conn) -> None:
    await seed_waiting(conn, 2)
    report = json.loads(to_json(await status_report(conn)))  # what `status --json` prints
    age = report["backlog"]["age_seconds"]
    assert 7190 < age["bootstrap"]["detailed"] < 7300, age
    assert age["active"]["detailed"] == 0 and age["bootstrap"]["weapons"] < 600
    assert age["interactive"]["detailed"] == 0 and age["retry"]["detailed"] == 0
    text = render_status(await status_report(conn))
    assert "backlog age (oldest eligible work not yet served)" in text
    assert "refresh lag (due -> collected): nothing recorded" in text

    scraped = (await Metrics().render(conn)).decode()
    assert 7190 < (gauge(scraped, "bf4ps_backlog_age_seconds", **{
        "class": "bootstrap", "resource": "detailed"}) or 0) < 7300
    assert gauge(scraped, "bf4ps_backlog_age_seconds",
                 **{"class": "active", "resource": "vehicles"}) == 0
    assert gauge(scraped, "bf4ps_policy_feasible") is None  # no scheduler has checked yet

    await history.record(conn, 60)
    cur = await conn.execute("SELECT soldiers, coverage, backlog_age FROM fleet_history")
    row = await cur.fetchone()
    assert row is not None and row["soldiers"] == 1
    assert row["coverage"]["detailed"]["never_attempted"] == 1
    assert row["backlog_age"]["bootstrap"]["detailed"] > 7190
    old = datetime.now(UTC) - timedelta(days=200)
    await conn.execute("INSERT INTO fleet_history (recorded_at, interval_seconds, soldiers, "
                       "coverage, finished, requests, backlog_age, refresh_lag) VALUES "
                       "(%s, 60, 0, '{}', '{}', '{}', '{}', '{}')", [old])
    assert await history.prune(conn, 180) == 1
    assert await history.prune(conn, 180) == 0


async def test_the_start_up_check_is_a_log_line_and_a_metric(
        conn: Conn, caplog: pytest.LogCaptureFixture) -> None:
    await conn.execute("INSERT INTO scheduler_policy (key, value) VALUES "
                       "('freshness_detailed_seconds', '3600')")
    with caplog.at_level(logging.INFO, logger="bf4ps.scheduler.history"):
        fc = await history.check_capacity(conn, forecast(await forecast_inputs.load(conn)))
    assert not fc.fits
    said = [r for r in caplog.records if r.name == "bf4ps.scheduler.history"]
    assert len(said) == 1 and said[0].levelno == logging.WARNING
    text = said[0].getMessage()
    assert "does NOT fit" in text and "x the 1,296/h the budget allows" in text, text
    scraped = (await Metrics().render(conn)).decode()
    assert gauge(scraped, "bf4ps_policy_feasible") == 0.0
    assert (gauge(scraped, "bf4ps_forecast_demand_requests_per_hour") or 0) > 1296
    await conn.execute("DELETE FROM scheduler_policy")
    again = await history.check_capacity(conn, forecast(await forecast_inputs.load(conn)))
    assert again.fits
    scraped = (await Metrics().render(conn)).decode()
    assert gauge(scraped, "bf4ps_policy_feasible") == 1.0


async def test_the_start_check_waits_for_a_served_window_then_runs_once(
        conn: Conn, db_url: str, tmp_path: Path) -> None:
    """The scheduler's capacity check does not judge the documented defaults (8 egresses at
    5 s): it runs once background collectors have served its window, on what they measured."""
    sched = Scheduler(Settings(database_url=db_url, data_dir=tmp_path,
                               capacity_check_after_seconds=60.0))
    sched.leading_since = time.monotonic() - 61  # leading for longer than the window
    await sched.first_check(conn)
    assert not sched.checked  # nothing served: no check, no row
    assert await count(conn, "SELECT count(*) FROM capacity_check") == 0
    await gated_collector(conn, tmp_path)  # one egress at 0.1 s, a collector serving it
    await conn.execute(
        "INSERT INTO request_ledger (slot_at, egress_key, budget_class, resource) "
        "SELECT now() - g * interval '1 s', 'eg-1', 'bootstrap', 'detailed' "
        "FROM generate_series(1, 50) g")  # 50 requests in the last minute: it served
    await sched.first_check(conn)
    assert sched.checked
    cur = await conn.execute("SELECT checked_at, capacity_per_hour FROM capacity_check")
    first = await cur.fetchone()
    assert first is not None
    # the served fleet's own capacity (one egress, 0.1 s apart), not the defaults' 1,296/h
    assert first["capacity_per_hour"] > 1296
    await sched.first_check(conn)  # once only
    cur = await conn.execute("SELECT checked_at FROM capacity_check")
    assert (await cur.fetchone()) == {"checked_at": first["checked_at"]}


async def test_the_history_api_and_the_console_behind_authentication(
        conn: Conn, db_url: str) -> None:
    await seed_waiting(conn, 1)
    await history.record(conn, 60)
    pool = await open_pool(db_url, max_size=2)
    try:
        async with client_for(create_app(SETTINGS, pool=pool)) as c:
            assert (await c.get("/api/ops/history")).status_code == 401
            r = await c.get("/api/ops/history", auth=OPS)
            assert r.status_code == 200
            data = r.json()
            assert len(data["times"]) == 1 and data["coverage"]["detailed"] == [0.0]
            assert data["backlog"]["bootstrap"][0] > 3590
            assert [p["resource"] for p in data["projections"]] == [
                "detailed", "profile", "weapons", "vehicles"]
            page = await c.get("/ops", auth=OPS)
            assert page.status_code == 200
            assert 'id="chart-coverage"' in page.text and 'id="ops-history"' in page.text
            assert "/static/vendor/uplot/uPlot.iife.min.js" in page.text
            assert "Backlog age" in page.text
            js = await c.get("/static/vendor/uplot/uPlot.iife.min.js")
            assert js.status_code == 200 and "uPlot" in js.text[:200]
    finally:
        await pool.close()


async def test_the_forecast_reads_the_working_set_per_class(conn: Conn) -> None:
    """Per class: its background jobs, the rank of its first pending one and the ranks of its
    pending first attempts, from now (the model's wait for a starved class, and the queued
    jobs it serves as their ranks come); the interactive lane is not the working set."""
    a, b, c = [await make_soldier(conn, 9_100 + i) for i in range(3)]
    for soldier, klass, lane, rank in ((a, "active", "background", "-5 seconds"),
                                       (b, "bootstrap", "background", "30 seconds"),
                                       (c, "active", "interactive", "-9 seconds")):
        await conn.execute(
            "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, "
            "reason) VALUES (%s, 'detailed', %s, %s, now() + %s::interval, 'bootstrap')",
            [soldier, lane, "interactive" if lane == "interactive" else klass, rank])
    queued = {q.klass: q for q in (await forecast_inputs.load(conn, 3600)).queued}
    assert set(queued) == {"active", "bootstrap"}
    assert queued["active"].jobs == 1 and -6 < queued["active"].first < -4
    assert queued["bootstrap"].jobs == 1 and 28 < queued["bootstrap"].first < 31
    # and the ranks of its pending first attempts (never-attempted work), lowest first
    assert len(queued["bootstrap"].ranks) == 1 and 28 < queued["bootstrap"].ranks[0] < 31
    await conn.execute("UPDATE collection_state SET status = 'current', "
                       "last_success_at = now(), next_due_at = now() + interval '1 day' "
                       "WHERE soldier_id = %s AND resource = 'detailed'", [a])
    again = {q.klass: q for q in (await forecast_inputs.load(conn, 3600)).queued}
    assert again["active"].jobs == 1 and again["active"].ranks == ()


async def test_the_forecast_measures_the_feeder_pass_from_the_queue(conn: Conn) -> None:
    """Each pass's jobs carry its time (plus the class's aging offset) as their rank: the gaps
    between a class's consecutive pass times are the pass period (a pass that fed the class
    nothing leaves a double gap; the lower quartile is the period). A pass's jobs step by
    their positions (1 us each): those steps are not passes. Too few passes: none."""
    base = datetime.now(UTC)

    async def job(persona: int, klass: str, seconds: float) -> None:
        soldier = await make_soldier(conn, persona)
        await conn.execute(
            "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, "
            "reason) VALUES (%s, 'detailed', 'background', %s, %s, 'bootstrap')",
            [soldier, klass, base + timedelta(seconds=seconds)])

    await job(9_200, "bootstrap", 0.0)
    await job(9_201, "bootstrap", 1.3)
    assert (await forecast_inputs.load(conn, 3600)).pass_seconds is None
    for i, at in enumerate((1.3, 2.6, 3.9, 6.5, 7.8)):  # 5.2 fed none: a double gap
        for pos in range(3):  # three jobs a pass, as bf4ps_feed_class ranks them
            await job(9_210 + 10 * i + pos, "active", at - 20 + pos * 1e-6)
    await job(9_202, "bootstrap", 2.6)
    measured = (await forecast_inputs.load(conn, 3600)).pass_seconds
    assert measured is not None and measured == pytest.approx(1.3, abs=1e-4)
