"""A collector started while PostgreSQL is down for a restart: it waits the outage out (a
bounded backoff, a log line per attempt) and joins the fleet without exiting; a configuration
error (a database that does not exist) still stops it at once. The start-up retry's
classification of libpq's messages, beside."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from bf4ps.db.connect import connection, with_dbname
from bf4ps.db.startup import transient
from tests import load, pgctl
from tests.fleet import Fleet, simulator
from tests.helpers import seed_work, wait_for
from tests.pgctl import private_server
from tests.procs import bf4ps_env

RETRY_LINE = "database unavailable at collector start"


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("BF4PS_TEST_DATABASE_URL")),
                    reason="restarts a private embedded server")
async def test_a_collector_started_during_a_postgres_restart_joins(tmp_path: Path) -> None:
    with private_server() as (server, pgdata):
        url = await pgctl.migrated_database(server)
        async with connection(url) as conn:
            await seed_work(conn, 20)
        with simulator(speed=20, min_interval=0.3) as sim:
            fleet = Fleet(url, sim.base_url, tmp_path, {
                "BF4PS_HEARTBEAT_SECONDS": "0.5", "BF4PS_IDLE_POLL_SECONDS": "0.3",
                "BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.3",
                "BF4PS_EGRESS_SAFETY_MARGIN_SECONDS": "0.1"})
            # the server stopped, the collector starts, and only once it has said it waits
            # (a condition, not a guess of how long its start takes) the server comes back
            options, _ = await asyncio.to_thread(pgctl.stop, pgdata)
            proc = fleet.start("late", "eg-late", "127.0.0.31")
            deadline = load.deadline(120)
            while RETRY_LINE not in fleet.log("late"):
                assert proc.poll() is None, fleet.log("late")[-2000:]
                assert not deadline.expired(), fleet.log("late")[-2000:]
                await asyncio.sleep(0.2)
            await asyncio.to_thread(pgctl.start, pgdata, options)
            async with connection(url) as conn:
                await wait_for(conn, "SELECT count(*) FROM collection_events WHERE "
                                     "event_type = 'succeeded' AND collector_name = 'late'",
                               timeout=90)
            assert proc.poll() is None, fleet.log("late")[-2000:]
            log = fleet.log("late")
            codes = fleet.stop_all()
        assert RETRY_LINE in log and "retrying in" in log, log[-2000:]
        assert "collector late" in log and "started: lane background" in log, log[-2000:]
        assert codes == {"late": 0}, log[-2000:]


async def test_a_configuration_error_at_start_exits_at_once(pg_server_url: str,
                                                            tmp_path: Path) -> None:
    missing = with_dbname(pg_server_url, "bf4ps_no_such_database")
    began = time.monotonic()
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "bf4ps.cli.main", "collector", "run", "--name", "cfg",
         "--egress", "eg-cfg"],
        env=bf4ps_env(BF4PS_DATABASE_URL=missing, BF4PS_DATA_DIR=str(tmp_path)),
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert 'database "bf4ps_no_such_database" does not exist' in done.stderr, done.stderr
    assert RETRY_LINE not in done.stderr  # no attempt repeated (nor its backoff waited)
    assert time.monotonic() - began < 60


@pytest.mark.parametrize(("message", "expected"), [
    ('connection failed: connection to server at "127.0.0.1", port 5432 failed: Connection '
     'refused\n\tIs the server running on that host and accepting TCP/IP connections?', True),
    ('connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL:  the '
     'database system is shutting down', True),
    ('connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL:  the '
     'database system is starting up', True),
    ('connection failed: connection to server on socket "/tmp/.s.PGSQL.5432" failed: No such '
     'file or directory', True),
    ('connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL:  '
     'password authentication failed for user "mak_collector"', False),
    ('connection failed: connection to server on socket "/tmp/.s.PGSQL.5432" failed: FATAL:  '
     'role "nobody" does not exist', False),
    ('connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL:  '
     'pg_hba.conf rejects connection for host "10.0.0.9", user "x", database "bf4ps", no '
     'encryption', False),
    ('connection failed: connection to server at "10.0.0.5", port 5432 failed: SSL error: '
     'certificate verify failed', False),
])
def test_which_start_failures_are_waited_out(message: str, expected: bool) -> None:
    assert transient(psycopg.OperationalError(message)) is expected


def test_other_errors_are_never_waited_out() -> None:
    assert not transient(ValueError("connection refused"))
    assert not transient(psycopg.errors.InsufficientPrivilege("permission denied"))
