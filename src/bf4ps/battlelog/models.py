"""What the Battlelog parsers produce and the storage layer writes.

Field names are the column names of the statistics tables (db/schema.sql);
storage maps dataclass fields to columns one to one. Every stat is optional: Battlelog sends
nulls, and a missing counter must never be invented as 0 where the payload did not say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bf4ps.domain import ErrorClass, Resource


@dataclass(frozen=True, slots=True)
class DetailedStats:
    """`warsawdetailedstatspopulate` data.generalStats, the headline counters of a soldier."""

    rank: int | None = None
    skill: int | None = None
    score: int | None = None
    total_score: int | None = None
    rank_score: int | None = None
    combat_score: int | None = None
    time_played_seconds: int | None = None
    kills: int | None = None
    deaths: int | None = None
    kill_assists: int | None = None
    headshots: int | None = None
    shots_fired: int | None = None
    shots_hit: int | None = None
    accuracy_percent: float | None = None  # Battlelog sends a percent here (11.44)
    longest_headshot: float | None = None
    highest_kill_streak: int | None = None  # killStreakBonus
    nemesis_kills: int | None = None
    highest_nemesis_streak: int | None = None  # nemesisStreak
    num_rounds: int | None = None
    wins: int | None = None
    losses: int | None = None
    score_per_minute: float | None = None
    kills_per_minute: float | None = None
    quit_percentage: float | None = None
    revives: int | None = None
    heals: int | None = None
    repairs: int | None = None
    resupplies: int | None = None
    avenger_kills: int | None = None
    savior_kills: int | None = None
    suppression_assists: int | None = None
    flags_captured: int | None = None
    flags_defended: int | None = None
    dogtags_taken: int | None = None
    vehicles_destroyed: int | None = None
    vehicle_damage: int | None = None
    assault_score: int | None = None
    engineer_score: int | None = None
    support_score: int | None = None
    recon_score: int | None = None
    commander_score: int | None = None
    squad_score: int | None = None  # sc_squad
    vehicle_score: int | None = None  # sc_vehicle
    award_score: int | None = None  # sc_award
    unlock_score: int | None = None  # sc_unlock
    assault_time_seconds: int | None = None  # kitTimes["1"]
    engineer_time_seconds: int | None = None  # kitTimes["2"]
    recon_time_seconds: int | None = None  # kitTimes["8"]
    support_time_seconds: int | None = None  # kitTimes["32"]
    commander_time_seconds: int | None = None  # kitTimes["2048"]
    conquest_score: int | None = None
    rush_score: int | None = None
    team_deathmatch_score: int | None = None
    squad_deathmatch_score: int | None = None
    domination_score: int | None = None
    obliteration_score: int | None = None
    defuse_score: int | None = None  # "elimination"
    capture_the_flag_score: int | None = None
    air_superiority_score: int | None = None
    carrier_assault_score: int | None = None
    chain_link_score: int | None = None


@dataclass(frozen=True, slots=True)
class TopItem:
    """One of the overview's top weapons/vehicles."""

    guid: str
    name: str
    slug: str | None
    kills: int | None


@dataclass(frozen=True, slots=True)
class Progress:
    """One completion bar of the overview (assignments, medals, ribbons, ...)."""

    slug: str
    current: int | None
    maximum: int | None


@dataclass(frozen=True, slots=True)
class LinkedSoldier:
    """A soldier of the same Battlelog account (overviewBoxStats)."""

    persona_id: int
    name: str
    platform_int: int


@dataclass(frozen=True, slots=True)
class ProfileStats:
    """`warsawoverviewpopulate` data: the soldier's overview."""

    battlelog_user_id: int | None = None
    clan_tag: str | None = None
    rank: int | None = None
    rank_name: str | None = None  # e.g. WARSAW_ID_P_RANK12_NAME of the current rank
    rank_score: int | None = None
    current_rank_score: int | None = None  # pointsNeeded of currentRankNeeded
    next_rank_score: int | None = None  # pointsNeeded of nextRankNeeded
    skill: int | None = None
    score: int | None = None
    kills: int | None = None
    deaths: int | None = None
    time_played_seconds: int | None = None
    score_per_minute: float | None = None
    kills_per_minute: float | None = None
    accuracy_percent: float | None = None
    wins: int | None = None
    losses: int | None = None
    top_weapons: tuple[TopItem, ...] = ()
    top_vehicles: tuple[TopItem, ...] = ()
    progress: tuple[Progress, ...] = ()
    linked_soldiers: tuple[LinkedSoldier, ...] = ()


@dataclass(frozen=True, slots=True)
class CatalogItem:
    """What an item of every kind has: Battlelog's catalogue fields, its kills and its service
    stars."""

    guid: str
    name: str  # localisation SID, e.g. WARSAW_ID_P_WNAME_ULTIM
    slug: str | None
    category: str | None
    code: str | None
    kills: int | None
    service_stars: int | None
    service_stars_progress: float | None


@dataclass(frozen=True, slots=True)
class WeaponItem(CatalogItem):
    headshots: int | None
    shots_fired: int | None
    shots_hit: int | None
    accuracy_fraction: float | None  # 0..1 in weapon items
    time_equipped_seconds: int | None

    @property
    def seconds(self) -> int | None:
        """Time used (the kinds' one measure of it)."""
        return self.time_equipped_seconds


@dataclass(frozen=True, slots=True)
class VehicleItem(CatalogItem):
    time_in_seconds: int | None
    destroy_x_in_y: int | None

    @property
    def seconds(self) -> int | None:
        return self.time_in_seconds


@dataclass(frozen=True, slots=True)
class SearchHit:
    persona_id: int
    name: str
    platform_int: int
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    """An anonymous Battlelog session (BattlelogClient.open_session): the search check-sum."""

    check_sum: str


# What a successful FetchResult carries: a stats resource, a user's soldiers
# (BattlelogClient.account_soldiers), search hits (BattlelogClient.search) or a session.
Parsed = (
    DetailedStats
    | ProfileStats
    | tuple[WeaponItem, ...]
    | tuple[VehicleItem, ...]
    | tuple[LinkedSoldier, ...]
    | tuple[SearchHit, ...]
    | Session
)


@dataclass(slots=True)
class FetchResult:
    """The classified outcome of one Battlelog request. Exactly one of parsed / error_class."""

    resource: Resource | None
    http_status: int | None
    duration_seconds: float
    size_bytes: int
    parsed: Parsed | None = None
    error_class: ErrorClass | None = None
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    sent_at: float | None = None  # when its headers left (epoch seconds; with a send window)
    body: bytes | None = field(default=None, repr=False)  # a stats resource's raw body

    @property
    def ok(self) -> bool:
        return self.error_class is None


class BattlelogParseError(ValueError):
    """A payload Battlelog sent that is not what a resource should be. Classified as malformed
    unless envelope.py knows better. ``signal`` names what was recognized (see
    envelope.SIGNALS): a soft throttle, a login wall, an unknown wording ..."""

    def __init__(self, message: str, error_class: ErrorClass = ErrorClass.MALFORMED,
                 signal: str | None = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.signal = signal
