"""The Battlelog JSON envelope ``{"type": "success"|"error", "message": str, "data": ...}``.

``open_envelope`` turns response bytes into the envelope's ``data`` or raises
``BattlelogParseError`` with the class the problem belongs to and, when it was recognized, the
signal (one of SIGNALS). A UTF-8 byte-order mark is dropped; an empty, non-JSON or non-object
body is MALFORMED, the body ``null`` and a success without its stats a soft throttle; HTML
pages, throttle messages, service failures, login walls and other error wordings are told
apart as docs/battlelog.md "Classification" tabulates (no wording parks: no public capture
records Battlelog's wording for an unknown persona). Messages are short reasons, never payload
bodies: Battlelog's own ``message`` is quoted cleaned and cut to ``MESSAGE_LIMIT`` characters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from bf4ps.battlelog import identity
from bf4ps.battlelog.coerce import to_text
from bf4ps.battlelog.models import BattlelogParseError, CatalogItem
from bf4ps.domain import ErrorClass, Resource

MESSAGE_LIMIT = 80
BOM = b"\xef\xbb\xbf"
THROTTLE_MARKERS = ("toomanysearches", "too many")
# an error envelope that blames the service, not the soldier: retried, never parked at once
TRANSIENT_MARKERS = ("try again", "internal error", "temporarily", "maintenance")
LOGIN_MARKERS = ("gate_redirect", "login", "log in", "sign in", "signin", "not logged",
                 "unauthorized", "authenticate")
_HTML_LOGIN_MARKERS = (b"accounts.ea.com", b"type=\"password\"", b"type='password'",
                       b"loginform", b"log in to battlelog")
_HTML_SNIFF_BYTES = 65536

# signals (details["signal"] of a FetchResult; part of the fleet circuit's failure signature)
SOFT_THROTTLE = "soft_throttle"
LOGIN_WALL = "login_wall"
UNKNOWN_ERROR = "unknown_error"
UNKNOWN_PAGE = "unknown_page"
NO_DATA = "no_data"
SIGNALS = (SOFT_THROTTLE, LOGIN_WALL, UNKNOWN_ERROR, UNKNOWN_PAGE, NO_DATA)

T = TypeVar("T")


def short(value: object, limit: int = MESSAGE_LIMIT) -> str:
    """A printable one-line excerpt of a value, at most ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text[: limit * 4]).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def without_bom(body: bytes) -> bytes:
    """The body after leading whitespace and a UTF-8 byte-order mark."""
    return body.lstrip().removeprefix(BOM)


def looks_like_html(body: bytes) -> bool:
    """A body starting with a tag (after whitespace and a UTF-8 BOM) is markup, not JSON."""
    return without_bom(body[:256]).lstrip().startswith(b"<")


def html_error(body: bytes) -> BattlelogParseError:
    """What an HTML page where JSON was expected means (see the module docstring)."""
    sniff = body[:_HTML_SNIFF_BYTES].lower()
    if b"errorpage" in sniff:
        return BattlelogParseError("HTML error page (errorpage) instead of JSON",
                                   ErrorClass.SERVER)
    if b"that page doesn't exist" in sniff or b"that page doesn&#39;t exist" in sniff:
        return BattlelogParseError("HTML 'page does not exist' page", ErrorClass.NOT_FOUND)
    if b"too many requests" in sniff:
        return BattlelogParseError("HTML 'too many requests' page", ErrorClass.THROTTLE)
    if any(marker in sniff for marker in _HTML_LOGIN_MARKERS):
        return BattlelogParseError("HTML login page instead of JSON (login wall)",
                                   ErrorClass.UNRECOGNIZED, LOGIN_WALL)
    return BattlelogParseError("an HTML page BF4PS does not recognize instead of JSON",
                               ErrorClass.UNRECOGNIZED, UNKNOWN_PAGE)


def _says(message: object, markers: tuple[str, ...]) -> bool:
    if not isinstance(message, str):
        return False
    lowered = message.lower()
    return any(marker in lowered for marker in markers)


def is_throttle_message(message: object) -> bool:
    return _says(message, THROTTLE_MARKERS)


def decode_json(body: bytes) -> Any:
    """orjson.loads (after a BOM), with every decoding problem as a classified parse error."""
    if not body.strip():
        raise BattlelogParseError("empty body")
    if looks_like_html(body):
        raise html_error(body)
    try:
        return orjson.loads(without_bom(body))
    except (ValueError, TypeError) as exc:  # orjson.JSONDecodeError is a ValueError
        raise BattlelogParseError(f"body is not JSON ({short(str(exc), 60)})") from None


def error_envelope(message: object) -> BattlelogParseError:
    """What a ``"type": "error"`` envelope means, by its message."""
    quoted = f"Battlelog error: {short(message)}"
    if _says(message, TRANSIENT_MARKERS):
        return BattlelogParseError(quoted, ErrorClass.SERVER)
    if _says(message, LOGIN_MARKERS):
        return BattlelogParseError(f"{quoted} (login wall)", ErrorClass.UNRECOGNIZED,
                                   LOGIN_WALL)
    return BattlelogParseError(f"{quoted} (a wording BF4PS does not recognize)",
                               ErrorClass.UNRECOGNIZED, UNKNOWN_ERROR)


def open_envelope(body: bytes) -> Any:
    """The envelope's ``data`` (any JSON value; the resource parser checks its shape)."""
    document = decode_json(body)
    if document is None:
        raise BattlelogParseError("body is null (soft throttle)", signal=SOFT_THROTTLE)
    if not isinstance(document, dict):
        raise BattlelogParseError("body is not a JSON object envelope")
    kind = document.get("type")
    message = document.get("message")
    if is_throttle_message(message):
        raise BattlelogParseError(f"Battlelog throttle: {short(message)}", ErrorClass.THROTTLE)
    if kind == "error":
        raise error_envelope(message)
    if kind != "success":
        raise BattlelogParseError(f"envelope type is {short(kind, 30)}, not success",
                                  ErrorClass.UNRECOGNIZED, UNKNOWN_ERROR)
    if "data" not in document:
        raise BattlelogParseError("success envelope without data", ErrorClass.UNRECOGNIZED,
                                  NO_DATA)
    return document["data"]


def _missing(container: Any, key: str, what: str) -> BattlelogParseError:
    """A stats object/list that is absent or null is a soft throttle (the transient missing
    generalStats); one of the wrong type is a malformed payload."""
    value = container.get(key) if isinstance(container, dict) else None
    if value is None:
        return BattlelogParseError(f"{key} is missing (soft throttle)", signal=SOFT_THROTTLE)
    return BattlelogParseError(f"{key} is not {what}")


def require_object(container: Any, key: str) -> Mapping[str, Any]:
    """``container[key]`` as an object, or MALFORMED (e.g. the transient missing generalStats)."""
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, dict):
        raise _missing(container, key, "an object")
    return value


def require_list(container: Any, key: str) -> list[Any]:
    """``container[key]`` as an array, or MALFORMED."""
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, list):
        raise _missing(container, key, "a list")
    return value


def require_data_object(data: Any) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise BattlelogParseError("data is not an object")
    return data


@dataclass(frozen=True, slots=True)
class ItemBatch(Generic[T]):
    """Items of a weapons/vehicles list and how many entries were dropped.

    An entry is dropped (and counted in ``skipped``) when it is not an object, has no
    non-blank string ``guid``, or repeats a guid already taken (the first one wins). A list
    with dropped entries is still a good response: the other items are real.
    """

    items: tuple[T, ...]
    skipped: int


def collect_items(entries: list[Any], build: Callable[[str, Mapping[str, Any]], T]) -> ItemBatch[T]:
    items: list[T] = []
    seen: set[str] = set()
    for entry in entries:
        guid = to_text(entry.get("guid")) if isinstance(entry, dict) else None
        if guid is None or guid in seen:
            continue
        seen.add(guid)
        items.append(build(guid, entry))
    return ItemBatch(items=tuple(items), skipped=len(entries) - len(items))


def soldier_stats(body: bytes, resource: Resource, stats_key: str, persona_id: int | None,
                  platform_int: int | None) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """A soldier's stats answer (detailed, overview): its data and `data.<stats_key>`, which
    must be an object, of the endpoint and the soldier asked for (identity.py)."""
    data = require_data_object(open_envelope(body))
    identity.check_template(data, resource)
    stats = require_object(data, stats_key)
    identity.check_soldier(data, persona_id, platform_int)
    return data, stats


def parse_item_batch(body: bytes, resource: Resource, list_key: str,
                     build: Callable[[str, Mapping[str, Any]], T],
                     persona_id: int | None, platform_int: int | None) -> ItemBatch[T]:
    """The weapons/vehicles shape: `data.<list_key>` must be a list of items with guids."""
    data = require_data_object(open_envelope(body))
    identity.check_template(data, resource)
    entries = require_list(data, list_key)
    identity.check_soldier(data, persona_id, platform_int)
    batch = collect_items(entries, build)
    for item in batch.items:
        if isinstance(item, CatalogItem):
            identity.check_ranges(item)
    return batch
