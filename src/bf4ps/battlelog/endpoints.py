"""Battlelog URL paths (relative to the base URL, e.g. https://battlelog.battlefield.com).

The four stats resources are anonymous GETs keyed by (personaId, platformInt). The lookups
are a user's soldiers (GET overviewBoxStats) and the search POST (form ``query=<name>``, plus
``post-check-sum``: the first 10 characters of the ``beaker.session.id`` cookie that an anonymous
GET of the site's start page sets, as newer search clients send).
Arguments are checked here: a bad id is a programming error (ValueError), never a request.
"""

from __future__ import annotations

from bf4ps.battlelog.coerce import INT64_MAX
from bf4ps.domain import PLATFORM_INTS, Resource

STATS_PATHS: dict[Resource, str] = {
    Resource.DETAILED: "/bf4/warsawdetailedstatspopulate/{persona_id}/{platform_int}/",
    Resource.PROFILE: "/bf4/warsawoverviewpopulate/{persona_id}/{platform_int}/",
    Resource.WEAPONS: "/bf4/warsawWeaponsPopulateStats/{persona_id}/{platform_int}/stats/",
    Resource.VEHICLES: "/bf4/warsawvehiclesPopulateStats/{persona_id}/{platform_int}/stats/",
}
ACCOUNT_SOLDIERS_PATH = "/bf4/user/overviewBoxStats/{user_id}/"
SEARCH_PATH = "/bf4/search/query/"
SESSION_PATH = "/bf4/"
SESSION_COOKIE = "beaker.session.id"
CHECK_SUM_LENGTH = 10
MAX_NAME_LENGTH = 64


def _check_id(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= INT64_MAX:
        raise ValueError(f"{what} must be a positive 64-bit integer, not {value!r}")
    return value


def stats_path(resource: Resource, persona_id: int, platform_int: int) -> str:
    if platform_int not in PLATFORM_INTS.values():
        raise ValueError(f"unknown Battlelog platform number {platform_int!r}")
    return STATS_PATHS[Resource(resource)].format(
        persona_id=_check_id(persona_id, "persona id"), platform_int=platform_int
    )


def account_soldiers_path(user_id: int) -> str:
    return ACCOUNT_SOLDIERS_PATH.format(user_id=_check_id(user_id, "user id"))


# Battlelog's search matches like SQL LIKE: `_` is any one character (so a capped result list
# can leave the exact soldier out) and `%` any run. No public client escapes them; BF4PS sends
# them backslash-escaped, LIKE's default escape (docs/battlelog.md: "Search and sessions").
WILDCARDS = ("\\", "_", "%")


def escape_query(name: str) -> str:
    """The name with Battlelog's search wildcards escaped (the backslash first)."""
    for char in WILDCARDS:
        name = name.replace(char, "\\" + char)
    return name


def search_form(name: str, check_sum: str | None = None) -> dict[str, str]:
    """The search form body. The name is sent stripped, wildcards escaped; blank or very long
    names are refused. With a session's check-sum, the form carries it as ``post-check-sum``."""
    query = name.strip()
    if not query or len(query) > MAX_NAME_LENGTH:
        raise ValueError("search name must be 1-64 characters")
    form = {"query": escape_query(query)}
    if check_sum is not None:
        form["post-check-sum"] = check_sum
    return form


def check_sum_of(session_id: str) -> str | None:
    """The search check-sum of a session id (its first 10 characters); None when too short."""
    session_id = session_id.strip()
    return session_id[:CHECK_SUM_LENGTH] if len(session_id) >= CHECK_SUM_LENGTH else None
