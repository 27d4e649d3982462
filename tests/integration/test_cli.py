"""The command-line contract against a real database: db, status, config, events, collector
registry actions, retention; the entry point's one-line errors for bad settings and for a
database that is unreachable or has no schema."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from click.testing import CliRunner

from bf4ps.cli.main import cli
from bf4ps.db.connect import connection
from bf4ps.settings import Settings
from tests.conftest import REPO, create_database, drop_database
from tests.helpers import add_job, make_collector, make_soldier


def run(settings: Settings, *args: str) -> str:
    result = CliRunner().invoke(cli, list(args), obj=settings, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


async def setup(db_url: str, tmp_path: Path) -> None:
    async with connection(db_url) as conn:
        sid = await make_soldier(conn, 4242)
        await add_job(conn, sid)
        await make_collector(conn, tmp_path, "mak-01")
        await conn.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                           "VALUES (now() - interval '3 days', 'eg-1', 'bootstrap')")


def test_status_config_events_and_registry(db_url: str, tmp_path: Path) -> None:
    """Sync on purpose: each command runs its own event loop, as from a shell."""
    settings = Settings(database_url=db_url, data_dir=tmp_path)
    asyncio.run(setup(db_url, tmp_path))
    assert "schema is up to date" in run(settings, "db", "upgrade")
    assert "applied  0001_initial" in run(settings, "db", "status")
    status = json.loads(run(settings, "status", "--json"))
    assert status["soldiers"] == 1
    assert status["queue_depth"]["by_lane"]["background"]["ready"] == 1
    assert status["coverage"]["detailed"]["never_attempted"] == 1
    assert status["collectors"][0]["name"] == "mak-01"
    assert "budget" in status and status["budget"]["fleet"] is None
    assert "queue depth (actionable work)" in run(settings, "status")

    assert "working_set_background = 500" in run(settings, "config", "set",
                                                 "working_set_background", "500")
    shown = json.loads(run(settings, "config", "show", "--json"))
    assert shown["working_set_background"] == 500
    bad = CliRunner().invoke(cli, ["config", "set", "share_active", "7"], obj=settings)
    assert bad.exit_code != 0 and "share_active" in bad.output
    run(settings, "config", "unset", "working_set_background")
    assert json.loads(run(settings, "config", "show", "--json"))["working_set_background"] == 200

    assert "mak-01: drain recorded" in run(settings, "collector", "drain", "mak-01")
    assert "drained" in run(settings, "collector", "list")
    listed = json.loads(run(settings, "collector", "list", "--json"))
    assert listed[0]["drained"] is True
    run(settings, "collector", "resume", "mak-01")
    events = json.loads(run(settings, "events", "--persona", "4242", "--json"))
    assert [e["event_type"] for e in events] == ["created"]
    text = run(settings, "events", "--collector", "mak-01", "--since", "1h")
    assert "collector drained" in text and "collector resumed" in text
    assert [e["event_type"] for e in json.loads(run(
        settings, "events", "--type", "created", "--json"))] == ["created"]
    typo = CliRunner().invoke(cli, ["events", "--type", "succeded"], obj=settings)
    assert typo.exit_code == 2 and "'succeded' is not one of" in typo.output, typo.output
    missing = CliRunner().invoke(cli, ["collector", "drain", "nobody"], obj=settings)
    assert missing.exit_code != 0 and "no current collector named" in missing.output
    assert "0 rows deleted; 0 request-ledger rows deleted" in run(settings, "retention", "run")
    assert "1 request-ledger rows deleted" in run(settings, "retention", "run",
                                                  "--ledger-days", "1")
    refused = CliRunner().invoke(cli, ["retention", "run", "--ledger-days", "0.5"], obj=settings)
    assert refused.exit_code != 0 and "--ledger-days" in refused.output


# ---------------------------------------------------------------- errors at the entry point


def bf4ps(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The real entry point (main(): settings from the environment), as from a shell."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("BF4PS_")}
    full.update({"PYTHONPATH": str(REPO / "src"), "BF4PS_DATA_DIR": str(tmp_path), **env})
    return subprocess.run([sys.executable, "-m", "bf4ps.cli.main", *args], env=full,
                          capture_output=True, text=True, timeout=120)


def test_an_unmigrated_database_gets_a_message_not_a_traceback(pg_server_url: str,
                                                                tmp_path: Path) -> None:
    name = f"bf4ps_empty_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_server_url, name)
    try:
        for args in (("status",), ("collector", "list"), ("events",), ("config", "show")):
            out = bf4ps(*args, tmp_path=tmp_path, BF4PS_DATABASE_URL=url)
            assert out.returncode == 1, (args, out.stderr)
            assert "Traceback" not in out.stderr, out.stderr
            assert "BF4PS_DATABASE_URL has no BF4PS schema" in out.stderr, out.stderr
            assert "run `bf4ps db upgrade`" in out.stderr
        assert bf4ps("db", "upgrade", tmp_path=tmp_path, BF4PS_DATABASE_URL=url).returncode == 0
        assert bf4ps("status", tmp_path=tmp_path, BF4PS_DATABASE_URL=url).returncode == 0
    finally:
        drop_database(pg_server_url, name)


def test_bad_settings_and_an_unreachable_database_get_one_line_errors(tmp_path: Path) -> None:
    down = bf4ps("status", tmp_path=tmp_path,
                 BF4PS_DATABASE_URL="postgresql://nobody@127.0.0.1:1/none?connect_timeout=3")
    assert down.returncode == 1 and "Traceback" not in down.stderr, down.stderr
    assert down.stderr.startswith("error: cannot use the database of BF4PS_DATABASE_URL: ")
    port = bf4ps("status", tmp_path=tmp_path, BF4PS_WEB_PORT="abc")
    assert port.returncode == 2 and "Traceback" not in port.stderr, port.stderr
    assert "BF4PS_WEB_PORT (web_port): Input should be a valid integer" in port.stderr
    missing = bf4ps("status", tmp_path=tmp_path, BF4PS_CONFIG_FILE=str(tmp_path / "no.toml"))
    assert missing.returncode == 2 and "no.toml: no such file" in missing.stderr
    (tmp_path / "bad.toml").write_text("web_port = \n")
    broken = bf4ps("status", tmp_path=tmp_path, BF4PS_CONFIG_FILE=str(tmp_path / "bad.toml"))
    assert broken.returncode == 2 and "Traceback" not in broken.stderr, broken.stderr
    assert "bad.toml: Invalid value (at line 1" in broken.stderr
