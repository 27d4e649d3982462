"""The website's trust boundaries on a real server and in process: failed /ops logins limited
per client network and per account with a growing lock-out (429 + Retry-After), one log line
each (the fail2ban filter of docs/operations.md matches it) and a metric; /metrics refused
without its token except to a scraper on the website's own host; the submission limit counts
an IPv6 /64 as one client. The lock-out counts are the database's: two web processes and a
restart share them."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool
from pydantic import SecretStr

from bf4ps.db.connect import Conn, open_pool
from bf4ps.demo.run import free_port
from bf4ps.interactive.submit import Limits
from bf4ps.web.app import create_app
from bf4ps.web.clients import network
from bf4ps.web.serve import serve_in_thread
from tests import load
from tests.db.test_web_api import OPS, SETTINGS
from tests.helpers import count, make_soldier
from tests.roles import Logins
from tests.system.test_roles import start, stop

pytestmark = pytest.mark.server_features  # the server's version can change the outcome

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
WRONG = (OPS[0], "not-the-password")
# short lock-outs, so that "after the window" comes within the test
LIMITED = SETTINGS.model_copy(update={
    "ops_login_free_failures": 5, "ops_login_delay_seconds": 1.0,
    "ops_login_max_delay_seconds": 4.0, "ops_login_forget_seconds": 60.0})


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[AsyncConnectionPool[Conn]]:
    p = await open_pool(db_url, max_size=4)
    yield p
    await p.close()


def fail2ban_regex() -> re.Pattern[str]:
    """The documented failregex, with fail2ban's <HOST> as a named group."""
    found = re.search(r"^failregex = (.+)$", DOCS.read_text(), re.MULTILINE)
    assert found, "docs/operations.md has no fail2ban failregex"
    return re.compile(found.group(1).strip().replace("<HOST>", r"(?P<host>[0-9a-fA-F.:]+)"))


async def test_fifty_wrong_logins_are_refused_logged_and_counted(
        db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="bf4ps.web.login")
    settings = LIMITED.model_copy(update={"database_url": db_url})
    with serve_in_thread(create_app(settings)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=20) as http:
            answers = [await http.get("/ops", auth=WRONG) for _ in range(50)]
            codes = [a.status_code for a in answers]
            # five free attempts, the sixth is refused unread and starts a lock-out; the
            # rest are refused unread too (one compared each time a lock-out ends)
            assert codes[:6] == [401] * 5 + [429] and codes.count(429) >= 40, codes
            refused = next(a for a in answers if a.status_code == 429)
            assert 1 <= int(refused.headers["retry-after"]) <= 4
            assert "too many failed operator logins" in refused.text
            # locked: even the right password waits for the window
            assert (await http.get("/ops", auth=OPS)).status_code == 429
            deadline = load.deadline(30)
            while (right := await http.get("/ops", auth=OPS)).status_code == 429:
                assert not deadline.expired(), "the lock-out never ended"
                await asyncio.sleep(float(right.headers["retry-after"]))
            assert right.status_code == 200
            metrics = (await http.get("/metrics")).text
    lines = [r.getMessage() for r in caplog.records if r.name == "bf4ps.web.login"]
    assert len([x for x in lines if "ops login" in x]) >= 50
    pattern = fail2ban_regex()
    matched = [m for x in lines if (m := pattern.search(x))]
    assert len(matched) == len(lines) and {m["host"] for m in matched} == {"127.0.0.1"}
    failed = float(re.search(r'bf4ps_ops_login_failures_total\{outcome="failed"\} (\S+)',
                             metrics).group(1))  # type: ignore[union-attr]
    refused_n = float(re.search(r'bf4ps_ops_login_failures_total\{outcome="refused"\} (\S+)',
                                metrics).group(1))  # type: ignore[union-attr]
    assert failed == codes.count(401) and refused_n >= codes.count(429) + 1


async def test_forty_concurrent_wrong_passwords_get_only_the_free_comparisons(
        db_url: str) -> None:
    """Each attempt is counted before its password is compared, atomically per client and
    account: forty wrong passwords sent at once get the five free comparisons (401) and forty
    less five refusals read by no comparison (429), as forty sent one after another would."""
    settings = LIMITED.model_copy(update={"database_url": db_url,
                                          "ops_login_delay_seconds": 600.0,
                                          "ops_login_max_delay_seconds": 600.0})
    with serve_in_thread(create_app(settings)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60,
                                     limits=httpx.Limits(max_connections=40)) as http:
            answers = await asyncio.gather(*[http.get("/ops", auth=WRONG) for _ in range(40)])
    codes = sorted(a.status_code for a in answers)
    assert codes == [401] * 5 + [429] * 35, codes


def client_at(app: object, host: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(host, 40000))  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def test_the_lock_out_is_per_account_and_per_ipv6_network(
        pool: AsyncConnectionPool[Conn]) -> None:
    app = create_app(LIMITED, pool=pool)
    async with client_at(app, "2001:db8:1:2::10") as a, \
            client_at(app, "2001:db8:1:2::99") as same_64, \
            client_at(app, "2001:db8:1:3::10") as other_64, \
            client_at(app, "198.51.100.7") as elsewhere:
        for _ in range(5):
            assert (await a.get("/api/ops/status", auth=("intruder", "x"))).status_code == 401
        assert (await a.get("/api/ops/status", auth=("intruder", "x"))).status_code == 429
        # the same /64 under another account: locked with it
        assert (await same_64.get("/api/ops/status", auth=("nobody", "x"))).status_code == 429
        # another /64, another account: free
        assert (await other_64.get("/api/ops/status", auth=("nobody2", "x"))).status_code == 401
        # the operator's account from elsewhere: not locked by the intruder's failures
        assert (await elsewhere.get("/api/ops/status", auth=OPS)).status_code == 200
        # failures against one account from many addresses lock that account
        for i in range(6):
            async with client_at(app, f"203.0.113.{i + 1}") as spray:
                assert (await spray.get("/api/ops/status", auth=(OPS[0], "guess"))
                        ).status_code == (401 if i < 5 else 429)
        assert (await elsewhere.get("/api/ops/status", auth=OPS)).status_code == 429


async def test_metrics_need_the_token_unless_scraped_on_the_host(
        pool: AsyncConnectionPool[Conn]) -> None:
    # bound to loopback, no token: a scraper on this host is answered ...
    loopback = create_app(SETTINGS, pool=pool)
    async with client_at(loopback, "127.0.0.1") as local:
        assert (await local.get("/metrics")).status_code == 200
        # ... but not a request a reverse proxy forwards (its X-Forwarded-For)
        proxied = await local.get("/metrics", headers={"x-forwarded-for": "203.0.113.9"})
        assert proxied.status_code == 403 and "BF4PS_METRICS_TOKEN" in proxied.json()["error"]
    async with client_at(loopback, "203.0.113.9") as remote:
        assert (await remote.get("/metrics")).status_code == 403
    # bound to every address (a container), no token: refused even from loopback
    public = create_app(SETTINGS.model_copy(update={"web_host": "0.0.0.0"}), pool=pool)
    async with client_at(public, "127.0.0.1") as local:
        assert (await local.get("/metrics")).status_code == 403
        assert (await local.get("/healthz")).status_code == 200
    tokened = create_app(SETTINGS.model_copy(update={
        "web_host": "0.0.0.0", "metrics_token": SecretStr("scrape-me")}), pool=pool)
    async with client_at(tokened, "10.0.0.9") as prometheus:
        assert (await prometheus.get("/metrics")).status_code == 401
        ok = await prometheus.get("/metrics", headers={"authorization": "Bearer scrape-me"})
        assert ok.status_code == 200 and "bf4ps_ops_login_failures_total" in ok.text


async def test_the_submission_limit_counts_an_ipv6_64_as_one_client(
        pool: AsyncConnectionPool[Conn], conn: Conn) -> None:
    for persona in range(1, 6):
        await make_soldier(conn, 7000 + persona)
    app = create_app(SETTINGS, pool=pool, limits=Limits(2, 60))

    async def submit(host: str, persona: int) -> int:
        async with client_at(app, host) as c:
            answer = await c.post("/api/requests", json={"platform": "pc",
                                                         "persona_id": 7000 + persona})
            return answer.status_code

    assert [await submit("2001:db8:5:6::1", 1), await submit("2001:db8:5:6::ffff", 2)] == [
        202, 202]
    assert await submit("2001:db8:5:6:1:2:3:4", 3) == 429  # the same /64: one client
    assert await submit("2001:db8:5:7::1", 4) == 202  # the next /64: another client
    assert await submit("::ffff:198.51.100.1", 5) == 202  # IPv4-mapped: its IPv4 address
    rows = await (await conn.execute(
        "SELECT DISTINCT client_key FROM interactive_requests ORDER BY 1")).fetchall()
    assert [r["client_key"] for r in rows] == [
        "web:198.51.100.1", "web:2001:db8:5:6::/64", "web:2001:db8:5:7::/64"]


def test_the_prefix_length_is_a_setting() -> None:
    assert network("2001:db8:1:2:3:4:5:6", 64) == "2001:db8:1:2::/64"
    assert network("2001:db8:1:2:3:4:5:6", 48) == "2001:db8:1::/48"
    assert network("2001:db8:1:2:3:4:5:6", 128) == "2001:db8:1:2:3:4:5:6/128"
    assert network("192.0.2.1", 64) == "192.0.2.1"


async def test_metrics_export_what_the_settings_alerts_watch(
        pool: AsyncConnectionPool[Conn], conn: Conn) -> None:
    """The series the new alert rules read, from a real database: stored pacing and budget
    window, the audited changes' times, and (a fresh database) no collector series."""
    from bf4ps.fleet.conf import GateChange, set_budget, set_gate

    app = create_app(SETTINGS, pool=pool)
    async with client_at(app, "127.0.0.1") as local:
        fresh = (await local.get("/metrics")).text
        assert "bf4ps_collector_healthy{" not in fresh  # what BF4PSNoCollectorSeries guards
        assert "bf4ps_fleet_settings_changed_timestamp_seconds{" not in fresh
        before = time.time()
        await set_gate(conn, "eg-watch", GateChange(interval=6.5, window_requests=9,
                                                    window_seconds=60), create=True)
        await set_budget(conn, requests=1000, window_seconds=1800, shares={})
        text = (await local.get("/metrics")).text
    assert 'bf4ps_egress_min_interval_seconds{egress="eg-watch"} 6.5' in text
    assert 'bf4ps_egress_window_limit_requests{egress="eg-watch"} 9.0' in text
    assert "bf4ps_fleet_budget_window_seconds 1800.0" in text
    assert "bf4ps_fleet_budget_limit_requests 1000.0" in text
    stamps = dict(re.findall(
        r'bf4ps_fleet_settings_changed_timestamp_seconds\{setting="(\w+)"\} (\S+)', text))
    assert set(stamps) >= {"gate", "budget"}, stamps
    assert all(before - 5 <= float(v) <= time.time() + 5 for v in stamps.values()), stamps


async def _answering(base: str, proc: subprocess.Popen[str]) -> None:
    """Until the website at `base` answers /healthz (its process still running)."""
    deadline = load.deadline(60)
    async with httpx.AsyncClient(base_url=base, timeout=5) as http:
        while True:
            assert proc.poll() is None, f"the website exited: {proc.returncode}"
            try:
                if (await http.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert not deadline.expired(), f"{base} never answered"
            await asyncio.sleep(0.2)


async def test_two_web_processes_and_a_restart_share_the_lock_out(
        logins: Logins, conn: Conn, tmp_path: Path) -> None:
    """The counts live in the database (migration 0023): two `bf4ps web run` processes as the
    website's own login count one client's failures together, and a new process after both
    stopped still refuses it; a success (once the lock is over) clears them for all."""
    env = {"BF4PS_OPS_USERNAME": OPS[0], "BF4PS_OPS_PASSWORD": OPS[1],
           "BF4PS_SECRET_KEY": "two-webs", "BF4PS_WEB_HOST": "127.0.0.1",
           "BF4PS_OPS_LOGIN_FREE_FAILURES": "5", "BF4PS_OPS_LOGIN_DELAY_SECONDS": "600",
           "BF4PS_OPS_LOGIN_MAX_DELAY_SECONDS": "600"}
    ports = [free_port() for _ in range(3)]
    procs = {name: start(name, logins.urls["web"], tmp_path, "web", "run",
                         BF4PS_WEB_PORT=str(port), **env)
             for name, port in (("a", ports[0]), ("b", ports[1]))}
    bases = {name: f"http://127.0.0.1:{port}" for name, port in zip("abc", ports, strict=True)}
    try:
        for name in ("a", "b"):
            await _answering(bases[name], procs[name])
        async with httpx.AsyncClient(timeout=20) as http:
            wrong = [(await http.get(bases[name] + "/ops", auth=WRONG))
                     for name in ("a", "b", "a", "b", "a")]
            assert [w.status_code for w in wrong] == [401] * 5
            assert not any("retry-after" in w.headers for w in wrong)  # five free, between both
            sixth = await http.get(bases["b"] + "/ops", auth=WRONG)  # refused unread
            assert sixth.status_code == 429 and sixth.headers["retry-after"] == "600"
            # the other process refuses at once, even the right password
            assert (await http.get(bases["a"] + "/ops", auth=OPS)).status_code == 429
            stop(procs)
            procs["c"] = start("c", logins.urls["web"], tmp_path, "web", "run",
                               BF4PS_WEB_PORT=str(ports[2]), **env)
            await _answering(bases["c"], procs["c"])
            after = await http.get(bases["c"] + "/ops", auth=OPS)
            assert after.status_code == 429 and 0 < int(after.headers["retry-after"]) <= 600
            # the lock's end (its time moved, not waited for): the right password clears both
            await conn.execute("UPDATE ops_login_failures SET locked_until = now()")
            assert (await http.get(bases["c"] + "/ops", auth=OPS)).status_code == 200
            assert await count(conn, "SELECT count(*) FROM ops_login_failures") == 0
        log_c = (tmp_path / "c.log").read_text()
        assert re.search(r"ops login refused: client=127\.0\.0\.1 .*failures=6 ", log_c), log_c
    finally:
        stop(procs)


async def test_concurrent_right_logins_never_lock_the_operator_out(
        pool: AsyncConnectionPool[Conn]) -> None:
    """Forty requests with the right credentials at once (a console and a dashboard polling it,
    under load): none is counted as a failure, so none is refused; a wrong one after them is
    the account's first failure (401), and the right one still passes."""
    app = create_app(LIMITED, pool=pool)
    async with client_at(app, "198.51.100.20") as ops:
        answers = await asyncio.gather(*[ops.get("/api/ops/status", auth=OPS)
                                         for _ in range(40)])
        assert sorted({a.status_code for a in answers}) == [200]
        assert (await ops.get("/api/ops/status", auth=(OPS[0], "guess"))).status_code == 401
        assert (await ops.get("/api/ops/status", auth=OPS)).status_code == 200
