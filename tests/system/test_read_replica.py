"""The website with a read replica (BF4PS_READ_DATABASE_URL): a real streaming replica made with
`pg_basebackup -R` from a private primary, both Debian's PostgreSQL (tests/replicapg.py), and the
website under `bf4ps web run`. The public reads follow the replica; a replica whose replay is
paused (it lags past BF4PS_READ_MAX_LAG_SECONDS) and a stopped one send the reads to the primary;
nothing answers 5xx; a request's status is the primary's throughout."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from bf4ps.demo.run import free_port
from tests import load
from tests.procs import bf4ps_env, web_run
from tests.replicapg import Pair, primary_and_replica
from tests.tlspg import server_binaries

pytestmark = [
    pytest.mark.server_features,
    pytest.mark.skipif(server_binaries() is None, reason="no Debian PostgreSQL server "
                       "binaries (package postgresql; CI installs it)"),
    pytest.mark.xdist_group("read_replica"),  # one primary, replica and website for the file
]

MAX_LAG = 4.0  # BF4PS_READ_MAX_LAG_SECONDS of the website under test
PERSONA = 4242
SOLDIER = f"/api/soldiers/pc/{PERSONA}"
PUBLIC = ("/", "/?q=Replica", "/leaderboards", "/leaderboards/week", f"/soldiers/pc/{PERSONA}",
          SOLDIER, f"{SOLDIER}/weapons", f"{SOLDIER}/history", f"{SOLDIER}/progress",
          "/api/search?q=Replica", "/api/leaderboards/week", "/healthz")


@dataclass
class Site:
    pair: Pair
    base: str
    log: Path

    def primary(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.pair.primary.url("bf4ps"), autocommit=True)

    def replica(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.pair.replica.url("bf4ps"), autocommit=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("replica")
    with primary_and_replica() as pair:
        with psycopg.connect(pair.primary.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bf4ps")
        url = pair.primary.url("bf4ps")
        env = bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(tmp))
        done = subprocess.run([sys.executable, "-m", "bf4ps.cli.main", "db", "upgrade"],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO soldiers (persona_id, platform, current_name) "
                         "VALUES (%s, 'pc', 'ReplicaOne')", [PERSONA])
        port = free_port()
        env |= {"BF4PS_READ_DATABASE_URL": pair.replica.url("bf4ps"),
                "BF4PS_READ_MAX_LAG_SECONDS": str(MAX_LAG), "BF4PS_WEB_HOST": "127.0.0.1",
                "BF4PS_WEB_PORT": str(port), "PYTHONUNBUFFERED": "1"}
        log = tmp / "web.log"
        with web_run(env, log):
            yield Site(pair, f"http://127.0.0.1:{port}", log)


async def metric(c: httpx.AsyncClient, name: str, labels: str = "") -> float:
    text = (await c.get("/metrics")).text
    found = re.search(rf"^{name}{re.escape(labels)} (\S+)$", text, re.MULTILINE)
    assert found, f"no {name}{labels} in /metrics"
    return float(found.group(1))


async def until(what: str, check: object, site: Site, seconds: float = 60) -> None:
    """Poll `check` (an async callable returning a truth) until it holds, within a deadline."""
    end = load.deadline(seconds)
    while not end.expired():
        if await check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what}: not within {seconds} s (scaled); website log: "
                         f"{site.log.read_text()[-3000:]}")


async def soldier_name(c: httpx.AsyncClient) -> tuple[str, str]:
    answer = await c.get(SOLDIER)
    assert answer.status_code == 200, answer.text
    return answer.json()["soldier"]["name"], answer.headers["x-bf4ps-read-source"]


def rename(site: Site, name: str) -> None:
    with site.primary() as conn:
        conn.execute("UPDATE soldiers SET current_name = %s WHERE persona_id = %s",
                     [name, PERSONA])


async def replica_in_use(site: Site, c: httpx.AsyncClient) -> None:
    async def up() -> bool:
        return await metric(c, "bf4ps_read_replica_up") == 1.0
    await until("the replica in use", up, site)


async def every_page_answers(c: httpx.AsyncClient) -> dict[str, str]:
    """Every public page and API: 200, and which server answered each."""
    sources = {}
    for path in PUBLIC:
        answer = await c.get(path)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
        sources[path] = answer.headers.get("x-bf4ps-read-source", "")
    return sources


async def test_public_reads_follow_the_replica(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.base, timeout=30) as c:
        await replica_in_use(site, c)
        with site.replica() as rep:
            def reads() -> int:
                row = rep.execute("SELECT xact_commit FROM pg_stat_database "
                                  "WHERE datname = 'bf4ps'").fetchone()
                assert row is not None
                return int(str(row[0]))
            before, served = reads(), await metric(c, "bf4ps_web_reads_total",
                                                   '{source="replica"}')
            rename(site, "ReplicaFollowed")

            async def followed() -> bool:
                return await soldier_name(c) == ("ReplicaFollowed", "replica")
            await until("the replica's reads show the primary's change", followed, site)

            async def pages_from_replica() -> bool:  # a busy machine may lag a moment
                sources = await every_page_answers(c)
                return sources[SOLDIER] == sources["/leaderboards"] == "replica"
            await until("the public pages read on the replica", pages_from_replica, site)
            time.sleep(1.0)  # the replica's statistics reach pg_stat_database in ≤ 1 s
            rep.execute("SELECT pg_stat_clear_snapshot()")
            assert reads() > before  # the website's reads ran on the replica's server
        assert await metric(c, "bf4ps_web_reads_total", '{source="replica"}') > served
        lag = await metric(c, "bf4ps_read_replica_lag_seconds")
        assert 0 <= lag < 60, lag  # a figure while the replica is up (NaN only when down)


async def test_a_lagging_replica_sends_reads_to_the_primary(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.base, timeout=30) as c:
        await replica_in_use(site, c)
        with site.replica() as rep:
            rep.execute("SELECT pg_wal_replay_pause()")
            try:
                rename(site, "PrimaryWhileLagging")

                async def from_primary() -> bool:
                    return await soldier_name(c) == ("PrimaryWhileLagging", "primary")
                await until("the reads on the primary while the replica lags", from_primary,
                            site)
                assert await metric(c, "bf4ps_read_replica_up") == 0.0
                assert await metric(c, "bf4ps_read_replica_lag_seconds") > MAX_LAG
                sources = await every_page_answers(c)
                assert set(sources.values()) <= {"primary", ""}, sources
                # the replica still has the old name: it did lag
                row = rep.execute("SELECT current_name FROM soldiers WHERE persona_id = %s",
                                  [PERSONA]).fetchone()
                assert row is not None and row[0] != "PrimaryWhileLagging", row
                # a request written now is read back at once (the primary's, never stale)
                made = await c.post("/api/requests", json={"platform": "pc",
                                                           "persona_id": PERSONA})
                assert made.status_code == 202, made.text
                status = await c.get(made.headers["location"])
                assert status.status_code == 200, status.text
                assert status.headers["x-bf4ps-read-source"] == "primary"
            finally:
                rep.execute("SELECT pg_wal_replay_resume()")
        await replica_in_use(site, c)

        async def caught_up() -> bool:
            return await soldier_name(c) == ("PrimaryWhileLagging", "replica")
        await until("the replica caught up and in use again", caught_up, site)


async def test_a_stopped_replica_sends_reads_to_the_primary(site: Site) -> None:
    async with httpx.AsyncClient(base_url=site.base, timeout=30) as c:
        await replica_in_use(site, c)
        assert (await soldier_name(c))[1] == "replica"  # its pooled connections just used
        site.pair.stop(site.pair.replica, "immediate")
        try:
            statuses: list[int] = []

            async def on_primary() -> bool:
                answers = [await c.get(path) for path in PUBLIC]
                statuses.extend(a.status_code for a in answers)
                return all(a.headers.get("x-bf4ps-read-source", "primary") == "primary"
                           for a in answers)
            await until("every read on the primary", on_primary, site)
            assert statuses and set(statuses) == {200}, sorted(set(statuses))
            assert await metric(c, "bf4ps_read_replica_up") == 0.0
            assert await metric(c, "bf4ps_read_replica_lag_seconds") != \
                await metric(c, "bf4ps_read_replica_lag_seconds")  # NaN: down
            await every_page_answers(c)
        finally:
            site.pair.start(site.pair.replica)
        await replica_in_use(site, c)

        async def back() -> bool:
            return (await soldier_name(c))[1] == "replica"
        await until("reads back on the restarted replica", back, site)
