"""Schema compatibility (bf4ps.db.compat): every long-running process refuses at start, with
the reason, a schema it cannot work with; an older build (this tree without its newest
migration: a real separate copy of the package) runs a collector against the upgraded schema
where the rule allows it and is refused where a contract step says no; `bf4ps db status` lists
the connected processes with their builds and whether each is compatible."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bf4ps.db.compat import SchemaState, known_schema
from bf4ps.db.connect import Conn
from tests import load
from tests.procs import REPO, bf4ps_env

K = known_schema()


def test_the_rule() -> None:
    same = SchemaState(K, {v: v - 1 for v in range(1, K + 1)})
    assert same.problem(K) is None
    assert "run `bf4ps db upgrade` first" in str(same.problem(K + 1))
    expanded = SchemaState(K + 1, same.floors | {K + 1: K})
    assert expanded.problem(K) is None  # one version of overlap
    assert expanded.problem(K - 1) is not None  # but not two
    contracted = SchemaState(K + 1, same.floors | {K + 1: K + 1})
    assert f"migration {K + 1:04d} works with builds of schema {K + 1:04d}" in str(
        contracted.problem(K))


def start(url: str, data: Path, *args: str, path: Path = REPO / "src",
          name: str = "proc") -> subprocess.Popen[str]:
    env = bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(data), PYTHONUNBUFFERED="1",
                    BF4PS_HEARTBEAT_SECONDS="1", BF4PS_WEB_PORT="18599",
                    BF4PS_BATTLELOG_BASE_URL="http://127.0.0.1:9") | {"PYTHONPATH": str(path)}
    log = open(data / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", *args], env=env,
                            stdout=log, stderr=subprocess.STDOUT, text=True)


def finished(proc: subprocess.Popen[str], data: Path, name: str = "proc") -> tuple[int, str]:
    code = proc.wait(90)
    return code, (data / f"{name}.log").read_text()


async def newer_migration(conn: Conn, floor: int) -> None:
    """What a newer build's `bf4ps db upgrade` leaves: migration K+1 and its declaration."""
    await conn.execute("INSERT INTO schema_migrations (version, name, checksum) "
                       "VALUES (%s, 'from_a_newer_build', 'x')", [K + 1])
    await conn.execute("INSERT INTO schema_compat VALUES (%s, %s)", [K + 1, floor])


COMMANDS = {"collector": ["collector", "run", "--name", "c-01", "--egress", "e"],
            "scheduler": ["scheduler", "run"], "web": ["web", "run"]}


@pytest.mark.parametrize("process", sorted(COMMANDS))
async def test_a_schema_past_a_contract_step_is_refused_at_start(
        conn: Conn, db_url: str, tmp_path: Path, process: str) -> None:
    await newer_migration(conn, floor=K + 1)
    code, log = finished(start(db_url, tmp_path, *COMMANDS[process]), tmp_path)
    assert code == 2, log
    assert log.strip().splitlines()[-1] == (
        f"error: the database of BF4PS_DATABASE_URL: the database's schema is at {K + 1:04d}, "
        f"which bf4ps 0.1.0 (schema {K:04d}) cannot use: migration {K + 1:04d} works with "
        f"builds of schema {K + 1:04d} or later; upgrade this host's bf4ps "
        "(docs/operations.md, Upgrades)")


async def test_a_schema_behind_the_build_is_refused(conn: Conn, db_url: str,
                                                   tmp_path: Path) -> None:
    await conn.execute("DELETE FROM schema_migrations WHERE version = %s", [K])
    await conn.execute("INSERT INTO schema_migrations (version, name, checksum) "  # a baseline K
                       "VALUES (%s, 'older', 'x') ON CONFLICT DO NOTHING", [K - 1])
    code, log = finished(start(db_url, tmp_path, *COMMANDS["collector"]), tmp_path)
    assert code == 2, log
    assert f"the database's schema is at {K - 1:04d} and bf4ps 0.1.0 needs {K:04d}: run " \
        "`bf4ps db upgrade` first" in log


def older_build(tmp_path: Path) -> Path:
    """This package without its newest migration: a build of schema K-1."""
    root = tmp_path / "older"
    shutil.copytree(REPO / "src" / "bf4ps", root / "bf4ps",
                    ignore=shutil.ignore_patterns("__pycache__"))
    newest = sorted((root / "bf4ps" / "db" / "migrations").glob(f"{K:04d}_*.sql"))
    assert len(newest) == 1
    if newest[0].name.endswith("_baseline.sql"):  # nothing older in the tree: number it K-1
        newest[0].rename(newest[0].with_name(f"{K - 1:04d}_baseline.sql"))
    else:
        newest[0].unlink()
    return root


def wait_for_line(data: Path, name: str, text: str, proc: subprocess.Popen[str]) -> None:
    deadline = load.deadline(60)
    while not deadline.expired():
        log = (data / f"{name}.log").read_text()
        if text in log:
            return
        assert proc.poll() is None, log[-2000:]
        time.sleep(0.2)
    raise AssertionError(f"no {text!r}: {(data / f'{name}.log').read_text()[-2000:]}")


@pytest.mark.slow
async def test_an_older_build_runs_within_the_overlap_and_db_status_lists_it(
        conn: Conn, db_url: str, tmp_path: Path) -> None:
    old = older_build(tmp_path)
    older = start(db_url, tmp_path, *COMMANDS["collector"], path=old, name="older")
    current = start(db_url, tmp_path, "collector", "run", "--name", "c-02", "--egress", "e2",
                    name="current")
    try:
        wait_for_line(tmp_path, "older", "started: lane background", older)
        wait_for_line(tmp_path, "current", "started: lane background", current)
        status = subprocess.run(
            [sys.executable, "-m", "bf4ps.cli.main", "db", "status"], capture_output=True,
            text=True, timeout=60,
            env=bf4ps_env(BF4PS_DATABASE_URL=db_url, BF4PS_DATA_DIR=str(tmp_path)))
        assert status.returncode == 0, status.stderr
        lines = status.stdout.splitlines()
        assert not any(" db status " in ln for ln in lines), status.stdout  # itself
        assert any(f"(schema {K - 1:04d}) collector run" in ln and ln.endswith("  compatible")
                   for ln in lines), status.stdout
        assert any(f"(schema {K:04d}) collector run" in ln and ln.endswith("  compatible")
                   for ln in lines), status.stdout
    finally:
        for proc in (older, current):
            proc.terminate()
            proc.wait(60)
    # a newer step that contracts what the older build used: the older build is refused
    await newer_migration(conn, floor=K + 1)
    code, log = finished(start(db_url, tmp_path, *COMMANDS["collector"], path=old,
                               name="older"), tmp_path, "older")
    assert code == 2 and f"which bf4ps 0.1.0 (schema {K - 1:04d}) cannot use" in log, log
