"""Answers that are well formed and wrong: a career of zeros, lifetime counters gone down
(knobs ``fault_zeros``, ``fault_decrease``), and Battlelog that is not itself: a 302 to EA's
login page (``fault_login_redirect``), a 503 with ``Retry-After`` (``fault_retry_after``,
``retry_after_seconds``; per source IP the simulator remembers until when it asked to be left
alone and counts the requests that came anyway: ``retry_after_ignored`` in /__sim/stats);
and answers that are not BF4's to this request (``fault_other_game``, ``fault_other_endpoint``)."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from bf4ps.sim.battlelog.faults import HTML, Answer
from bf4ps.sim.battlelog.jsonvalue import JsonValue

LOGIN_URL = ("https://accounts.ea.com/connect/auth?client_id=battlelog&response_type=code"
             "&redirect_uri=https%3A%2F%2Fbattlelog.battlefield.com%2Fsso%2F%3Ftokentype%3Dcode")
LOGIN_PAGE = (b"<!DOCTYPE html><html><head><title>Moved</title></head><body>"
              b'<a href="https://accounts.ea.com/connect/auth">EA login</a></body></html>')
UNAVAILABLE_PAGE = (b"<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head>"
                    b"<body><h1>Service Unavailable</h1><p>Back soon.</p></body></html>")


def _kept(key: str) -> bool:
    """Identities are never distorted (personaId, platformInt, userId ...)."""
    return key.endswith(("Id", "Int", "id")) or key in ("guid", "slug", "name")


Change = Callable[[int | float], int | float]


def _walk(value: JsonValue, change: Change) -> JsonValue:
    if isinstance(value, dict):
        return {k: (v if _kept(k) else _walk(v, change)) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, change) for v in value]
    if isinstance(value, str) and value.isdigit():  # Battlelog sends many counters as strings
        return str(change(int(value)))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return change(value)


def zeros(body: bytes) -> bytes:
    """Every number of the answer 0 (identities kept): a career erased."""
    return orjson.dumps(_walk(orjson.loads(body), lambda v: type(v)(0)))


def decrease(body: bytes) -> bytes:
    """Every positive number of the answer halved (identities kept)."""
    def half(v: int | float) -> int | float:
        return v // 2 if isinstance(v, int) else v / 2
    return orjson.dumps(_walk(orjson.loads(body), half))


# another game's statsTemplate per resource: the detailed (Hardline) and overview (BF3) ones are
# the captured ones; the item lists' follow their pattern
OTHER_GAME_TEMPLATES = {
    "detailed": "profile.bfhdetailedstatspopulate",
    "profile": "profile.bf3overviewstats",
    "weapons": "profile.bfhweaponsstats",
    "vehicles": "profile.bf3vehiclesstats",
}
HARDLINE_TOP_RANK = 150  # Hardline's ranks go past BF4's 140
OTHER_ENDPOINT = {"detailed": "profile", "profile": "detailed", "weapons": "vehicles",
                  "vehicles": "weapons"}  # whose answer comes back instead
REWRITES = ("zeros", "decrease", "other_game")


def other_game(body: bytes, resource: str) -> bytes:
    """The answer as another game's: its statsTemplate, and a rank BF4 does not have."""
    document = orjson.loads(body)
    data = document["data"]
    data["statsTemplate"] = OTHER_GAME_TEMPLATES[resource]
    for stats in (data.get("generalStats"), data.get("overviewStats")):
        if isinstance(stats, dict):
            stats["rank"] = HARDLINE_TOP_RANK
    return orjson.dumps(document)


def distorted(body: bytes, outcome: str, resource: str) -> bytes:
    if outcome == "other_game":
        return other_game(body, resource)
    return zeros(body) if outcome == "zeros" else decrease(body)


LOGIN_REDIRECT = Answer(302, LOGIN_PAGE, HTML)
RETRY_AFTER = Answer(503, UNAVAILABLE_PAGE, HTML)
