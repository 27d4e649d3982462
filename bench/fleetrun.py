"""Shared by the fleet benchmarks: a scratch database, the simulator process, collector
processes (`bf4ps collector run`), and the simulator's counters."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.common import fresh_database
from bf4ps.db.connect import connection
from bf4ps.settings import child_env
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import SimProcess, spawn

REPO = Path(__file__).resolve().parent.parent


def start_sim(**knobs: Any) -> SimProcess:
    return spawn(SimConfig(port=0, **knobs))


def sim_stats(sim: SimProcess) -> dict[str, Any]:
    return dict(httpx.get(sim.url("/__sim/stats"), timeout=10).json())


async def seed(url: str, soldiers: int, resources: tuple[str, ...] = ("detailed",)) -> None:
    async with connection(url) as conn:
        await conn.execute(
            "INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, "
            "last_seen_at) SELECT 1500000000 + g, 'pc', 'B' || g, now() - interval '9 days', "
            "now() - interval '8 days' FROM generate_series(1, %(n)s) g", {"n": soldiers})
        await conn.execute(
            "INSERT INTO collection_state (soldier_id, resource) SELECT soldier_id, r "
            "FROM soldiers, unnest(ARRAY['detailed','profile','weapons','vehicles']) r")
        await conn.execute(
            "INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, "
            "reason) SELECT soldier_id, r, 'background', 'bootstrap', now(), 'bootstrap' "
            "FROM soldiers, unnest(%(r)s::text[]) r", {"r": list(resources)})


class Collectors:
    def __init__(self, db_url: str, sim_url: str, env: dict[str, str]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bf4ps-bench-"))
        self.env = child_env({"BF4PS_DATABASE_URL": db_url, "BF4PS_BATTLELOG_BASE_URL": sim_url,
                              "BF4PS_DATA_DIR": str(self.dir), "PYTHONPATH": str(REPO / "src"),
                              **env})
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, egress: str, source: str, lane: str = "background") -> int:
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 - lives with the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "bf4ps.cli.main", "collector", "run", "--name", name,
             "--egress", egress, "--source-address", source, "--lane", lane],
            env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc.pid

    def stop(self) -> list[int]:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        return [p.wait(60) for p in self.procs]


def database(name: str) -> str:
    return fresh_database(name)


def run(coro: Any) -> Any:
    return asyncio.run(coro)
