"""The run rule's hold for its readers, and an operator's vouch (migration 0027). A server start
no running process vouched for holds the fleet one window (0026); /metrics, the console and
`bf4ps status` say so (before, they read only a detected restore's stored hold and said "not
held"). `bf4ps db vouch`, an operator's audited word, ends the run rule's hold — only while no
vouch is set, never a detected restore's hold — and no runtime role below the operator's may
give it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from bf4ps.cli.metered import Metered, Refused
from bf4ps.db.connect import Conn, connection, open_pool
from bf4ps.db.queries import Record, one_row
from bf4ps.gates.restore import Marks, current_hold, standing_hold, vouch
from bf4ps.interactive.submit import Limits
from bf4ps.settings import Settings
from bf4ps.views import console
from bf4ps.views.fleet_status import render_status, status_report
from bf4ps.web.app import create_app
from tests.db.test_restore_marks import a_row, new_run, setting
from tests.db.test_web_api import OPS, SETTINGS, client_for
from tests.roles import Logins, bf4ps_cli

DAYS = 30 * 86400  # a window long enough that a hold from the shared server's start still runs


async def metric(url: str) -> float:
    """bf4ps_restore_hold_seconds as the website's login reads it."""
    async with connection(url) as c:
        return float((await one_row(c, Record, "web_metrics_restore_hold"))["seconds"])


async def audit(conn: Conn) -> list[dict[str, object]]:
    return await (await conn.execute(
        "SELECT c.changed_by, c.reason, c.new_value ? 'run_vouched_at' AS says, e.details->>'by' "
        "AS event_by FROM fleet_settings_changes c JOIN collection_events e "
        "ON e.event_type = 'fleet_settings_changed' AND (e.details->>'change_id')::bigint = "
        "c.change_id WHERE c.setting = 'restore' ORDER BY c.change_id")).fetchall()


async def test_every_reader_shows_the_run_rules_hold_until_an_operator_vouches(
        conn: Conn, logins: Logins) -> None:
    await setting(conn, DAYS)
    await a_row(conn)
    assert await standing_hold(conn) is None and await metric(logins.urls["web"]) == 0.0
    await new_run(conn)  # the server started again while every process was down
    held = await current_hold(conn, Marks())
    assert held is not None and "no running process has vouched" in held.reason
    shown = await standing_hold(conn)
    assert shown is not None and shown.run_rule and shown.until == held.until, shown
    assert await metric(logins.urls["web"]) > DAYS / 2
    report = await status_report(conn)
    assert report.restore_hold is not None and report.restore_hold.run_rule
    assert "SENDS HELD until" in render_status(report)
    assert (await console.status(conn)).restore_hold == report.restore_hold
    assert await audit(conn) == []

    async with connection(logins.urls["operator"]) as o:
        done = await vouch(o, "the fleet was down for the upgrade; same cluster")
    assert done.outcome == "vouched" and done.remaining is None, done
    assert await current_hold(conn, Marks()) is None
    assert await standing_hold(conn) is None and await metric(logins.urls["web"]) == 0.0
    assert (await status_report(conn)).restore_hold is None
    operator = logins.names["operator"]
    assert await audit(conn) == [{"changed_by": operator, "says": True, "event_by": operator,
                                  "reason": "the fleet was down for the upgrade; same cluster"}]
    # a second vouch changes nothing and says so; nothing more is recorded
    async with connection(logins.urls["operator"]) as o:
        again = await vouch(o, "again")
    assert again.outcome == "already vouched" and again.vouched_at == done.vouched_at, again
    assert len(await audit(conn)) == 1


async def test_a_vouch_never_lifts_a_detected_restores_hold(conn: Conn, logins: Logins) -> None:
    await setting(conn, DAYS)
    await a_row(conn)
    marks = Marks()
    await current_hold(conn, marks)
    await conn.execute("DELETE FROM request_ledger")  # a rewind a running process notices
    held = await current_hold(conn, marks)
    assert held is not None and "the database was rewound" in held.reason, held
    shown = await standing_hold(conn)
    assert shown is not None and not shown.run_rule and shown.until == held.until
    async with connection(logins.urls["operator"]) as o:
        done = await vouch(o, "trying")
    # the detection vouched for the run already; its hold stays and is named
    assert done.outcome == "already vouched", done
    assert done.remaining is not None and done.remaining.until == held.until
    assert await current_hold(conn, Marks()) == held
    assert await audit(conn) == []


@pytest.mark.parametrize("role", ["collector", "web", "scheduler"])
async def test_no_role_below_the_operator_may_vouch(conn: Conn, logins: Logins,
                                                    role: str) -> None:
    await setting(conn, DAYS)
    await new_run(conn)
    await current_hold(conn, Marks())
    async with connection(logins.urls[role]) as c:
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match="permission denied for function bf4ps_restore_vouch"):
            await vouch(c, "forged")
    assert await standing_hold(conn) is not None
    assert await audit(conn) == []


async def test_the_command_says_what_it_did(conn: Conn, logins: Logins, tmp_path: Path) -> None:
    await setting(conn, DAYS)
    await new_run(conn)
    await current_hold(conn, Marks())
    denied = bf4ps_cli(logins.urls["collector"], "db", "vouch", "--reason", "x",
                       data_dir=tmp_path)
    assert denied.returncode == 1, denied
    assert "permission denied for function bf4ps_restore_vouch" in denied.stderr
    done = bf4ps_cli(logins.urls["operator"], "db", "vouch", "--reason", "fleet was down",
                     data_dir=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "vouched for the server started at" in done.stdout, done.stdout
    again = bf4ps_cli(logins.urls["operator"], "db", "vouch", "--reason", "again",
                      data_dir=tmp_path)
    assert again.returncode == 0 and "already vouched for" in again.stdout, again
    assert "nothing changed" in again.stdout


async def test_the_console_shows_the_run_rules_hold(conn: Conn, db_url: str) -> None:
    await setting(conn, DAYS)
    await new_run(conn)
    pool = await open_pool(db_url, max_size=2)
    try:
        async with client_for(create_app(SETTINGS, pool=pool, limits=Limits(1000, 60))) as c:
            page = (await c.get("/ops", auth=OPS)).text
            status = (await c.get("/api/ops/status", auth=OPS)).json()
    finally:
        await pool.close()
    assert 'id="restore-hold"' in page and "bf4ps db vouch" in page, page[:2000]
    assert status["restore_hold"]["run_rule"] is True, status.get("restore_hold")


async def test_a_metered_fetch_shows_its_mark_at_its_next_check(conn: Conn) -> None:
    """`bf4ps battlelog fetch` keeps the mark each guard check hands it (as a collector does):
    a rewind between two of its sends holds it, although it keeps no receipt."""
    await setting(conn, 30)
    await conn.execute("INSERT INTO egress_gates (egress_key, min_interval_seconds) "
                       "VALUES ('eg-op', 0.1)")
    await a_row(conn)
    metered = Metered(conn, Settings(), "eg-op", max_wait=5)
    await metered.prepare()
    deadline = metered.clock.now() + timedelta(seconds=5)
    await metered._slot("detailed", deadline)
    assert metered.marks.mark is not None
    await conn.execute("DELETE FROM request_ledger")  # a data-only restore's rewind
    with pytest.raises(Refused, match="the database was rewound"):
        await metered._slot("detailed", deadline)
