"""Fleet settings have one source of truth, the database: `bf4ps gate` and `bf4ps budget`
change them (each change audited: who, old -> new), a collector's environment only seeds what
was never configured, and a collector whose settings differ says so once and changes nothing.
Also `bf4ps battlelog fetch`: counted and paced as the fleet's requests where a database is
configured, refused without it unless --unmetered."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from bf4ps.cli.main import cli
from bf4ps.db.connect import Conn, connection
from bf4ps.fleet import conf as fleetconf
from bf4ps.fleet.seed import Difference, seed
from bf4ps.settings import Settings
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import start_in_thread
from tests.fleet import Fleet, simulator
from tests.helpers import count, make_collector, seed_work, wait_for
from tests.procs import bf4ps_env


def invoke(settings: Settings, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), obj=settings, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


async def rows(conn: Conn, sql: str) -> list[dict[str, Any]]:
    cur = await conn.execute(sql)
    return [dict(r) for r in await cur.fetchall()]


def test_gate_and_budget_commands_change_the_fleet_and_record_who_and_what(
        db_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=db_url, data_dir=tmp_path)
    assert "no egress gates" in invoke(settings, "gate", "list")
    assert "no egress gate 'eg-a'" in invoke(settings, "gate", "set", "eg-a", "--interval", "2",
                                             code=1)
    invoke(settings, "gate", "set", "eg-a", "--interval", "2", "--create")
    line = invoke(settings, "gate", "set", "eg-a", "--interval", "3", "--window-requests",
                  "10", "--reason", "slower after 403s")
    assert "every 3 s, at most 10 per 60 s" in line
    gates = json.loads(invoke(settings, "gate", "list", "--json"))
    assert [(g["egress_key"], g["min_interval_seconds"], g["window_requests"])
            for g in gates] == [("eg-a", 3.0, 10)]
    invoke(settings, "gate", "set", "eg-a", "--cooldown", "600")
    assert "cooling down until" in invoke(settings, "gate", "list")
    invoke(settings, "gate", "set", "eg-a", "--end-cooldown", "--no-window")
    assert "every 3 s, no window" in invoke(settings, "gate", "list")
    assert "nothing to change" in invoke(settings, "gate", "set", "eg-a", code=2)

    assert "no fleet budget (never configured)" in invoke(settings, "budget", "show")
    invoke(settings, "budget", "set", "--window", "1800")  # a window alone configures no budget
    assert "no fleet budget (never configured)" in invoke(settings, "budget", "show")
    shown = json.loads(invoke(settings, "budget", "set", "1296", "--window", "3600", "--share",
                              "active=0.7", "--share", "bootstrap=0.25", "--json"))
    assert (shown["requests"], shown["window_seconds"]) == (1296, 3600.0)
    assert shown["shares"] == {"active": 0.7, "interactive": 0.25, "bootstrap": 0.25,
                               "retry": 0.05}
    assert "more than the whole budget" in invoke(settings, "budget", "set", "--share",
                                                  "interactive=0.9", code=1)
    assert "no budget share for recent" in invoke(settings, "budget", "set", "--share",
                                                  "recent=0.1", code=1)
    assert "CLASS=FRACTION" in invoke(settings, "budget", "set", "--share", "active", code=2)
    # the shares are the policy the collectors read
    assert json.loads(invoke(settings, "config", "show", "--json"))["budget_cap_active"] == 0.7
    text = invoke(settings, "budget", "remove", "--reason", "testing")
    assert text.startswith("no fleet budget (removed)")
    assert "budget: requests 1296 -> none" in text and "(testing)" in text
    assert json.loads(invoke(settings, "status", "--json"))["budget"]["fleet"] is None

    async def audit() -> None:
        async with connection(db_url) as conn:
            changes = await rows(conn, "SELECT setting, subject, old_value, new_value, "
                                       "changed_by, reason FROM fleet_settings_changes "
                                       "ORDER BY change_id")
            events = await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                       "event_type = 'fleet_settings_changed'")
            me = (await rows(conn, "SELECT session_user::text AS u"))[0]["u"]
        # one row per change of a gate, the budget, a policy key (a share): the audit trigger's
        assert [(c["setting"], c["subject"]) for c in changes] == [
            ("gate", "eg-a")] * 4 + [("budget", "fleet")] * 2 + [
            ("shares", "budget_cap_active"), ("shares", "budget_floor_bootstrap"),
            ("budget", "fleet")]
        assert changes[0]["old_value"] is None and changes[0]["new_value"][
            "min_interval_seconds"] == 2.0
        second = changes[1]
        assert (second["old_value"]["min_interval_seconds"],
                second["new_value"]["min_interval_seconds"]) == (2.0, 3.0)
        # who: the database role (session_user), not the OS user the command ran as
        assert second["reason"] == "slower after 403s" and second["changed_by"] == me
        assert {c["changed_by"] for c in changes} == {me}
        assert changes[4]["new_value"] == {"requests": None, "window_seconds": 1800.0}
        assert changes[6]["old_value"] is None  # the default, never stored
        assert changes[6]["new_value"] == {"budget_cap_active": 0.7}
        assert changes[-1]["new_value"] == {"requests": None, "window_seconds": 3600.0}
        assert events == len(changes)

    asyncio.run(audit())


FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5"}


@pytest.mark.slow
async def test_a_collector_with_other_settings_changes_nothing_and_says_so_once(
        db_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=db_url, data_dir=tmp_path)
    await asyncio.to_thread(invoke, settings, "budget", "set", "100", "--window", "600")
    await asyncio.to_thread(invoke, settings, "gate", "set", "eg-old", "--create",
                            "--interval", "2")
    async with connection(db_url) as conn:
        await seed_work(conn, 20)
    with simulator(speed=40, min_interval=0.5) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST | {
            "BF4PS_FLEET_BUDGET_REQUESTS": "5", "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": "60",
            "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.5"})
        fleet.start("old-env", "eg-old", "127.0.0.5")
        fleet.start("new-egress", "eg-new", "127.0.0.6")
        async with connection(db_url) as conn:
            for name in ("old-env", "new-egress"):  # both working
                await wait_for(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "event_type = 'succeeded' AND collector_name = %(n)s",
                               {"n": name}, timeout=60)
            budget = (await rows(conn, "SELECT requests, window_seconds FROM fleet_budget"))[0]
            gates = {r["egress_key"]: r for r in await rows(
                conn, "SELECT egress_key, min_interval_seconds, updated_by FROM egress_gates")}
            mismatches = await rows(conn, "SELECT collector_name, details FROM "
                                          "collection_events WHERE event_type = "
                                          "'settings_mismatch' ORDER BY collector_name DESC")
            seeds = await rows(conn, "SELECT subject, reason FROM fleet_settings_changes "
                                     "WHERE reason LIKE 'collector %' ORDER BY change_id")
        codes = fleet.stop_all()
    assert set(codes.values()) == {0}, {n: fleet.log(n)[-1500:] for n in codes}
    assert budget == {"requests": 100, "window_seconds": 600.0}  # the environment's 5/60 not
    assert gates["eg-old"]["min_interval_seconds"] == 2.0  # its 0.5 not
    # a new egress is seeded from the environment of its first collector
    assert gates["eg-new"]["min_interval_seconds"] == 0.5
    assert seeds == [{"subject": "eg-new", "reason": "collector new-egress (seeded from its "
                                                     "settings): first collector on this egress"}]
    # each collector says so once: its differences, as the fleet has them
    assert [m["collector_name"] for m in mismatches] == ["old-env", "new-egress"]
    assert mismatches[0]["details"]["differences"] == {
        "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": {"local": 0.5, "fleet": 2.0},
        "BF4PS_FLEET_BUDGET_REQUESTS": {"local": 5, "fleet": 100},
        "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": {"local": 60.0, "fleet": 600.0}}
    assert set(mismatches[1]["details"]["differences"]) == {
        "BF4PS_FLEET_BUDGET_REQUESTS", "BF4PS_FLEET_BUDGET_WINDOW_SECONDS"}
    log = fleet.log("old-env")
    assert log.count("its settings differ from the fleet's") == 1, log[-2000:]
    assert "BF4PS_EGRESS_MIN_INTERVAL_SECONDS 0.5 (fleet: 2.0)" in log
    assert "not below egress" not in log  # 1 s bound, 2 s interval
    # the default 1 s clock bound against eg-new's 0.5 s interval: said at start
    assert "BF4PS_CLOCK_SKEW_LIMIT_SECONDS (1) is not below egress eg-new's interval (0.5 s)" \
        in fleet.log("new-egress")


async def test_a_removed_budget_is_not_restored_by_a_collector_environment(
        db_url: str, tmp_path: Path) -> None:
    """The seed is for a budget never configured; an operator's removal is configuration."""
    async with connection(db_url) as conn:
        me = await make_collector(conn, tmp_path, "seeder", egress="eg-s")
        env = Settings(database_url=db_url, data_dir=tmp_path, fleet_budget_requests=50)
        await seed(conn, env, me)  # never configured: seeded
        assert (await rows(conn, "SELECT requests FROM fleet_budget"))[0]["requests"] == 50
        await fleetconf.set_budget(conn, requests=None, window_seconds=None, shares={},
                                   remove=True)
        diffs = await seed(conn, env, me)
        assert (await rows(conn, "SELECT requests FROM fleet_budget"))[0]["requests"] is None
        assert diffs["BF4PS_FLEET_BUDGET_REQUESTS"] == Difference(local=50, fleet=None)


def fetch(db_url: str | None, data_dir: Path, base_url: str, *args: str,
          source: str = "127.0.0.9") -> subprocess.CompletedProcess[str]:
    env = {"BF4PS_DATA_DIR": str(data_dir)} | ({"BF4PS_DATABASE_URL": db_url} if db_url else {})
    return subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "battlelog", "fetch",
                           "--resource", "detailed", "--persona", "1001", "--base-url",
                           base_url, "--local-address", source, *args],
                          env=bf4ps_env(**env), capture_output=True, text=True, timeout=120)


def test_battlelog_fetch_is_counted_and_paced_on_a_fleet_and_refused_without_its_database(
        db_url: str, tmp_path: Path) -> None:
    sim = start_in_thread(SimConfig(port=0, speed=50, min_interval=1.0, penalty=0))
    try:
        settings = Settings(database_url=db_url, data_dir=tmp_path)
        invoke(settings, "gate", "set", "eg-op", "--create", "--interval", "1.0")

        def arrivals() -> dict[str, Any]:
            return dict(httpx.get(sim.url("/__sim/stats"), timeout=10).json())

        refused = fetch(db_url, tmp_path, sim.base_url)
        assert refused.returncode == 2 and "give --egress EGRESS" in refused.stderr
        unknown = fetch(db_url, tmp_path, sim.base_url, "--egress", "eg-typo")
        assert unknown.returncode == 1 and "no egress gate 'eg-typo'" in unknown.stderr
        down = fetch("postgresql://bf4ps@127.0.0.1:1/none", tmp_path, sim.base_url,
                     "--egress", "eg-op")
        assert down.returncode == 1 and "nothing was sent" in down.stderr, down.stderr
        assert arrivals()["requests_total"] == 0  # none of these sent anything
        for _ in range(2):  # one after the other: the gate spaces them
            done = fetch(db_url, tmp_path, sim.base_url, "--egress", "eg-op")
            assert done.returncode == 0, done.stderr
            assert "counted in the request ledger" in done.stderr and "HTTP 200" in done.stdout
        # from another address: the simulator would otherwise answer it 403 (it is not paced)
        unmetered = fetch("postgresql://bf4ps@127.0.0.1:1/none", tmp_path, sim.base_url,
                          "--unmetered", source="127.0.0.10")
        assert unmetered.returncode == 0, unmetered.stderr
        assert "the fleet's request ceiling no longer holds" in unmetered.stderr
        stats = arrivals()

        async def ledger() -> list[dict[str, Any]]:
            async with connection(db_url) as conn:
                return await rows(conn, "SELECT egress_key, budget_class, collector_uuid, "
                                        "resource FROM counted_requests ORDER BY request_id")

        counted = asyncio.run(ledger())
    finally:
        sim.stop()
    assert counted == [{"egress_key": "eg-op", "budget_class": "interactive",
                        "collector_uuid": None, "resource": "detailed"}] * 2
    ip = stats["by_ip"]["127.0.0.9"]
    assert ip["count"] == 2 and ip["min_spacing_seconds"] >= 1.0, ip
    assert stats["by_ip"]["127.0.0.10"]["count"] == 1  # sent, counted nowhere
    assert stats["violations"]["total"] == 0, stats["violations"]["recent"]
