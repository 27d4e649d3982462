"""Rank as players know it (stats/rank_titles.py, views/career.py) on the real 2013 overview
capture: BF4's title for rank 12 and 40 % through it (242,104 points; rank 12 from 229,000,
rank 13 at 262,000); one rank per page, the newest answer's."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta

import httpx

from bf4ps.battlelog.models import DetailedStats, ProfileStats
from bf4ps.db.connect import Conn
from bf4ps.domain import Resource
from bf4ps.stats import rank_titles
from bf4ps.stats.snapshot import write_detailed, write_profile
from tests.db.test_web_api import (
    client,  # noqa: F401 - the fixture
    pool,  # noqa: F401 - the fixture
)
from tests.guarded import parsed_capture
from tests.helpers import make_soldier

PERSONA = 177958806  # the capture's soldier (an Xbox 360 one, shown here on PC)
AT = datetime(2026, 1, 5, 12, tzinfo=UTC)


def card(html: str) -> str:
    found = re.search(r'<section class="card" id="rank">(.*?)</section>', html, re.S)
    assert found is not None
    return " ".join(re.sub(r"<[^>]+>", " ", found[1]).split())


async def test_the_real_captures_rank_12_shows_its_title_and_40_percent(
        client: httpx.AsyncClient, conn: Conn) -> None:  # noqa: F811
    profile = parsed_capture(Resource.PROFILE)
    assert isinstance(profile, ProfileStats)
    assert (profile.rank, profile.rank_score) == (12, 242_104)
    assert (profile.current_rank_score, profile.next_rank_score) == (229_000, 262_000)
    sid = await make_soldier(conn, PERSONA, name="Bf4IntelSoldier")
    await write_profile(conn, sid, profile, AT)
    page = await client.get(f"/soldiers/pc/{PERSONA}")
    assert page.status_code == 200
    text = card(page.text)
    assert "Corporal II" in text and "40 % through the rank" in text, text
    assert 'value="39.7"' in page.text  # the bar: (242,104 - 229,000) / (262,000 - 229,000)
    api = (await client.get(f"/api/soldiers/pc/{PERSONA}")).json()
    assert (api["headline"]["rank"], api["headline"]["rank_name"]) == (12, "Corporal II")


async def test_one_rank_per_page_the_newest_answers(client: httpx.AsyncClient,  # noqa: F811
                                                   conn: Conn) -> None:
    profile = parsed_capture(Resource.PROFILE)
    assert isinstance(profile, ProfileStats)
    sid = await make_soldier(conn, PERSONA + 1, name="RankedUp")
    await write_profile(conn, sid, profile, AT)
    newer = DetailedStats(rank=13, rank_score=262_500, kills=10, deaths=5, score=262_500)
    await write_detailed(conn, sid, newer, AT + timedelta(hours=1))
    page = await client.get(f"/soldiers/pc/{PERSONA + 1}")
    text = card(page.text)
    assert "Corporal III" in text and "Corporal II " not in text + " "
    assert "through the rank" not in text  # rank 13's bounds are not the overview's
    api = (await client.get(f"/api/soldiers/pc/{PERSONA + 1}")).json()
    assert (api["headline"]["rank"], api["headline"]["rank_name"]) == (13, "Corporal III")
    older = dataclasses.replace(newer, rank=11)
    await write_detailed(conn, sid, older, AT - timedelta(hours=1))  # older: ignored
    api = (await client.get(f"/api/soldiers/pc/{PERSONA + 1}")).json()
    assert api["headline"]["rank"] == 13


def test_titles_cover_0_to_100_from_their_source_and_say_rank_n_beyond() -> None:
    titles = rank_titles.titles()
    assert sorted(titles) == list(range(101))
    assert (titles[0], titles[16], titles[20], titles[21]) == (
        "Recruit", "Sergeant I", "Sergeant V", "Staff Sergeant I")
    assert (titles[99], titles[100]) == ("Lieutenant Colonel IV", "Colonel")
    assert rank_titles.title(121) == "Rank 121" and rank_titles.title(None) == "Unranked"
