"""The soldier page's model, shared by the HTML page and the JSON API: headline stats (with the
derived ratios), weapons and vehicles, the history series, and the freshness of each resource
with an honest note when the last attempt failed and older data is shown."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import Platform, Resource
from bf4ps.stats import history as history_series
from bf4ps.stats import read
from bf4ps.stats.history import ItemSeries, WeaponPoint
from bf4ps.stats.read import HistoryPoint, SoldierOverview, StoredVehicle, StoredWeapon
from bf4ps.web.format import category_name, item_name, percent, ratio

CLASSES = ("assault", "engineer", "support", "recon", "commander")
ERROR_WORDS = {"throttle": "Battlelog asked us to slow down", "timeout": "Battlelog timed out",
               "server": "Battlelog answered with a server error",
               "not_found": "Battlelog does not know this soldier",
               "malformed": "Battlelog sent an incomplete answer",
               "internal": "BF4PS failed to store the answer",
               "unrecognized": "Battlelog sent an answer BF4PS does not recognize"}


@dataclass(frozen=True, slots=True)
class Soldier:
    soldier_id: int
    persona_id: int
    platform: str
    name: str
    now: datetime
    last_seen_at: datetime | None

    @property
    def url(self) -> str:
        return f"/soldiers/{self.platform}/{self.persona_id}"

    @property
    def battlelog_url(self) -> str:
        return (f"https://battlelog.battlefield.com/bf4/soldier/{self.name}/stats/"
                f"{self.persona_id}/{self.platform}/")


async def find(conn: Conn, platform: Platform, persona_id: int) -> Soldier | None:
    cur = await conn.execute(q("web_soldier_by_persona"),
                             {"persona_id": persona_id, "platform": platform.value})
    row = await cur.fetchone()
    if row is None:
        return None
    return Soldier(int(row["soldier_id"]), int(row["persona_id"]), str(row["platform"]),
                   str(row["current_name"]), row["now"], row["last_seen_at"])


def headline(ov: SoldierOverview) -> dict[str, Any]:
    """The headline figures: detailed stats first, the profile overview where they lack."""
    d = ov.detailed.stats if ov.detailed else None
    p = ov.profile.stats if ov.profile else None

    def pick(name: str) -> Any:
        value = getattr(d, name, None) if d is not None else None
        return value if value is not None else getattr(p, name, None)

    kills, deaths = pick("kills"), pick("deaths")
    out: dict[str, Any] = {
        "rank": pick("rank"), "skill": pick("skill"), "score": pick("score"),
        "kills": kills, "deaths": deaths, "kd": ratio(kills, deaths),
        "kpm": pick("kills_per_minute"), "spm": pick("score_per_minute"),
        "accuracy_percent": pick("accuracy_percent"),
        "headshot_percent": percent(getattr(d, "headshots", None), kills),
        "wins": pick("wins"), "losses": pick("losses"),
        "wl": ratio(pick("wins"), pick("losses")),
        "time_played_seconds": pick("time_played_seconds"),
        "clan_tag": getattr(p, "clan_tag", None), "rank_name": _readable(getattr(p, "rank_name",
                                                                               None)),
        "classes": [{"name": c, "score": getattr(d, f"{c}_score", None),
                     "time_seconds": getattr(d, f"{c}_time_seconds", None)} for c in CLASSES],
    }
    if d is not None:
        out.update(revives=d.revives, heals=d.heals, repairs=d.repairs,
                   resupplies=d.resupplies, kill_assists=d.kill_assists,
                   headshots=d.headshots, longest_headshot=d.longest_headshot,
                   highest_kill_streak=d.highest_kill_streak, rounds=d.num_rounds,
                   vehicles_destroyed=d.vehicles_destroyed, dogtags_taken=d.dogtags_taken)
    return out


def _readable(text: str | None) -> str | None:
    """Localisation ids (WARSAW_ID_P_RANK7_NAME) are not for people: dropped."""
    return None if not text or text.startswith("WARSAW_") else text


def freshness(ov: SoldierOverview) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for resource in Resource:
        st = ov.states.get(resource)
        if st is None:
            rows.append({"resource": resource.value, "status": "never_attempted",
                         "last_success_at": None, "last_attempt_at": None,
                         "last_error_class": None, "failed_since_success": False, "note": None})
            continue
        failed = (st.last_attempt_at is not None and st.last_error_class is not None
                  and (st.last_success_at is None or st.last_attempt_at > st.last_success_at))
        note = None
        if failed:
            cause = ERROR_WORDS.get(st.last_error_class.value if st.last_error_class else "",
                                    "it failed")
            note = (f"the last attempt failed ({cause}); showing older data" if
                    st.last_success_at else f"the last attempt failed ({cause}); no data yet")
        rows.append({"resource": resource.value, "status": st.status.value,
                     "last_success_at": st.last_success_at,
                     "last_attempt_at": st.last_attempt_at,
                     "last_error_class": st.last_error_class.value if st.last_error_class
                     else None, "failed_since_success": failed, "note": note})
    return rows


def weapon_row(w: StoredWeapon) -> dict[str, Any]:
    i = w.item
    minutes = (i.time_equipped_seconds or 0) / 60
    return {"weapon_id": w.weapon_id, "name": item_name(i.name, i.slug), "sid": i.name,
            "slug": i.slug, "category": category_name(i.category), "kills": i.kills,
            "headshots": i.headshots, "shots_fired": i.shots_fired, "shots_hit": i.shots_hit,
            "accuracy_percent": round(i.accuracy_fraction * 100, 2)
            if i.accuracy_fraction is not None else percent(i.shots_hit, i.shots_fired),
            "headshot_percent": percent(i.headshots, i.kills),
            "kpm": round(i.kills / minutes, 3) if i.kills is not None and minutes else None,
            "time_seconds": i.time_equipped_seconds, "service_stars": i.service_stars,
            "fetched_at": w.fetched_at}


def vehicle_row(v: StoredVehicle) -> dict[str, Any]:
    i = v.item
    minutes = (i.time_in_seconds or 0) / 60
    return {"vehicle_id": v.vehicle_id, "name": item_name(i.name, i.slug), "sid": i.name,
            "slug": i.slug, "category": category_name(i.category), "kills": i.kills,
            "kpm": round(i.kills / minutes, 3) if i.kills is not None and minutes else None,
            "time_seconds": i.time_in_seconds, "destroyed": i.destroy_x_in_y,
            "service_stars": i.service_stars, "fetched_at": v.fetched_at}


def history_rows(points: list[HistoryPoint]) -> list[dict[str, Any]]:
    """Oldest first (as given), with the ratios the chart plots."""
    rows = []
    for p in points:
        row = asdict(p)
        row["kd"] = ratio(p.kills, p.deaths)
        row["accuracy_percent"] = percent(p.shots_hit, p.shots_fired)
        row["wl"] = ratio(p.wins, p.losses)
        rows.append(row)
    return rows


def soldier_dict(s: Soldier) -> dict[str, Any]:
    return {"soldier_id": s.soldier_id, "persona_id": s.persona_id, "platform": s.platform,
            "name": s.name, "url": s.url, "battlelog_url": s.battlelog_url}


async def overview(conn: Conn, s: Soldier) -> dict[str, Any]:
    ov = await read.soldier_overview(conn, s.soldier_id)
    return {"soldier": soldier_dict(s), "headline": headline(ov),
            "detailed_fetched_at": ov.detailed.fetched_at if ov.detailed else None,
            "profile_fetched_at": ov.profile.fetched_at if ov.profile else None,
            "freshness": freshness(ov)}


async def weapons(conn: Conn, s: Soldier) -> list[dict[str, Any]]:
    return [weapon_row(w) for w in await read.weapons_of(conn, s.soldier_id)]


async def vehicles(conn: Conn, s: Soldier) -> list[dict[str, Any]]:
    return [vehicle_row(v) for v in await read.vehicles_of(conn, s.soldier_id)]


async def history(conn: Conn, s: Soldier, limit: int = 100) -> list[dict[str, Any]]:
    return history_rows(await history_series.detailed_series(conn, s.soldier_id, limit))


def item_chart(series: list[ItemSeries]) -> list[dict[str, Any]]:
    """Per-item series for the charts: epoch seconds and the plotted values, oldest first."""
    out = []
    for item in series:
        pts = item.points
        out.append({"name": item.name, "t": [int(p.fetched_at.timestamp()) for p in pts],
                    "kills": [p.kills for p in pts],
                    "time_min": [round(p.time_seconds / 60, 1) if p.time_seconds is not None
                                 else None for p in pts],
                    "accuracy": [p.accuracy_percent if isinstance(p, WeaponPoint) else None
                                 for p in pts]})
    return out


async def page(conn: Conn, s: Soldier) -> dict[str, Any]:
    """Everything the soldier page shows."""
    data = await overview(conn, s)
    data["weapons"] = await weapons(conn, s)
    data["vehicles"] = await vehicles(conn, s)
    series = await history_series.page_series(conn, s.soldier_id)
    data["history"] = history_rows(series.detailed)
    data["weapon_history"] = item_chart(series.weapons)
    data["vehicle_history"] = item_chart(series.vehicles)
    cur = await conn.execute(q("interactive_open_for_soldier"), {"soldier_id": s.soldier_id})
    row = await cur.fetchone()
    data["open_request"] = f"/requests/{row['request_id']}" if row else None
    return data
