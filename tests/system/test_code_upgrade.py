"""A collector of the build before the database's code moved into its files (commit 25ac9a8:
its own package, its migrations through 0032, its calls admission_slot and
queue_succeed_counted) keeps collecting while this build's `bf4ps db upgrade` applies the newer
migrations and re-applies every code file under it."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

from bf4ps.db.connect import connection
from tests.conftest import create_database, drop_database
from tests.fleet import Fleet, simulator
from tests.helpers import count, seed_work, wait_for
from tests.procs import REPO, bf4ps_env

pytestmark = pytest.mark.slow

OLD = "25ac9a8"  # the last build whose functions were made by its migrations
SUCCEEDED = "SELECT count(*) FROM collection_events WHERE event_type = 'succeeded'"
FAST = {"BF4PS_EGRESS_MIN_INTERVAL_SECONDS": "0.3", "BF4PS_IDLE_POLL_SECONDS": "0.2",
        "BF4PS_HEARTBEAT_SECONDS": "1"}


def old_build(tmp_path: Path) -> Path:
    """The previous build's package, from this clone's history (a shallow clone has none)."""
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{OLD}^{{commit}}"],
                           capture_output=True, check=False)
    if known.returncode != 0:
        pytest.skip(f"this clone has no commit {OLD} (the previous build): a full clone has it")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", OLD, "src/bf4ps"],
                             capture_output=True, check=True)
    root = tmp_path / "old"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter="data")
    return root / "src"


def cli(url: str, src: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(data)) | {"PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-m", "bf4ps.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


async def test_an_older_collector_keeps_collecting_across_the_upgrade(
        pg_server_url: str, tmp_path: Path) -> None:
    old = old_build(tmp_path)
    name = f"bf4ps_up_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_server_url, name)
    try:
        made = cli(url, old, tmp_path, "db", "upgrade")  # the old build's own schema
        assert made.returncode == 0, made.stderr
        async with connection(url) as conn:
            await seed_work(conn, 200)
        with simulator(speed=20, min_interval=0.2) as sim:
            fleet = Fleet(url, sim.base_url, tmp_path, FAST | {"PYTHONPATH": str(old)})
            fleet.start("old-01", "old-egress", "127.0.0.31")
            async with connection(url) as conn:
                await wait_for(conn, SUCCEEDED + " HAVING count(*) >= 3", context=fleet.tails)
                upgraded = cli(url, REPO / "src", tmp_path, "db", "upgrade")
                assert upgraded.returncode == 0, upgraded.stderr
                assert "applied code admission.sql" in upgraded.stdout, upgraded.stdout
                assert "applied code queue.sql" in upgraded.stdout, upgraded.stdout
                after = await count(conn, SUCCEEDED)
                # the old collector goes on through the new code: claims, counts, successes
                await wait_for(conn, SUCCEEDED + " HAVING count(*) >= %(n)s", {"n": after + 5},
                               context=fleet.tails)
                assert fleet.procs["old-01"].poll() is None, fleet.tails()
                assert await count(conn, "SELECT count(*) FROM collection_events WHERE "
                                         "event_type IN ('failed', 'stale_finalize_rejected')"
                                   ) == 0
                # every request it sent was counted first
                assert await count(conn, "SELECT count(*) FROM request_ledger") >= after + 5
            assert fleet.stop_all()["old-01"] == 0, fleet.tails()
        assert "Traceback" not in fleet.log("old-01"), fleet.log("old-01")[-3000:]
    finally:
        drop_database(pg_server_url, name)
