"""`bf4ps flags list|clear` against real PostgreSQL: the open flags of an impossible interval,
an operator's clear (audited, kept on the flag), a second clear refused, and --all."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from bf4ps.cli.main import cli
from bf4ps.db.connect import connection
from bf4ps.policy import Policy
from bf4ps.settings import Settings
from bf4ps.stats import progress_check
from tests.db.test_progress import HOUR, play
from tests.helpers import count, make_soldier


async def seed(db_url: str) -> None:
    async with connection(db_url) as conn:
        now = datetime.now(UTC)
        sid = await make_soldier(conn, 7001, name="AimbotAl")
        await play(conn, sid, [(1.0, 400), (30.0, 400)], start=now - 3 * HOUR)
        await progress_check.check_pending(conn, Policy(), now)


async def cleared_events(db_url: str) -> int:
    async with connection(db_url) as conn:
        return await count(conn, "SELECT count(*) FROM collection_events "
                                 "WHERE event_type = 'progress_flag_cleared'")


def test_flags_list_and_clear(db_url: str, tmp_path: Path) -> None:
    asyncio.run(seed(db_url))
    settings = Settings(database_url=db_url, data_dir=tmp_path)  # type: ignore[arg-type]
    runner = CliRunner()
    listed = runner.invoke(cli, ["flags", "list", "--json"], obj=settings)
    assert listed.exit_code == 0, listed.output
    found = json.loads(listed.output)
    assert found["open"] == 2 and {f["name"] for f in found["flags"]} == {"AimbotAl"}
    text = runner.invoke(cli, ["flags", "list"], obj=settings).output
    assert "kills per minute" in text and "2 open" in text
    for f in found["flags"]:
        done = runner.invoke(cli, ["flags", "clear", str(f["flag_id"]), "--note", "reviewed",
                                   "--by", "alice"], obj=settings)
        assert done.exit_code == 0 and "cleared by alice" in done.output, done.output
    again = runner.invoke(cli, ["flags", "clear", str(found["flags"][0]["flag_id"])],
                          obj=settings)
    assert again.exit_code == 3 and "no open flag" in again.output
    assert runner.invoke(cli, ["flags", "list"], obj=settings).output.strip() == "no open flags"
    every = json.loads(runner.invoke(cli, ["flags", "list", "--all", "--json"],
                                     obj=settings).output)
    assert {(f["cleared_by"], f["clear_note"]) for f in every["flags"]} == {("alice",
                                                                              "reviewed")}
    assert asyncio.run(cleared_events(db_url)) == 2
