"""TLS to PostgreSQL with `sslmode=verify-full` and a CA file, against a server started with
ssl=on and a self-signed CA (tests/tlspg.py): migrations, the CLI, a scheduler, a collector and
the website connect; a wrong CA, a host name the certificate does not name, and a connection
without TLS are refused with a clear error."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from bf4ps.demo.run import free_port
from tests import load
from tests.procs import bf4ps_env
from tests.tlspg import TlsServer, server_binaries, tls_server

pytestmark = [
    pytest.mark.server_features,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl missing"),
    pytest.mark.skipif(server_binaries() is None, reason="no PostgreSQL built with SSL (the "
                       "embedded one is not): Debian's postgresql package; CI installs it")]


@pytest.fixture(scope="module")
def tls() -> Iterator[TlsServer]:
    with tls_server() as server:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bf4ps")
        yield server


def bf4ps(url: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bf4ps.cli.main", *args],
                          env=bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(data_dir)),
                          capture_output=True, text=True, timeout=120)


def test_verify_full_with_the_servers_ca(tls: TlsServer, tmp_path: Path) -> None:
    url = tls.url(dbname="bf4ps")
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT ssl, version FROM pg_stat_ssl "
                           "WHERE pid = pg_backend_pid()").fetchone()
    assert row is not None and row[0] is True and row[1].startswith("TLS"), row
    upgraded = bf4ps(url, tmp_path, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    status = bf4ps(url, tmp_path, "db", "status")
    assert status.returncode == 0 and "schema is up to date" in status.stdout, status.stderr


@pytest.mark.parametrize(("how", "expected"), [
    ("wrong CA", "certificate verify failed"),
    ("wrong host", 'does not match host name "127.0.0.1"'),
    ("no TLS", "pg_hba.conf rejects connection"),
])
def test_refused_with_a_clear_error(tls: TlsServer, tmp_path: Path, how: str,
                                    expected: str) -> None:
    url = {"wrong CA": tls.url(dbname="bf4ps", ca=tls.other_ca),
           "wrong host": tls.url(dbname="bf4ps", host="127.0.0.1"),
           "no TLS": tls.url(dbname="bf4ps", host="127.0.0.1", sslmode="disable")}[how]
    done = bf4ps(url, tmp_path, "db", "status")
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("error: cannot use the database of BF4PS_DATABASE_URL: ")
    assert expected in done.stderr, done.stderr
    if how != "no TLS":  # a certificate problem says where to look
        assert "sslrootcert" in done.stderr, done.stderr


def _wait_for_line(log: Path, text: str, proc: subprocess.Popen[str],
                   timeout: float = 60) -> None:
    deadline = load.deadline(timeout)
    while not deadline.expired():
        if log.exists() and text in log.read_text():
            return
        assert proc.poll() is None, log.read_text()[-2000:]
        time.sleep(0.2)
    raise AssertionError(f"no {text!r} in {log.name}: {log.read_text()[-2000:]}")



@pytest.mark.slow
async def test_scheduler_collector_and_website_run_over_tls(tls: TlsServer,
                                                            tmp_path: Path) -> None:
    url = tls.url(dbname="bf4ps")
    assert bf4ps(url, tmp_path, "db", "upgrade").returncode == 0
    port = free_port()
    env = bf4ps_env(BF4PS_DATABASE_URL=url, BF4PS_DATA_DIR=str(tmp_path), PYTHONUNBUFFERED="1",
                    BF4PS_BATTLELOG_BASE_URL="http://127.0.0.1:9", BF4PS_WEB_HOST="127.0.0.1",
                    BF4PS_WEB_PORT=str(port))
    runs = {"scheduler": (["scheduler", "run"], "is active"),
            "collector": (["collector", "run", "--name", "tls-01", "--egress", "tls-egress"],
                          "started: lane background"),
            "web": (["web", "run"], "Application startup complete")}
    procs = {}
    for name, (args, _) in runs.items():
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        procs[name] = subprocess.Popen([sys.executable, "-m", "bf4ps.cli.main", *args],
                                       env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        for name, (_, line) in runs.items():
            await asyncio.to_thread(_wait_for_line, tmp_path / f"{name}.log", line, procs[name])
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        assert health.json() == {"status": "ok", "database": "ok"}
        with psycopg.connect(tls.url()) as conn:
            ssl = conn.execute("SELECT count(*) FILTER (WHERE s.ssl), count(*) "
                               "FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
                               "WHERE a.datname = 'bf4ps'").fetchone()
        assert ssl is not None and ssl[0] == ssl[1] >= 3, ssl  # every session is TLS
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(60)
