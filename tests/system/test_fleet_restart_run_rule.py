"""The restore guard's run rule (migrations 0026, 0027) with real processes on a private
server: a collector that lives through a plain server restart vouches for the new run with the
mark it kept, and the fleet goes on sending; a server started while the whole fleet was down is
held — the collector started afterwards sends nothing, `bf4ps status` says why — until an
operator's `bf4ps db vouch`, after which it sends again. The hold is the guard's window (here an
egress window of 900 s, so the test never sees it lapse by itself), and no request is counted
between the restart and the vouch."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bf4ps.db.connect import Conn, connection
from tests import load, pgctl
from tests.fleet import Fleet, sim_stats, simulator
from tests.helpers import count, seed_work, wait_for
from tests.pgctl import private_server
from tests.roles import bf4ps_cli
from tests.system.test_restore import FAST, SENT, assert_no_violations

pytestmark = pytest.mark.server_features  # the server's version can change the outcome

ENV = FAST | {"BF4PS_FLEET_BUDGET_WINDOW_SECONDS": "30", "BF4PS_EGRESS_WINDOW_REQUESTS": "100000",
              "BF4PS_EGRESS_WINDOW_SECONDS": "900", "BF4PS_RESTORE_RECEIPT_FILE": "false"}
UNVOUCHED = "no running process has vouched"
THIS_RUN = ("SELECT run_started_at = pg_postmaster_start_time() AND run_vouched_at IS NOT NULL "
            "FROM restore_guard")


async def newest(conn: Conn) -> int:
    return await count(conn, "SELECT COALESCE(max(request_id), 0) FROM request_ledger")


async def wait_log(fleet: Fleet, name: str, text: str, timeout: float) -> None:
    deadline = load.deadline(timeout)
    while text not in fleet.log(name):
        assert fleet.procs[name].poll() is None, fleet.log(name)[-2000:]
        assert not deadline.expired(), fleet.tails()
        await asyncio.sleep(0.2)


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("BF4PS_TEST_DATABASE_URL")),
                    reason="restarts a private embedded server")
async def test_a_server_started_while_the_fleet_was_down_is_held_until_vouched(
        tmp_path: Path) -> None:
    with private_server() as (server, pgdata):
        url = await pgctl.migrated_database(server)
        async with connection(url) as conn:
            await seed_work(conn, 3000)
        with simulator(speed=40, min_interval=1.0, fleet_budget=12, fleet_window=30.0) as sim:
            fleet = Fleet(url, sim.base_url, tmp_path / "hosts", ENV)
            fleet.data_dir.mkdir()
            fleet.start("lives", "egress-r", "127.0.0.40")
            async with connection(url) as conn:
                await wait_for(conn, f"SELECT ({SENT}) >= 3", timeout=90, context=fleet.tails)
            # a plain restart under a running collector: its mark vouches, it goes on sending
            await asyncio.to_thread(pgctl.restart, pgdata)
            async with connection(url) as conn:
                before = await newest(conn)
                await wait_for(conn, THIS_RUN, timeout=60, context=fleet.tails)
                await wait_for(conn, "SELECT count(*) FROM request_ledger WHERE request_id > "
                                     "%(n)s", {"n": before}, timeout=90, context=fleet.tails)
            assert fleet.stop_all() == {"lives": 0}, fleet.tails()
            # the whole fleet down, the server restarted, a collector started afterwards
            async with connection(url) as conn:
                at_stop = await newest(conn)
            seen_at_stop = sim_stats(sim)["requests_total"]
            await asyncio.to_thread(pgctl.restart, pgdata)
            fleet.start("after", "egress-r", "127.0.0.40")
            await wait_log(fleet, "after", UNVOUCHED, timeout=90)
            status = bf4ps_cli(url, "status", data_dir=tmp_path / "cli")
            assert status.returncode == 0, status.stderr
            assert "SENDS HELD until" in status.stdout and UNVOUCHED in status.stdout, \
                status.stdout[:1500]
            async with connection(url) as conn:
                assert await newest(conn) == at_stop, fleet.tails()
            vouched = bf4ps_cli(url, "db", "vouch", "--reason", "a plain restart: same data",
                                data_dir=tmp_path / "cli")
            assert vouched.returncode == 0, vouched.stderr
            assert "vouched for the server started at" in vouched.stdout, vouched.stdout
            async with connection(url) as conn:
                await wait_for(conn, "SELECT count(*) FROM request_ledger WHERE request_id > "
                                     "%(n)s", {"n": at_stop}, timeout=90, context=fleet.tails)
                early = await count(conn, "SELECT count(*) FROM request_ledger WHERE "
                                          "request_id > %(n)s AND slot_at < (SELECT "
                                          "run_vouched_at FROM restore_guard)", {"n": at_stop})
                audited = await count(conn, "SELECT count(*) FROM fleet_settings_changes WHERE "
                                            "setting = 'restore' AND changed_by = session_user")
            codes = fleet.stop_all()
            stats = sim_stats(sim)
    assert codes == {"lives": 0, "after": 0}, fleet.tails()
    assert early == 0  # nothing was counted between the restart and the vouch
    assert audited == 1
    assert stats["requests_total"] > seen_at_stop  # the fleet did resume
    assert_no_violations(stats)
