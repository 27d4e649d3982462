"""Name -> persona lookups: the search POST and a user's soldiers (overviewBoxStats).

Both keep Battlefield 4 soldiers only (game bit 2048) on the platforms BF4PS knows
(pc 1, xbox360 2, ps3 4, ps4 32, xboxone 64), drop entries without a usable persona id,
name or platform, and drop repeats of the same (persona id, platform). Search answers a name
nobody has with an empty list, so its error envelope (other than a throttle) does not mean "no
such soldier": the search itself was refused (a stale session check-sum, a login wall) and the
class is UNRECOGNIZED, retryable, never NOT_FOUND. Whether an empty list may be believed is
the caller's question (a session known to be good, see docs/battlelog.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from bf4ps.battlelog.coerce import as_mapping, to_id, to_int, to_text
from bf4ps.battlelog.envelope import open_envelope, require_list
from bf4ps.battlelog.models import BattlelogParseError, LinkedSoldier, SearchHit
from bf4ps.domain import PLATFORM_INTS, ErrorClass

BF4_GAME_BIT = 2048
KNOWN_PLATFORM_INTS = frozenset(PLATFORM_INTS.values())


def parse_search(body: bytes, name: str | None = None) -> tuple[SearchHit, ...]:
    """BF4 personas of a search response, optionally only those named exactly ``name``
    (case-insensitive)."""
    try:
        data = open_envelope(body)
    except BattlelogParseError as exc:
        if exc.error_class not in (ErrorClass.NOT_FOUND, ErrorClass.UNRECOGNIZED):
            raise
        raise BattlelogParseError(f"search refused ({exc})", ErrorClass.UNRECOGNIZED,
                                  exc.signal) from None
    if not isinstance(data, list):
        raise BattlelogParseError("search data is not a list")
    wanted = name.strip().casefold() if name is not None else None
    hits: dict[tuple[int, int], SearchHit] = {}
    for entry in data:
        for hit in search_hits(as_mapping(entry)):
            if wanted is not None and hit.name.casefold() != wanted:
                continue
            hits.setdefault((hit.persona_id, hit.platform_int), hit)
    return tuple(hits.values())


def search_hits(entry: Mapping[str, Any]) -> Iterator[SearchHit]:
    """``data`` is a list of personas; a persona's ``games`` maps a platform number (string key)
    to a game bitmask (string or int), and it yields one SearchHit per platform whose bitmask
    has the BF4 bit."""
    persona_id = to_id(entry.get("personaId"))
    name = to_text(entry.get("personaName"))
    if persona_id is None or name is None:
        return
    namespace = to_text(entry.get("namespace"))
    for platform_int, games in games_map(entry).items():
        if platform_int in KNOWN_PLATFORM_INTS and has_bf4(games):
            yield SearchHit(persona_id, name, platform_int, namespace)


def games_map(persona: Mapping[str, Any]) -> dict[int, object]:
    """``games`` as {platform number: bitmask value}; ``gamesJson`` (the same map as a JSON
    string) when ``games`` is not an object or is empty (Battlelog sends accounts with
    ``games: {}`` and the map in ``gamesJson`` only)."""
    games = persona.get("games")
    if not isinstance(games, dict) or not games:
        games = _games_from_json(persona.get("gamesJson"))
    result: dict[int, object] = {}
    for key, value in games.items():
        platform_int = to_id(key)
        if platform_int is not None:
            result[platform_int] = value
    return result


def _games_from_json(value: object) -> dict[str, object]:
    if not isinstance(value, str) or len(value) > 4096:
        return {}
    try:
        decoded = orjson.loads(value)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}  # JSON: its keys are strings


def has_bf4(bitmask: object) -> bool:
    number = to_int(bitmask)
    return number is not None and number > 0 and bool(number & BF4_GAME_BIT)


def parse_account_soldiers(body: bytes) -> tuple[LinkedSoldier, ...]:
    """The BF4 soldiers of an ``overviewBoxStats`` response."""
    boxes = require_list(open_envelope(body), "soldiersBox")
    soldiers: dict[tuple[int, int], LinkedSoldier] = {}
    for box in boxes:
        soldier = linked_soldier(as_mapping(box))
        if soldier is not None:
            soldiers.setdefault((soldier.persona_id, soldier.platform_int), soldier)
    return tuple(soldiers.values())


def linked_soldier(box: Mapping[str, Any]) -> LinkedSoldier | None:
    """One entry of ``data.soldiersBox`` (a list: one entry per persona and game): its ``game``
    must have the BF4 bit; when ``game`` is absent, the persona's ``games`` map for the
    entry's ``platform`` decides."""
    persona = as_mapping(box.get("persona"))
    persona_id = to_id(persona.get("personaId"))
    name = to_text(persona.get("personaName"))
    platform_int = to_id(box.get("platform"))
    if persona_id is None or name is None or platform_int is None:
        return None
    if platform_int not in KNOWN_PLATFORM_INTS:
        return None
    game = box.get("game")
    is_bf4 = has_bf4(game) if game is not None else has_bf4(games_map(persona).get(platform_int))
    if not is_bf4:
        return None
    return LinkedSoldier(persona_id=persona_id, name=name, platform_int=platform_int)
