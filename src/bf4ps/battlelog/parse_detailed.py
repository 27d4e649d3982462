"""`warsawdetailedstatspopulate` -> DetailedStats.

``data.generalStats`` must be an object: Battlelog transiently sends a success envelope
without it (1.6-8.4 % of first attempts upstream), which is MALFORMED and retryable. Counters
go through ``coerce.to_int`` (strings, ints, floats, null), ratios through ``coerce.to_float``;
``accuracy`` is Battlelog's percent (11.44), kept as a percent. How kits, modes and carrier
assault are read: detailed_from_general_stats (see also models.DetailedStats).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bf4ps.battlelog.coerce import INT64_MAX, as_mapping, numbers, to_int
from bf4ps.battlelog.envelope import soldier_stats
from bf4ps.battlelog.identity import check_ranges
from bf4ps.battlelog.models import DetailedStats
from bf4ps.domain import Resource

# DetailedStats field -> generalStats key, integer counters.
INT_KEYS: tuple[tuple[str, str], ...] = (
    ("rank", "rank"),
    ("skill", "skill"),
    ("score", "score"),
    ("total_score", "totalScore"),
    ("rank_score", "rankScore"),
    ("combat_score", "combatScore"),
    ("time_played_seconds", "timePlayed"),
    ("kills", "kills"),
    ("deaths", "deaths"),
    ("kill_assists", "killAssists"),
    ("headshots", "headshots"),
    ("shots_fired", "shotsFired"),
    ("shots_hit", "shotsHit"),
    ("highest_kill_streak", "killStreakBonus"),
    ("nemesis_kills", "nemesisKills"),
    ("highest_nemesis_streak", "nemesisStreak"),
    ("num_rounds", "numRounds"),
    ("wins", "numWins"),
    ("losses", "numLosses"),
    ("revives", "revives"),
    ("heals", "heals"),
    ("repairs", "repairs"),
    ("resupplies", "resupplies"),
    ("avenger_kills", "avengerKills"),
    ("savior_kills", "saviorKills"),
    ("suppression_assists", "suppressionAssists"),
    ("flags_captured", "flagCaptures"),
    ("flags_defended", "flagDefend"),
    ("dogtags_taken", "dogtagsTaken"),
    ("vehicles_destroyed", "vehiclesDestroyed"),
    ("vehicle_damage", "vehicleDamage"),
    ("squad_score", "sc_squad"),
    ("vehicle_score", "sc_vehicle"),
    ("award_score", "sc_award"),
    ("unlock_score", "sc_unlock"),
    ("conquest_score", "conquest"),
    ("rush_score", "rush"),
    ("team_deathmatch_score", "teamdeathmatch"),
    ("squad_deathmatch_score", "sqdm"),
    ("domination_score", "domination"),
    ("obliteration_score", "obliteration"),
    ("defuse_score", "elimination"),
    ("capture_the_flag_score", "capturetheflag"),
    ("air_superiority_score", "airsuperiority"),
    ("chain_link_score", "chainlink"),
)

# DetailedStats field -> generalStats key, real numbers.
FLOAT_KEYS: tuple[tuple[str, str], ...] = (
    ("accuracy_percent", "accuracy"),
    ("longest_headshot", "longestHeadshot"),
    ("score_per_minute", "scorePerMinute"),
    ("kills_per_minute", "killsPerMinute"),
    ("quit_percentage", "quitPercentage"),
)

# (score field, named key, time field, kit id)
KITS: tuple[tuple[str, str, str, str], ...] = (
    ("assault_score", "assault", "assault_time_seconds", "1"),
    ("engineer_score", "engineer", "engineer_time_seconds", "2"),
    ("recon_score", "recon", "recon_time_seconds", "8"),
    ("support_score", "support", "support_time_seconds", "32"),
    ("commander_score", "commander", "commander_time_seconds", "2048"),
)

CARRIER_ASSAULT_PARTS = ("carrierassaultlarge", "carrierassaultsmall")


def parse_detailed(
    body: bytes, *, persona_id: int | None = None, platform_int: int | None = None
) -> DetailedStats:
    """Parse a detailed-stats response; raises BattlelogParseError when it is not one."""
    stats = detailed_from_general_stats(
        soldier_stats(body, Resource.DETAILED, "generalStats", persona_id, platform_int)[1])
    check_ranges(stats)
    return stats


def detailed_from_general_stats(stats: Mapping[str, Any]) -> DetailedStats:
    """Class scores read the named key (``assault`` ...) and fall back to ``kitScores[kit id]``;
    kit times read ``kitTimes`` by kit id (1 assault, 2 engineer, 8 recon, 32 support, 2048
    commander); mode scores read the named keys: ``elimination`` is Defuse, ``conquest`` the
    Conquest total (in every capture it equals ``conquestlarge``)."""
    values: dict[str, Any] = {**numbers(stats, INT_KEYS, FLOAT_KEYS), **kit_values(stats)}
    values["carrier_assault_score"] = carrier_assault(stats)
    return DetailedStats(**values)


def kit_values(stats: Mapping[str, Any]) -> dict[str, int | None]:
    scores = as_mapping(stats.get("kitScores"))
    times = as_mapping(stats.get("kitTimes"))
    values: dict[str, int | None] = {}
    for score_field, key, time_field, kit in KITS:
        score = to_int(stats.get(key))
        values[score_field] = score if score is not None else to_int(scores.get(kit))
        values[time_field] = to_int(times.get(kit))
    return values


def carrier_assault(stats: Mapping[str, Any]) -> int | None:
    """The plain ``carrierassault`` key when it is given, otherwise the sum of
    ``carrierassaultlarge`` and ``carrierassaultsmall`` when either is given, otherwise None."""
    plain = to_int(stats.get("carrierassault"))
    if plain is not None:
        return plain
    parts = [to_int(stats.get(key)) for key in CARRIER_ASSAULT_PARTS]
    given = [part for part in parts if part is not None]
    if not given:
        return None
    total = sum(given)
    return total if abs(total) <= INT64_MAX else None
