"""`warsawoverviewpopulate` -> ProfileStats (the soldier overview).

``data.overviewStats`` must be an object (else MALFORMED); everything else is optional. The
clan tag is ``viewedPersonaInfo.tag`` (null or blank: None); the Battlelog user id is
``viewedPersonaInfo.userId`` only (``data.currentUserId`` is the viewer's account, never
taken); the rank name ``currentRankNeeded.name``, the next rank's score
``nextRankNeeded.pointsNeeded``; counters from ``overviewStats`` (accuracy a percent).
``topWeapons`` / ``topVehicles`` -> TopItem and ``gameProgress`` -> Progress skip entries
without a guid or a slug. The overview carries no linked soldiers: they come from
``overviewBoxStats`` (parse_search.parse_account_soldiers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bf4ps.battlelog.coerce import as_list, as_mapping, numbers, to_id, to_int, to_str, to_text
from bf4ps.battlelog.envelope import soldier_stats
from bf4ps.battlelog.identity import check_ranges
from bf4ps.battlelog.models import ProfileStats, Progress, TopItem
from bf4ps.domain import Resource

# ProfileStats field -> overviewStats key.
INT_KEYS: tuple[tuple[str, str], ...] = (
    ("rank", "rank"),
    ("rank_score", "rankScore"),
    ("skill", "skill"),
    ("score", "score"),
    ("kills", "kills"),
    ("deaths", "deaths"),
    ("time_played_seconds", "timePlayed"),
    ("wins", "numWins"),
    ("losses", "numLosses"),
)
FLOAT_KEYS: tuple[tuple[str, str], ...] = (
    ("score_per_minute", "scorePerMinute"),
    ("kills_per_minute", "killsPerMinute"),
    ("accuracy_percent", "accuracy"),
)


def parse_profile(
    body: bytes, *, persona_id: int | None = None, platform_int: int | None = None
) -> ProfileStats:
    """Parse an overview response; raises BattlelogParseError when it is not one."""
    data, stats = soldier_stats(body, Resource.PROFILE, "overviewStats", persona_id,
                                platform_int)
    persona = as_mapping(data.get("viewedPersonaInfo"))
    values: dict[str, Any] = {**numbers(stats, INT_KEYS, FLOAT_KEYS)}
    user_id = to_id(persona.get("userId"))
    profile = ProfileStats(
        battlelog_user_id=user_id,
        clan_tag=to_text(persona.get("tag")),
        rank_name=to_text(as_mapping(data.get("currentRankNeeded")).get("name")),
        current_rank_score=_points(data, "currentRankNeeded"),
        next_rank_score=_points(data, "nextRankNeeded"),
        top_weapons=top_items(data.get("topWeapons")),
        top_vehicles=top_items(data.get("topVehicles")),
        progress=progress_bars(data.get("gameProgress")),
        **values,
    )
    check_ranges(profile)
    return profile


def _points(data: Mapping[str, Any], key: str) -> int | None:
    """A rank's points (``pointsNeeded`` of ``currentRankNeeded`` / ``nextRankNeeded``)."""
    return to_int(as_mapping(data.get(key)).get("pointsNeeded"))


def top_items(value: Any) -> tuple[TopItem, ...]:
    items: list[TopItem] = []
    for entry in as_list(value):
        item = top_item(as_mapping(entry))
        if item is not None:
            items.append(item)
    return tuple(items)


def top_item(entry: Mapping[str, Any]) -> TopItem | None:
    guid = to_text(entry.get("guid"))
    if guid is None:
        return None
    return TopItem(
        guid=guid,
        name=to_str(entry.get("name")) or "",
        slug=to_str(entry.get("slug")),
        kills=to_int(entry.get("kills")),
    )


def progress_bars(value: Any) -> tuple[Progress, ...]:
    bars: list[Progress] = []
    for entry in as_list(value):
        fields = as_mapping(entry)
        slug = to_text(fields.get("slug"))
        if slug is None:
            continue
        bars.append(
            Progress(
                slug=slug, current=to_int(fields.get("current")), maximum=to_int(fields.get("max"))
            )
        )
    return tuple(bars)
