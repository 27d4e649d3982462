"""`bf4ps recon` as a real process against the simulator with a hidden per-IP rate threshold,
and one PostgreSQL: the recommendation lands within 25 % above the true threshold, nothing was
sent faster than the hard floor allows (the simulator's own counters), and every request is in
the ledger (and in recon_samples)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bf4ps.cli.recon import render
from bf4ps.db.connect import connection
from tests.fleet import sim_stats, simulator
from tests.helpers import count, make_soldier
from tests.procs import bf4ps_env

pytestmark = pytest.mark.slow

THRESHOLD = 0.5  # the simulator's hidden per-IP minimum spacing (seconds)
FLOOR = 0.25
MARGIN = 0.02
SOURCE = "127.0.0.60"


async def test_recon_finds_the_hidden_threshold_within_the_ceiling(
        db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        for persona in (1_400_000_001, 1_400_000_002):
            await make_soldier(conn, persona)
    with simulator(speed=50, min_interval=THRESHOLD, penalty=1.0) as sim:
        env = bf4ps_env(BF4PS_DATABASE_URL=db_url, BF4PS_BATTLELOG_BASE_URL=sim.base_url,
                        BF4PS_DATA_DIR=str(tmp_path), BF4PS_EGRESS_SAFETY_MARGIN_SECONDS=str(
                            MARGIN), BF4PS_BATTLELOG_CONNECT_LEAD_SECONDS="0.1")
        args = [sys.executable, "-m", "bf4ps.cli.main", "recon", "--egress", "new-host",
                "--source-address", SOURCE, "--sample", "2", "--start-interval", "1.0",
                "--floor", str(FLOOR), "--step", "0.9", "--stage-requests", "4",
                "--safety", "1.1", "--backoff-pause", "1.5", "--json"]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        wire = sim_stats(sim)["by_ip"][SOURCE]
    recommended = report["recommended_interval_seconds"] + MARGIN  # the spacing it gives
    assert THRESHOLD <= recommended <= 1.25 * THRESHOLD, report
    assert report["verified"] and "throttle" in report["stopped_by"]
    assert report["survey"]["weapons"]["ok"] == 2 and report["survey"]["weapons"][
        "decoded_bytes_p50"] > 100_000
    # never faster than the hard floor: the simulator saw no two arrivals closer than it
    assert wire["min_spacing_seconds"] >= FLOOR, wire
    assert wire["violations"] >= 1  # the ladder did find the limit
    async with connection(db_url) as conn:
        ledger = await count(conn, "SELECT count(*) FROM request_ledger l JOIN collectors c "
                                   "USING (collector_uuid) WHERE c.collector_name = "
                                   "'recon-new-host' AND l.unsent_at IS NULL")
        stored = await count(conn, "SELECT count(*) FROM recon_samples")
        run = await count(conn, "SELECT count(*) FROM recon_runs WHERE "
                                "recommended_interval_seconds IS NOT NULL")
    assert wire["count"] == ledger == stored == report["requests"]
    assert run == 1
    table = render(report)  # what the command prints without --json
    assert "recommended pacing: BF4PS_EGRESS_MIN_INTERVAL_SECONDS=" in table
    assert "weapons" in table and "clean" in table
