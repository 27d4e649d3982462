"""The command-line contract against a real database: db, status, config, events, collector
registry actions, retention; the entry point's one-line errors for bad settings and for a
database that is unreachable or has no schema."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf4ps.cli.main import cli
from bf4ps.db.connect import connection
from bf4ps.settings import Settings
from bf4ps.views.events import Event
from bf4ps.views.fleet_status import StatusReport
from tests.conftest import create_database, drop_database
from tests.helpers import GATE_ENSURE, add_job, make_collector, make_soldier
from tests.procs import bf4ps_env


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


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    """A migrated database with one soldier (a queued background job), collector mak-01 and
    an old request-ledger row. Sync on purpose: each command runs its own event loop, as from
    a shell."""
    asyncio.run(setup(db_url, tmp_path))
    return Settings(database_url=db_url, data_dir=tmp_path)


def test_db_upgrade_and_status(settings: Settings) -> None:
    assert "schema is up to date" in run(settings, "db", "upgrade")
    assert "applied  0031_baseline" in run(settings, "db", "status")


def test_status_json_is_the_read_side_report(settings: Settings) -> None:
    status = json.loads(run(settings, "status", "--json"))
    assert status["soldiers"] == 1
    assert status["queue_depth"]["by_lane"]["background"]["ready"] == 1
    # an idle lane shows its zeros (it used to disappear from the report)
    assert status["queue_depth"]["by_lane"]["interactive"] == {
        "ready": 0, "waiting_retry": 0, "claimed": 0, "running": 0}
    assert status["coverage"]["detailed"]["never_attempted"] == 1
    assert [c["name"] for c in status["collectors"]] == ["mak-01"]
    assert status["budget"]["fleet"] is None
    assert StatusReport.model_validate(status).soldiers == 1  # the typed model, round trip


def test_status_text(settings: Settings) -> None:
    lines = run(settings, "status").splitlines()
    assert "queue depth (actionable work):" in lines
    assert next(x for x in lines if x.startswith("  interactive")).split()[:3] == [
        "interactive", "ready", "0"]
    assert any(x.strip().startswith("mak-01") for x in lines)


def test_config_set_show_unset(settings: Settings) -> None:
    assert "working_set_background = 500" in run(settings, "config", "set",
                                                 "working_set_background", "500")
    shown = json.loads(run(settings, "config", "show", "--json"))
    assert shown["working_set_background"] == 500
    run(settings, "config", "unset", "working_set_background")
    assert json.loads(run(settings, "config", "show", "--json"))["working_set_background"] == 200


def test_config_refuses_values_the_policy_refuses(settings: Settings) -> None:
    bad = CliRunner().invoke(cli, ["config", "set", "share_active", "7"], obj=settings)
    assert bad.exit_code != 0 and "share_active" in bad.output
    negative = CliRunner().invoke(cli, ["config", "set", "share_active", "-5"], obj=settings)
    # a negative number is the value, judged by the policy (it was "No such option '-5'")
    assert negative.exit_code == 1 and "No such option" not in negative.output
    assert "share_active" in negative.output and "greater than or equal" in negative.output
    bad = CliRunner().invoke(cli, ["config", "set", "event_retention_days", "0.5"], obj=settings)
    assert bad.exit_code != 0 and "event_retention_days" in bad.output


def test_collector_drain_list_resume(settings: Settings) -> None:
    assert "mak-01: drain recorded" in run(settings, "collector", "drain", "mak-01")
    assert "drained" in run(settings, "collector", "list")
    listed = json.loads(run(settings, "collector", "list", "--json"))
    assert [(c["collector_name"], c["drained"]) for c in listed] == [("mak-01", True)]
    run(settings, "collector", "resume", "mak-01")
    assert json.loads(run(settings, "collector", "list", "--json"))[0]["drained"] is False
    text = run(settings, "events", "--collector", "mak-01", "--since", "1h")
    assert "collector drained" in text and "collector resumed" in text
    missing = CliRunner().invoke(cli, ["collector", "drain", "nobody"], obj=settings)
    assert missing.exit_code != 0 and "no current collector named" in missing.output


def test_events_by_persona_and_type(settings: Settings) -> None:
    events = json.loads(run(settings, "events", "--persona", "4242", "--json"))
    assert [e["event_type"] for e in events] == ["created"]
    assert events[0]["soldier_name"] == "Soldier4242"
    assert Event.model_validate(events[0]).persona_id == 4242  # the API's Event, as JSON
    assert [e["event_type"] for e in json.loads(run(
        settings, "events", "--type", "created", "--json"))] == ["created"]
    typo = CliRunner().invoke(cli, ["events", "--type", "succeded"], obj=settings)
    assert typo.exit_code == 2 and "'succeded' is not one of" in typo.output, typo.output


def test_events_by_name(settings: Settings) -> None:
    """By the soldier's name, any case, and its name beside persona and platform; the name
    rule is the API's and the website's."""
    named = run(settings, "events", "--name", "soldier4242")
    assert "created detailed of Soldier4242 (4242/pc)" in named, named
    assert run(settings, "events", "--name", "Nobody").strip() == "no events match (name Nobody)"
    assert run(settings, "events", "--name", "Some Gamertag").startswith("no events match")
    bad = CliRunner().invoke(cli, ["events", "--name", "bad;name"], obj=settings)
    assert bad.exit_code == 2 and "soldier names use letters" in bad.output, bad.output


def test_retention_keeps_what_it_should(settings: Settings) -> None:
    assert "0 rows deleted; 0 request-ledger rows deleted" in run(settings, "retention", "run")
    assert "1 request-ledger rows deleted" in run(settings, "retention", "run",
                                                  "--ledger-days", "1")
    for flag in ("--ledger-days", "--days"):  # --days 0 used to delete the whole event log
        for value in ("0.5", "0", "-1"):
            refused = CliRunner().invoke(cli, ["retention", "run", flag, value], obj=settings)
            assert refused.exit_code == 2 and flag in refused.output, refused.output
    assert json.loads(run(settings, "events", "--json"))  # the log is still there


# ---------------------------------------------------------------- errors at the entry point


def bf4ps(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The real entry point (main(): settings from the environment), as from a shell."""
    full = bf4ps_env(BF4PS_DATA_DIR=str(tmp_path), **env)
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
    # a malformed URL was a traceback from psycopg at the first connection, password included
    url = bf4ps("status", tmp_path=tmp_path, BF4PS_DATABASE_URL="mysql://u:pw-s3cret@h/db")
    assert url.returncode == 2 and "Traceback" not in url.stderr, url.stderr
    assert "BF4PS_DATABASE_URL (database_url): Value error, not a PostgreSQL connection " \
           "string" in url.stderr and "pw-s3cret" not in url.stderr
    (tmp_path / "secret.toml").write_text("ops_password = 123456789\n")
    secret = bf4ps("status", tmp_path=tmp_path, BF4PS_CONFIG_FILE=str(tmp_path / "secret.toml"))
    assert secret.returncode == 2 and "BF4PS_OPS_PASSWORD (ops_password)" in secret.stderr
    assert "123456789" not in secret.stderr and "(got (hidden))" in secret.stderr


def test_a_port_in_use_ends_a_server_command_with_one_line(db_url: str, tmp_path: Path) -> None:
    """The address is bound before the banner and the app's start-up: a port in use is one
    line naming it and exit 1 (uvicorn's own handling printed the URL first, then exit 3)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for args in (("web", "run", "--port", port), ("simulate", "battlelog", "--port", port)):
            out = bf4ps(*args, tmp_path=tmp_path, BF4PS_DATABASE_URL=db_url)
            assert out.returncode == 1, (args, out.stdout, out.stderr)
            assert out.stdout == "", out.stdout  # no banner announcing a URL that never served
            assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in (
                out.stderr), out.stderr


def test_status_says_when_an_egress_is_cooling_down(db_url: str, tmp_path: Path) -> None:
    """`throttled xN` is a streak that outlives the cool-down; the cool-down itself is shown
    only while it lasts."""
    from bf4ps.gates import throttle

    async def throttle_once(cooldown: float) -> None:
        async with connection(db_url) as conn:
            me = await make_collector(conn, tmp_path, "mak-02", egress="eg-2")
            await conn.execute(GATE_ENSURE, {"egress_key": "eg-2", "min_interval": 5.0,
                                                  "window_requests": None,
                                                  "window_seconds": None})
            await throttle.throttled(conn, me, cooldown, cooldown,
                                     throttle.Cause(throttle.hard_signal(403), None, 403))

    settings = Settings(database_url=db_url, data_dir=tmp_path)
    asyncio.run(throttle_once(600))
    line = next(x for x in run(settings, "status").splitlines() if "eg-2" in x)
    assert "throttled x1" in line and "cooling down until" in line and "UTC" in line
    gate = json.loads(run(settings, "status", "--json"))["budget"]["egresses"][0]
    assert gate["cooling_down"] is True and gate["throttle_streak"] == 1

    async def cooled() -> None:
        async with connection(db_url) as conn:
            await conn.execute("UPDATE egress_gates SET cooldown_until = now() - interval '1 s'")

    asyncio.run(cooled())
    line = next(x for x in run(settings, "status").splitlines() if "eg-2" in x)
    assert "throttled x1" in line and "cooling down" not in line
