"""The least-privilege roles of migration 0013, on the real server: login roles made for the
test and given their group role with `bf4ps db grant`; each refused action refused with the
database's permission error, each needed one working; and the whole system (scheduler with the
BF4SW intake, background and interactive collectors, the website) running as those roles."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from bf4ps.db.connect import Conn, connection
from bf4ps.demo.run import free_port
from bf4ps.scheduler import retention
from tests.procs import bf4ps_env
from tests.roles import Logins, as_login, bf4ps_cli

pytestmark = pytest.mark.server_features  # the server's version can change the outcome

# what a process's log says when its role lacks a privilege
PERMISSION_ERROR = re.compile(r"permission denied|must be owner|InsufficientPrivilege")


async def refused(conn: Conn, statement: str, message: str) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
        await conn.execute(statement)  # type: ignore[arg-type]  # the test's own statements
    assert message in str(info.value), str(info.value)


def test_db_grant_gives_the_operator_then_the_operator_the_process_roles(
        pg_server_url: str, db_url: str, tmp_path: Path) -> None:
    """`bf4ps db grant` itself, as the `logins` fixture's grants do in process: the owner gives
    an operator login its role, that operator gives a collector login the collector's."""
    tag, password = uuid.uuid4().hex[:8], uuid.uuid4().hex
    operator, collector = f"t_{tag}_op", f"t_{tag}_co"
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        for name in (operator, collector):
            admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")  # type: ignore[arg-type]
    try:
        done = bf4ps_cli(db_url, "db", "grant", "bf4ps_operator", operator, data_dir=tmp_path)
        assert (done.returncode, done.stdout.strip()) == (
            0, f"granted bf4ps_operator to {operator}"), done.stderr
        done = bf4ps_cli(as_login(db_url, operator, password), "db", "grant", "bf4ps_collector",
                         collector, data_dir=tmp_path)
        assert (done.returncode, done.stdout.strip()) == (
            0, f"granted bf4ps_collector to {collector}"), done.stderr
        with psycopg.connect(as_login(db_url, collector, password)) as c:
            assert c.execute("SELECT pg_has_role('bf4ps_collector', 'MEMBER')").fetchone() \
                == (True,)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            for name in (collector, operator):
                admin.execute(f"DROP ROLE IF EXISTS {name}")  # type: ignore[arg-type]


async def test_collector_role_cannot_change_the_schema_or_delete_history(
        logins: Logins, conn: Conn) -> None:
    async with connection(logins.urls["collector"]) as c:
        assert (await (await c.execute("SELECT count(*) AS n FROM soldiers")).fetchone()) \
            == {"n": 0}
        await refused(c, "DROP TABLE soldier_weapon_history", "must be owner of table")
        await refused(c, "ALTER TABLE soldiers ADD COLUMN x int", "must be owner of table")
        await refused(c, "CREATE TABLE mine (a int)", "permission denied for schema")
        await refused(c, "TRUNCATE detailed_stats_current", "permission denied for table")
        for table in ("collection_events", "detailed_stats_history", "soldier_weapon_history",
                      "soldiers", "request_ledger", "collectors"):
            await refused(c, f"DELETE FROM {table}", f"permission denied for table {table}")
        await refused(c, "UPDATE detailed_stats_history SET soldier_id = soldier_id",
                      "permission denied for table detailed_stats_history")
        await refused(c, "INSERT INTO scheduler_policy (key, value) VALUES ('x', '1')",
                      "permission denied for table scheduler_policy")
        await refused(c, "SELECT bf4ps_drop_event_partition('collection_events_200001')",
                      "permission denied for function bf4ps_drop_event_partition")
    # nor grant itself more
    cli = bf4ps_cli(logins.urls["collector"], "db", "grant", "bf4ps_operator",
                    logins.names["collector"], data_dir=Path("/tmp"))
    # PostgreSQL 16+ says "permission denied to grant role", 15 "must have admin option"
    assert cli.returncode == 1 and ("permission denied to grant role" in cli.stderr
                                    or "must have admin option" in cli.stderr), cli.stderr


async def test_scheduler_role_runs_retention_but_touches_no_statistics(
        logins: Logins, conn: Conn) -> None:
    await conn.execute("SELECT bf4ps_ensure_event_partitions('2001-01-01', 1)")
    async with connection(logins.urls["scheduler"]) as s:
        report = await retention.run(s, 30)  # drops the old partition through the function
        assert "collection_events_200101" in report.dropped_partitions
        await retention.prune_ledger(s, 30)
        await refused(s, "DROP TABLE collection_events_default", "must be owner of table")
        await refused(s, "DELETE FROM soldiers", "permission denied for table soldiers")
        await refused(s, "DELETE FROM detailed_stats_history", "permission denied for table")
        await refused(s, "UPDATE scheduler_policy SET value = value", "permission denied")
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            await s.execute("SELECT bf4ps_drop_event_partition('soldiers')")
    assert await (await conn.execute("SELECT to_regclass('soldiers') AS t")).fetchone()


async def test_web_and_operator_roles(logins: Logins, tmp_path: Path) -> None:
    async with connection(logins.urls["web"]) as w:
        await refused(w, "DELETE FROM collection_jobs", "permission denied for table")
        await refused(w, "UPDATE fleet_budget SET requests = 1", "permission denied for table")
        await refused(w, "INSERT INTO request_ledger (egress_key) VALUES ('x')",
                      "permission denied for table request_ledger")
    operator = logins.urls["operator"]
    for args in (["config", "set", "working_set_background", "300"],
                 ["config", "unset", "working_set_background"], ["status"],
                 ["retention", "run", "--days", "30"], ["events", "--limit", "5"],
                 # read-only: it creates nothing (it once tried to CREATE TABLE)
                 ["db", "status"], ["gate", "list"], ["budget", "show"]):
        done = bf4ps_cli(operator, *args, data_dir=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
    async with connection(operator) as o:
        await refused(o, "DROP TABLE soldiers", "must be owner of table")
        await refused(o, "DELETE FROM soldier_vehicle_history", "permission denied for table")


def find_permission_errors(logs: dict[str, str]) -> dict[str, list[str]]:
    return {name: [line for line in text.splitlines() if PERMISSION_ERROR.search(line)][:5]
            for name, text in logs.items() if PERMISSION_ERROR.search(text)}


def start(name: str, url: str, data_dir: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    log = open(data_dir / f"{name}.log", "a")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "bf4ps.cli.main", *args],
        env=bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(data_dir),
                      PYTHONUNBUFFERED="1", **env),
        stdout=log, stderr=subprocess.STDOUT, text=True)


def stop(procs: dict[str, subprocess.Popen[str]]) -> dict[str, int]:
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    codes = {}
    for name, proc in procs.items():
        try:
            codes[name] = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            codes[name] = proc.wait()
    return codes


FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.25",
        "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.1", "BF4PS_SCHEDULER_TICK_SECONDS": "0.5",
        "BF4PS_BF4SW_SYNC_SECONDS": "2", "BF4PS_SWEEP_SECONDS": "2"}


@pytest.mark.slow
async def test_the_whole_system_runs_as_its_roles(logins: Logins, pg_server_url: str,
                                                 conn: Conn, tmp_path: Path) -> None:
    """A demo-sized run, every process as its own role: the scheduler takes BF4SW's soldiers
    in and feeds, two background collectors and the interactive one collect all four
    resources, the website takes a player's request, serves its pages and /metrics, and an
    operator drains and resumes a collector; no log shows a permission error."""
    from bf4ps.sim.bf4sw import population
    from tests.conftest import create_database, drop_database
    from tests.fleet import sim_stats, simulator

    sw_name = f"bf4sw_{uuid.uuid4().hex[:8]}"
    sw_url = create_database(pg_server_url, sw_name)
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        async with connection(sw_url) as sw:
            await population.fill(sw, 150, seed=3)
        with simulator(speed=40, min_interval=0.25) as sim:
            env = FAST | {"BF4PS_BATTLELOG_BASE_URL": sim.base_url}
            port = free_port()
            procs["scheduler"] = start("scheduler", logins.urls["scheduler"], tmp_path,
                                       "scheduler", "run", BF4PS_BF4SW_DATABASE_URL=sw_url,
                                       **env)
            for i in (1, 2):
                procs[f"bg-{i}"] = start(
                    f"bg-{i}", logins.urls["collector"], tmp_path, "collector", "run",
                    "--name", f"roles-{i}", "--egress", f"roles-egress-{i}",
                    "--source-address", f"127.0.0.{20 + i}", "--hostname", "roles", **env)
            procs["interactive"] = start(
                "interactive", logins.urls["collector"], tmp_path, "collector", "run",
                "--name", "roles-interactive", "--lane", "interactive", "--egress",
                "roles-interactive", "--source-address", "127.0.0.25", "--hostname", "roles",
                **env)
            procs["web"] = start("web", logins.urls["web"], tmp_path, "web", "run",
                                 BF4PS_WEB_HOST="127.0.0.1", BF4PS_WEB_PORT=str(port),
                                 BF4PS_OPS_USERNAME="ops", BF4PS_OPS_PASSWORD="roles-pw",
                                 BF4PS_SECRET_KEY="roles-key", **env)
            await _exercise(conn, logins, procs, f"http://127.0.0.1:{port}", tmp_path)
            codes = stop(procs)
            stats = sim_stats(sim)
        logs = {n: (tmp_path / f"{n}.log").read_text() for n in procs}
        assert not find_permission_errors(logs), find_permission_errors(logs)
        # uvicorn re-raises the SIGTERM it handled once it has shut down cleanly
        web = codes.pop("web")
        assert web in (0, -15) and "Application shutdown complete" in logs["web"], web
        assert set(codes.values()) == {0}, (codes, {n: logs[n][-800:] for n in codes})
        assert stats["violations"]["total"] == 0, stats["violations"]
    finally:
        stop(procs)
        drop_database(pg_server_url, sw_name)



async def _exercise(conn: Conn, logins: Logins, procs: dict[str, subprocess.Popen[str]],
                    web: str, tmp_path: Path) -> None:
    import httpx

    async def wait_for(conn: Conn, query: str, params: dict[str, object] | None = None,
                       *, timeout: float) -> None:
        """tests.helpers.wait_for that fails at once, naming the privilege, when a process
        logs a permission error (a grant missing from migration 0013)."""
        from tests.helpers import count

        for _ in range(int(timeout / 0.5)):
            logs = {n: (tmp_path / f"{n}.log").read_text() for n in procs}
            assert not find_permission_errors(logs), find_permission_errors(logs)
            if await count(conn, query, params):
                return
            await _sleep(0.5)
        raise AssertionError(f"timed out waiting for: {query}")

    await wait_for(conn, "SELECT count(*) >= 150 FROM soldiers", timeout=120)
    async with httpx.AsyncClient(base_url=web, timeout=20) as http:
        for _ in range(200):  # the website starts beside the others
            try:
                if (await http.get("/healthz")).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            await _sleep(0.25)
        row = await (await conn.execute(
            "SELECT persona_id FROM soldiers ORDER BY soldier_id DESC LIMIT 1")).fetchone()
        assert row is not None
        sub = await http.post("/api/requests", json={"platform": "pc",
                                                     "persona_id": row["persona_id"]})
        assert sub.status_code == 202, sub.text
        await wait_for(conn, "SELECT count(*) FROM interactive_requests WHERE status = 'done'",
                       timeout=120)
        for resource in ("detailed", "profile", "weapons", "vehicles"):
            await wait_for(conn, "SELECT count(*) >= 2 FROM collection_events WHERE "
                                 "event_type = 'succeeded' AND lane = 'background' AND "
                                 "resource = %(r)s", {"r": resource}, timeout=180)
        metrics = await http.get("/metrics")
        assert metrics.status_code == 200 and "bf4ps_scheduler_leading 1.0" in metrics.text
        pages = [await http.get("/ops", auth=("ops", "roles-pw")),
                 await http.get(f"/soldiers/pc/{row['persona_id']}")]
        assert [p.status_code for p in pages] == [200, 200], [p.text[:300] for p in pages]
    for args in (["collector", "drain", "roles-1", "--reason", "roles"],
                 ["collector", "resume", "roles-1"]):
        done = bf4ps_cli(logins.urls["operator"], *args, data_dir=tmp_path)
        assert done.returncode == 0, done.stderr
    dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
    assert not dead, dead


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)
