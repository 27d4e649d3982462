"""The community-compatible endpoints in process (httpx over ASGI) against real PostgreSQL:
gametools' /bf4/stats/ and /bf4/all/ and bf4stats' playerInfo for a soldier with known stored
counters, every field checked against values computed here from the stored rows (not by the
code under test), format_values true and false, both slash forms, unknown extra parameters;
the images they name resolve."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from bf4ps.db.connect import Conn
from tests.db.community import community_client
from tests.db.test_web_api import PERSONA, seed_soldier

GT = "/community/gametools/bf4"
BS = "/community/bf4stats/api"
EXTRA = "lang=en-us&skip_battlelog=false&oid=7&whatever=1"
Row = dict[str, Any]


@pytest.fixture
async def client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with community_client(db_url) as c:
        yield c


async def stored(conn: Conn, sid: int) -> tuple[Row, list[Row], list[Row], Row]:
    """The stored counters: detailed, weapons and vehicles (with their catalog slugs), profile."""
    d = await (await conn.execute("SELECT * FROM detailed_stats_current WHERE soldier_id = %s",
                                  [sid])).fetchone()
    w = await (await conn.execute(
        "SELECT s.*, c.slug, c.category FROM soldier_weapon_stats s "
        "JOIN weapon_catalog c USING (weapon_id) WHERE s.soldier_id = %s", [sid])).fetchall()
    v = await (await conn.execute(
        "SELECT s.*, c.slug, c.category FROM soldier_vehicle_stats s "
        "JOIN vehicle_catalog c USING (vehicle_id) WHERE s.soldier_id = %s", [sid])).fetchall()
    p = await (await conn.execute("SELECT * FROM profile_current WHERE soldier_id = %s",
                                  [sid])).fetchone()
    assert d is not None and p is not None and w and v
    return d, w, v, p


async def seeded(client: httpx.AsyncClient, conn: Conn, path: str
                 ) -> tuple[tuple[Row, list[Row], list[Row], Row], httpx.Response]:
    """The seeded soldier's stored rows, and the answer to `path` (a 200)."""
    rows = await stored(conn, await seed_soldier(conn))
    answer = await client.get(path)
    assert answer.status_code == 200, answer.text
    return rows, answer


def pct(a: float | None, b: float | None, fmt: bool) -> float | str | None:
    if a is None or b is None:
        return None
    x = round(a / b * 100, 2) if b else 0.0
    return f"{x}%" if fmt else x


def per_min(count: int | None, seconds: int | None) -> float | None:
    if count is None or seconds is None:
        return None
    return round(count / (seconds / 60), 2) if seconds else 0.0


def expected_main(d: Row, fmt: bool) -> dict[str, Any]:
    t = d["time_played_seconds"]
    played = d["wins"] + d["losses"]
    classes = {k: d[f"{k}_score"] for k in ("assault", "engineer", "support", "recon",
                                            "commander")}
    return {
        "id": PERSONA, "userName": "TheOnlyBond", "rank": d["rank"], "skill": d["skill"],
        "scorePerMinute": round(d["score"] / (t / 60), 2),
        "killsPerMinute": round(d["kills"] / (t / 60), 2),
        "killDeath": round(d["kills"] / d["deaths"], 2),
        "winPercent": pct(d["wins"], played, fmt),
        "accuracy": pct(d["shots_hit"], d["shots_fired"], fmt),
        "headshots": pct(d["headshots"], d["kills"], fmt),
        "quits": pct(d["num_rounds"] - played, d["num_rounds"], fmt),
        "bestClass": max(classes, key=lambda k: classes[k]).capitalize(),
        "timePlayed": str(timedelta(seconds=t)), "secondsPlayed": t,
        "kills": d["kills"], "deaths": d["deaths"], "wins": d["wins"], "loses": d["losses"],
        "headShots": d["headshots"], "longestHeadShot": d["longest_headshot"],
        "highestKillStreak": d["highest_kill_streak"], "killAssists": d["kill_assists"],
        "revives": d["revives"], "heals": d["heals"], "repairs": d["repairs"],
        "resupplies": d["resupplies"], "avengerKills": d["avenger_kills"],
        "saviorKills": d["savior_kills"], "dogtagsTaken": d["dogtags_taken"],
        "roundsPlayed": d["num_rounds"], "awardScore": d["award_score"],
        "squadScore": d["squad_score"]}


TYPES: dict[str, type | tuple[type, ...]] = {
    "userName": str, "id": int, "userId": int, "avatar": str, "rank": int, "rankName": str,
    "rankImg": str, "skill": int, "scorePerMinute": float, "killsPerMinute": float,
    "killDeath": float, "bestClass": str, "timePlayed": str, "secondsPlayed": int,
    "kills": int, "deaths": int, "wins": int, "loses": int, "headShots": int,
    "longestHeadShot": (int, float), "highestKillStreak": int, "killAssists": int,
    "revives": int, "heals": int, "repairs": int, "resupplies": int, "avengerKills": int,
    "saviorKills": int, "dogtagsTaken": int, "roundsPlayed": int}
PERCENTS = ("winPercent", "accuracy", "headshots", "quits")


def check_main(body: dict[str, Any], d: Row, fmt: bool) -> None:
    for key, value in expected_main(d, fmt).items():
        assert body[key] == value, (key, body[key], value)
    for key, kind in TYPES.items():
        assert isinstance(body[key], kind), (key, body[key])
    for key in PERCENTS:
        assert isinstance(body[key], str if fmt else float), (key, body[key])
        if fmt:
            assert body[key].endswith("%") and float(body[key][:-1]) >= 0
    assert body["rankImg"].startswith("http://testserver/community/img/")


@pytest.mark.parametrize("fmt", ["true", "false", "False", None])
@pytest.mark.parametrize("slash", ["/", ""])
async def test_gametools_stats_fields_from_stored_counters(
        client: httpx.AsyncClient, conn: Conn, fmt: str | None, slash: str) -> None:
    sid = await seed_soldier(conn)
    d, _, _, _ = await stored(conn, sid)
    query = f"name=theonlybond&platform=pc&{EXTRA}" + (f"&format_values={fmt}" if fmt else "")
    answer = await client.get(f"{GT}/stats{slash}?{query}")
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-bf4ps-collected-at"] and answer.headers["last-modified"]
    check_main(answer.json(), d, fmt != "false" and fmt != "False")
    by_id = await client.get(f"{GT}/stats{slash}?playerid={PERSONA}&platform=pc")
    assert by_id.json()["userName"] == "TheOnlyBond"


@pytest.mark.parametrize("fmt", [True, False])
async def test_gametools_all_lists_from_stored_counters(
        client: httpx.AsyncClient, conn: Conn, fmt: bool) -> None:
    (d, weapons, vehicles, profile), answer = await seeded(
        client, conn, f"{GT}/all/?name=TheOnlyBond&platform=pc&format_values="
                      f"{str(fmt).lower()}&{EXTRA}")
    body = answer.json()
    check_main(body, d, fmt)
    by_slug = {w["weaponName"]: w for w in body["weapons"]}
    assert len(by_slug) == len(weapons)
    for w in weapons:
        got = by_slug[w["slug"].lower()]
        assert got["weaponName"] == got["weaponName"].lower() and got["type"] == w["category"]
        assert got["kills"] == w["kills"]
        assert got["killsPerMinute"] == per_min(w["kills"], w["time_equipped_seconds"])
        assert got["accuracy"] == pct(w["shots_hit"], w["shots_fired"], fmt)
        assert got["headshots"] == pct(w["headshots"], w["kills"], fmt)
    by_name = {v["vehicleName"]: v for v in body["vehicles"]}
    for v in vehicles:
        got = by_name[v["slug"].upper()]
        assert got["kills"] == v["kills"] and got["timeIn"] == v["time_in_seconds"]
        assert got["destroyed"] == v["destroy_x_in_y"]
        assert got["type"] == v["category"].removeprefix("Vehicle ").removeprefix("Weapon ")
        assert got["killsPerMinute"] == per_min(v["kills"], v["time_in_seconds"])
    classes = {c["className"]: c for c in body["classes"]}
    assault = classes["Assault"]
    assert assault["score"] == d["assault_score"]
    assert assault["secondsPlayed"] == d["assault_time_seconds"]
    assert assault["timePlayed"] == str(timedelta(seconds=d["assault_time_seconds"]))
    assert assault["serviceStarAmount"] == d["assault_score"] // 155_000
    progress = round(d["assault_score"] % 155_000 / 155_000 * 100, 2)
    assert assault["serviceStarProgressAmount"] == progress
    assert assault["serviceStarProgress"] == (f"{progress}%" if fmt else progress)
    modes = {m["gamemodeName"]: m["score"] for m in body["gamemodes"]}
    assert modes["Conquest"] == modes["Conquestlarge"] == d["conquest_score"]
    bars = {b["progressName"]: (b["current"], b["total"]) for b in body["progress"]}
    stored_bars = {b["slug"]: (b["current"], b["maximum"]) for b in profile["progress"]}
    assert bars["Medals"] == stored_bars["medals"]
    assert body["platoon"]["type"] in ("User", "Platoon")


async def test_images_named_by_the_answers_resolve(client: httpx.AsyncClient,
                                                   conn: Conn) -> None:
    await seed_soldier(conn)
    body = (await client.get(f"{GT}/all?name=TheOnlyBond&platform=pc")).json()
    urls = [body["avatar"], body["rankImg"], body["weapons"][0]["image"],
            body["weapons"][0]["altImage"], body["vehicles"][0]["image"],
            body["classes"][0]["image"], body["platoon"]["emblem"]]
    info = (await client.get(f"{BS}/playerInfo?plat=pc&name=TheOnlyBond")).json()
    urls += [f"http://testserver/community/img/{info['weapons'][0]['imgFancy']}",
             f"http://testserver/community/img/{info['player']['rank']['imgLarge']}"]
    for url in urls:
        assert url.startswith("http://testserver/community/img/"), url
        got = await client.get(url)
        assert got.status_code == 200, url
        assert got.headers["content-type"].split(";")[0] in ("image/svg+xml", "image/png")
    assert (await client.get("/community/img/x/../../etc.png")).status_code == 404


async def test_gametools_weapons_vehicles_and_statsarray(client: httpx.AsyncClient,
                                                         conn: Conn) -> None:
    sid = await seed_soldier(conn)
    _, weapons, vehicles, _ = await stored(conn, sid)
    w = (await client.get(f"{GT}/weapons?name=TheOnlyBond&platform=pc&{EXTRA}")).json()
    assert w["userName"] == "TheOnlyBond" and len(w["weapons"]) == len(weapons)
    v = (await client.get(f"{GT}/vehicles/?playerid={PERSONA}&platform=pc")).json()
    assert len(v["vehicles"]) == len(vehicles)
    assert all(x["vehicleName"] == x["vehicleName"].upper() for x in v["vehicles"])
    # the seed's three collections are 20, 10 and 0 days old: a week holds one, a month all
    rows = await (await conn.execute(
        "SELECT fetched_at, kills, deaths FROM detailed_stats_history WHERE soldier_id = %s "
        "ORDER BY fetched_at", [sid])).fetchall()
    week = (await client.get(f"{GT}/statsarray/?name=TheOnlyBond&platform=pc")).json()
    month = (await client.get(f"{GT}/statsarray?name=TheOnlyBond&platform=pc&days=30")).json()
    assert len(week["killDeath"]) == 1 and len(month["killDeath"]) == len(rows) == 3
    assert month["killDeath"] == [round(r["kills"] / r["deaths"], 2) for r in rows]
    bad = await client.get(f"{GT}/statsarray?name=TheOnlyBond&platform=pc&days=zero")
    assert bad.status_code == 422 and "days" in bad.json()["errors"][0]


def expected_extra(d: Row) -> dict[str, float]:
    t = d["time_played_seconds"]
    return {"kdr": d["kills"] / d["deaths"], "wlr": d["wins"] / d["losses"],
            "spm": d["score"] / (t / 60), "kpm": d["kills"] / (t / 60),
            "sfpm": d["shots_fired"] / (t / 60), "hkp": d["headshots"] / d["kills"] * 100,
            "accuracy": d["shots_hit"] / d["shots_fired"] * 100}


@pytest.mark.parametrize("slash", ["", "/"])
async def test_bf4stats_player_info_from_stored_counters(
        client: httpx.AsyncClient, conn: Conn, slash: str) -> None:
    (d, weapons, vehicles, profile), answer = await seeded(
        client, conn, f"{BS}/playerInfo{slash}?plat=pc&name=TheOnlyBond&output=json&{EXTRA}")
    assert answer.headers["access-control-allow-origin"] == "*"
    doc = answer.json()
    player, stats = doc["player"], doc["stats"]
    assert player["id"] == PERSONA and player["plat"] == "pc" and player["game"] == "bf4"
    assert player["score"] == d["score"] and player["timePlayed"] == d["time_played_seconds"]
    assert isinstance(player["dateCheck"], int) and player["dateCheck"] > 1_600_000_000_000
    assert player["rank"]["nr"] == profile["rank"]
    assert player["rank"]["next"]["needed"] == profile["next_rank_score"]
    for key, column in (("kills", "kills"), ("deaths", "deaths"), ("headshots", "headshots"),
                        ("shotsFired", "shots_fired"), ("shotsHit", "shots_hit"),
                        ("numWins", "wins"), ("numLosses", "losses"),
                        ("numRounds", "num_rounds"), ("skill", "skill"),
                        ("killStreakBonus", "highest_kill_streak"),
                        ("flagCaptures", "flags_captured"), ("revives", "revives")):
        assert stats[key] == d[column], key
    for key, value in expected_extra(d).items():
        assert math.isclose(stats["extra"][key], value, rel_tol=1e-12), key
    extra = stats["extra"]
    assert extra["weaponKills"] == sum(w["kills"] or 0 for w in weapons)
    assert extra["vehicleKills"] == sum(v["kills"] or 0 for v in vehicles)
    assert stats["kits"]["assault"]["id"] == 1 and stats["kits"]["support"]["id"] == 32
    assert stats["kits"]["assault"]["score"] == d["assault_score"]
    assert {m["name"]: m["score"] for m in stats["modes"]}["Conquest"] == d["conquest_score"]
    top = max(weapons, key=lambda w: w["kills"] or 0)
    item = next(w for w in doc["weapons"] if w["stat"]["id"] == top["slug"].lower())
    assert item["stat"]["kills"] == top["kills"] and item["stat"]["hs"] == top["headshots"]
    assert math.isclose(item["extra"]["kpm"],
                        top["kills"] / (top["time_equipped_seconds"] / 60), rel_tol=1e-12)


async def test_bf4stats_outputs_opt_and_post(client: httpx.AsyncClient, conn: Conn) -> None:
    await seed_soldier(conn)
    base = f"{BS}/playerInfo?plat=pc&name=TheOnlyBond"
    jsonp = await client.get(f"{base}&output=jsonp&callback=cb_1")
    assert jsonp.status_code == 200 and jsonp.text.startswith("cb_1(")
    assert jsonp.text.endswith(");")
    assert json.loads(jsonp.text[5:-2])["player"]["name"] == "TheOnlyBond"
    js = await client.get(f"{base}&output=js&opt=stats,extra")
    assert js.text.startswith("var pd=") and js.text.endswith(";")
    doc = json.loads(js.text[7:-1])  # as the Unity client strips it
    assert set(doc) == {"player", "stats"} and "kdr" in doc["stats"]["extra"]
    only = (await client.get(f"{base}&opt=urls,stats")).json()
    assert set(only) == {"player", "stats"} and only["player"]["blPlayer"]
    posted = await client.post(f"{BS}/playerInfo", data={"plat": "pc", "name": "TheOnlyBond",
                                                         "opt": "weapons"})
    assert posted.status_code == 200 and set(posted.json()) == {"player", "weapons"}
    as_json = await client.post(f"{BS}/playerInfo?plat=ps4", json={"plat": "pc",
                                                                    "name": "TheOnlyBond"})
    assert as_json.json()["player"]["plat"] == "pc"  # POST wins
    bad = await client.get(f"{base}&output=jsonp&callback=alert(1)")
    assert bad.status_code == 400 and bad.json()["error"] == "callbackInvalid"
    plat = await client.get(f"{BS}/playerInfo?plat=xbox1&name=TheOnlyBond")
    assert plat.status_code == 422 and plat.json()["error"] == "platInvalid"
    name = await client.get(f"{BS}/playerInfo?plat=pc&name=" + "x" * 80)
    assert name.status_code == 422 and name.json()["error"] == "nameInvalid"
    gt_plat = await client.get(f"{GT}/stats/?name=TheOnlyBond&platform=xone")
    assert gt_plat.status_code == 422 and "platform" in gt_plat.json()["errors"][0]

