"""Found by the chaos run: a collector that stalled after its on-time check and before its
request was on the wire (SIGSTOP, a VM pause, a long GC or scheduling pause) still sent it, late,
on top of the next collector's on-time request: a rate-limit violation at the wire (and, with a
fleet budget, a request outside its ledger slot's window).

Fixed by checking the slot again at the socket: the client's httpcore trace hook refuses to
start writing the request headers past the slot's deadline (SendTooLate, nothing sent) and the
collector takes a new slot. Here two collectors share one egress (1 s spacing): A is admitted for
slot S, B for S + 1 s + margin (0.2 s); A stalls 1.5 s between its on-time check and the send.
What remains (docs/architecture.md, 'Rate gates'): a stall in the last steps between that hook
and the socket write (h11 serialising the headers, one event-loop turn)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from bf4ps.battlelog.client import BattlelogClient
from bf4ps.collector.heartbeat import Heartbeat
from bf4ps.collector.work import Context, run_job
from bf4ps.db.connect import connection, open_pool
from bf4ps.gates import admission
from bf4ps.gates.admission import Admitted
from bf4ps.policy import Policy
from bf4ps.settings import SendTimings
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import start_in_thread
from tests.helpers import GATE_ENSURE, count, make_collector, seed_work

EGRESS = "eg-stall"
SOURCE = "127.0.0.71"
GATE = SendTimings(margin=0.2, horizon=3.0, lease_seconds=30.0)


async def test_a_stall_between_the_on_time_check_and_the_send_never_sends_late(
        db_url: str, tmp_path: Path) -> None:
    policy = Policy()
    sim = start_in_thread(SimConfig(port=0, speed=50, min_interval=1.0, penalty=0))
    pool = await open_pool(db_url, max_size=2)
    try:
        async with connection(db_url) as conn_a, connection(db_url) as conn_b:
            await seed_work(conn_a, 4)
            await conn_a.execute(GATE_ENSURE, {
                "egress_key": EGRESS, "min_interval": 1.0, "window_requests": None,
                "window_seconds": None})
            # both slots in the near future, so that both collectors are on time at first
            await conn_a.execute("UPDATE egress_gates SET next_slot_at = now() + interval "
                                 "'0.5 s' WHERE egress_key = %s", [EGRESS])
            me_a = await make_collector(conn_a, tmp_path, "stall-a", egress=EGRESS)
            me_b = await make_collector(conn_a, tmp_path, "stall-b", egress=EGRESS)
            adm_a = await admission.admit(conn_a, me_a, GATE)
            adm_b = await admission.admit(conn_b, me_b, GATE)
            assert isinstance(adm_a, Admitted) and isinstance(adm_b, Admitted)
            assert (adm_b.slot_at - adm_a.slot_at).total_seconds() >= 1.2  # the gate spaced them
            # A's job serves a player's request, whose page shows when its first request went out
            await conn_a.execute(
                "INSERT INTO interactive_requests (request_id, soldier_id, platform, client_key)"
                " SELECT gen_random_uuid(), soldier_id, 'pc', 'late-send' FROM collection_jobs"
                " WHERE job_id = %(j)s", {"j": adm_a.job.job_id})
            await conn_a.execute(
                "UPDATE collection_jobs SET request_id = (SELECT request_id FROM "
                "interactive_requests WHERE client_key = 'late-send') WHERE job_id = %(j)s",
                {"j": adm_a.job.job_id})
            async with BattlelogClient(sim.base_url, "chaos-test", 10, SOURCE) as client_a, \
                    BattlelogClient(sim.base_url, "chaos-test", 10, SOURCE) as client_b:
                real_fetch = client_a.fetch
                stalls = [1.5]

                async def stalled_fetch(*args: Any, **kwargs: Any) -> Any:
                    if stalls:
                        await asyncio.sleep(stalls.pop())  # descheduled right here, once
                    return await real_fetch(*args, **kwargs)

                client_a.fetch = stalled_fetch  # type: ignore[method-assign]
                stop = asyncio.Event()
                ctx_a = Context(me_a, client_a, GATE, Heartbeat(pool, me_a, 1, 30), 60, 600)
                ctx_b = Context(me_b, client_b, GATE, Heartbeat(pool, me_b, 1, 30), 60, 600)
                outcomes = await asyncio.gather(run_job(conn_a, ctx_a, adm_a, policy, stop),
                                                run_job(conn_b, ctx_b, adm_b, policy, stop))
            assert not stalls  # A really stalled
            assert all(o is not None and o.committed for o in outcomes), outcomes  # both served
            # A's first slot (and any other given up on a busy machine) was given up before a
            # byte left: marked unsent, it stops counting; the two sent requests still count
            assert await count(conn_a, "SELECT count(*) FROM request_ledger WHERE egress_key "
                                       "= %(e)s AND unsent_at IS NULL", {"e": EGRESS}) == 2
            assert await count(conn_a, "SELECT count(*) FROM request_ledger WHERE egress_key "
                                       "= %(e)s AND unsent_at IS NOT NULL", {"e": EGRESS}) >= 1
            # the audit trail says which slot A's request went in: its started event keeps the
            # slot it was admitted for (the log is append-only), its succeeded event names the
            # one it was sent in
            cur = await conn_a.execute(
                "SELECT (e.details->>'sent_slot_at')::timestamptz = l.slot_at AS sent_in_it, "
                "(e.details->>'sent_slot_at')::timestamptz > %(first)s AS later "
                "FROM collection_events e JOIN request_ledger l ON l.collector_uuid = "
                "e.collector_uuid AND l.unsent_at IS NULL WHERE e.event_type = 'succeeded' "
                "AND e.collector_uuid = %(a)s",
                {"a": me_a.collector_uuid, "first": adm_a.slot_at})
            assert await cur.fetchall() == [{"sent_in_it": True, "later": True}]
            # and the player's request says A's request went out in the slot it was sent in,
            # not in the slot given up
            cur = await conn_a.execute(
                "SELECT r.first_request_at = l.slot_at AS sent_in_it, r.status "
                "FROM interactive_requests r JOIN request_ledger l ON l.collector_uuid = %(a)s "
                "AND l.unsent_at IS NULL WHERE r.client_key = 'late-send'",
                {"a": me_a.collector_uuid})
            assert await cur.fetchall() == [{"sent_in_it": True, "status": "done"}]
        counters = httpx.get(sim.url("/__sim/stats"), timeout=10).json()
    finally:
        await pool.close()
        sim.stop()
    ip = counters["by_ip"][SOURCE]
    assert ip["count"] == 2, ip  # A's abandoned attempt never reached the wire
    assert counters["violations"]["total"] == 0, (
        f"a late send crowded the next on-time request: min spacing "
        f"{ip['min_spacing_seconds']:.3f} s < 1 s; {counters['violations']['recent']}")
