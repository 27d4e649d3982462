"""The event search's egress and until filters (the seed's example queries: 403s by egress,
events within a UTC window), the same on the CLI, the JSON API and the console."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import psycopg
import pytest
from click.testing import CliRunner
from psycopg_pool import AsyncConnectionPool

from bf4ps.cli.main import cli
from bf4ps.db.connect import Conn, open_pool
from bf4ps.settings import Settings
from tests.db.test_web_api import OPS, SETTINGS, client_for

# (event_type, egress, age): a throttle on each egress, an old one on eg-a, a success on eg-b
ROWS = [("egress_throttled", "eg-a", timedelta(minutes=5)),
        ("egress_throttled", "eg-b", timedelta(minutes=6)),
        ("egress_throttled", "eg-a", timedelta(hours=3)),
        ("succeeded", "eg-b", timedelta(seconds=30))]


@pytest.fixture
def seeded(db_url: str) -> datetime:
    """The events, aged from now (returned). Sync: the CLI's commands run their own event
    loop, as from a shell."""
    now = datetime.now(UTC).replace(microsecond=0)
    with psycopg.connect(db_url) as c:
        for event_type, egress, age in ROWS:
            c.execute("INSERT INTO collection_events (event_type, egress_key, occurred_at, "
                      "http_status) VALUES (%s, %s, %s, 429)", [event_type, egress, now - age])
    return now


@pytest.fixture
async def web(db_url: str, seeded: datetime) -> AsyncIterator[httpx.AsyncClient]:
    pool: AsyncConnectionPool[Conn] = await open_pool(db_url, max_size=2)
    async with client_for(create_app_for(pool)) as c:
        yield c
    await pool.close()


def create_app_for(pool: AsyncConnectionPool[Conn]) -> object:
    from bf4ps.web.app import create_app

    return create_app(SETTINGS, pool=pool)


def cli_events(db_url: str, *args: str) -> list[dict[str, object]]:
    done = CliRunner().invoke(cli, ["events", "--json", *args],
                              obj=Settings(database_url=db_url), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    rows: list[dict[str, object]] = json.loads(done.output)
    return rows


def test_cli_filters_by_egress_and_until(db_url: str, seeded: datetime) -> None:
    now = seeded
    throttles_a = cli_events(db_url, "--egress", "eg-a", "--type", "egress_throttled",
                             "--since", "1d")
    assert [(e["egress_key"], e["event_type"]) for e in throttles_a] == [
        ("eg-a", "egress_throttled")] * 2
    # a UTC window: since 4 h ago until 2 h ago holds only the old throttle
    window = cli_events(db_url, "--since", (now - timedelta(hours=4)).isoformat(),
                        "--until", (now - timedelta(hours=2)).isoformat())
    assert [(e["egress_key"], e["occurred_at"][:19]) for e in window] == [  # type: ignore[index]
        ("eg-a", (now - timedelta(hours=3)).isoformat()[:19])]
    # an age as until: everything older than 5 minutes, on eg-b: its throttle, not its success
    older = cli_events(db_url, "--egress", "eg-b", "--until", "5m")
    assert [e["event_type"] for e in older] == ["egress_throttled"]
    none = CliRunner().invoke(cli, ["events", "--egress", "nowhere"],
                              obj=Settings(database_url=db_url))
    assert none.exit_code == 0 and "no events match (egress nowhere" in none.output


async def test_api_and_console_filter_by_egress_and_until(web: httpx.AsyncClient,
                                                           seeded: datetime) -> None:
    api = await web.get("/api/ops/events", auth=OPS, params={
        "egress": "eg-b", "window": "24h"})
    assert api.status_code == 200, api.text
    assert sorted(e["event_type"] for e in api.json()["events"]) == [
        "egress_throttled", "succeeded"]
    until = (seeded - timedelta(minutes=5)).isoformat()
    api = await web.get("/api/ops/events", auth=OPS, params={"egress": "eg-b", "until": until})
    assert [e["event_type"] for e in api.json()["events"]] == ["egress_throttled"]
    page = await web.get("/ops/events", auth=OPS, params={"egress": "eg-a", "window": "24h"})
    assert page.status_code == 200
    table = page.text.split('id="events"')[1]
    assert table.count("<td>eg-a</td>") == 2 and "<td>eg-b</td>" not in table
    assert 'name="egress" value="eg-a"' in page.text and 'name="until"' in page.text
    bad = await web.get("/api/ops/events", auth=OPS, params={"egress": "x" * 101})
    assert bad.status_code == 422 and bad.json()["field"] == "egress"
