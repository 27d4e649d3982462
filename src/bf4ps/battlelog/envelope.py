"""The Battlelog JSON envelope ``{"type": "success"|"error", "message": str, "data": ...}``.

``open_envelope`` turns response bytes into the envelope's ``data`` or raises
``BattlelogParseError`` with the class the problem belongs to:

* empty body, not JSON, not an object, ``type`` neither "success" nor "error",
  no ``data``                                                     -> MALFORMED (retryable)
* an HTML document where JSON was expected (Battlelog's "errorpage") -> SERVER (retryable)
* ``message`` saying TOOMANYSEARCHES / "too many" (any ``type``)   -> THROTTLE
* ``"type": "error"`` saying the service failed ("try again", "internal error",
  "temporarily", "maintenance")                                    -> SERVER (retryable)
* ``"type": "error"`` otherwise (unknown persona and the like)      -> NOT_FOUND (terminal)

Messages are short reasons, never payload bodies: Battlelog's own ``message`` is quoted
cleaned and cut to ``MESSAGE_LIMIT`` characters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from bf4ps.battlelog.coerce import to_id, to_text
from bf4ps.battlelog.models import BattlelogParseError
from bf4ps.domain import ErrorClass

MESSAGE_LIMIT = 80
THROTTLE_MARKERS = ("toomanysearches", "too many")
# an error envelope that blames the service, not the soldier: retried, never parked at once
TRANSIENT_MARKERS = ("try again", "internal error", "temporarily", "maintenance")
_HTML_SNIFF_BYTES = 65536

T = TypeVar("T")


def short(value: object, limit: int = MESSAGE_LIMIT) -> str:
    """A printable one-line excerpt of a value, at most ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text[: limit * 4]).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def looks_like_html(body: bytes) -> bool:
    """A body starting with a tag (after whitespace and a UTF-8 BOM) is markup, not JSON."""
    return body[:256].lstrip().removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


def html_reason(body: bytes) -> str:
    sniff = body[:_HTML_SNIFF_BYTES].lower()
    if b"errorpage" in sniff:
        return "HTML error page (errorpage) instead of JSON"
    if b"that page doesn't exist" in sniff or b"that page doesn&#39;t exist" in sniff:
        return "HTML 'page does not exist' page instead of JSON"
    return "HTML page instead of JSON"


def _says(message: object, markers: tuple[str, ...]) -> bool:
    if not isinstance(message, str):
        return False
    lowered = message.lower()
    return any(marker in lowered for marker in markers)


def is_throttle_message(message: object) -> bool:
    return _says(message, THROTTLE_MARKERS)


def decode_json(body: bytes) -> Any:
    """orjson.loads, with every decoding problem as a classified parse error."""
    if not body.strip():
        raise BattlelogParseError("empty body")
    if looks_like_html(body):
        raise BattlelogParseError(html_reason(body), ErrorClass.SERVER)
    try:
        return orjson.loads(body)
    except (ValueError, TypeError) as exc:  # orjson.JSONDecodeError is a ValueError
        raise BattlelogParseError(f"body is not JSON ({short(str(exc), 60)})") from None


def open_envelope(body: bytes) -> Any:
    """The envelope's ``data`` (any JSON value; the resource parser checks its shape)."""
    document = decode_json(body)
    if not isinstance(document, dict):
        raise BattlelogParseError("body is not a JSON object envelope")
    kind = document.get("type")
    message = document.get("message")
    if is_throttle_message(message):
        raise BattlelogParseError(f"Battlelog throttle: {short(message)}", ErrorClass.THROTTLE)
    if kind == "error":
        transient = _says(message, TRANSIENT_MARKERS)
        raise BattlelogParseError(f"Battlelog error: {short(message)}",
                                  ErrorClass.SERVER if transient else ErrorClass.NOT_FOUND)
    if kind != "success":
        raise BattlelogParseError(f"envelope type is {short(kind, 30)}, not success")
    if "data" not in document:
        raise BattlelogParseError("envelope has no data")
    return document["data"]


def require_object(container: Any, key: str) -> Mapping[str, Any]:
    """``container[key]`` as an object, or MALFORMED (e.g. the transient missing generalStats)."""
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, dict):
        raise BattlelogParseError(f"{key} is missing or is not an object")
    return value


def require_list(container: Any, key: str) -> list[Any]:
    """``container[key]`` as an array, or MALFORMED."""
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, list):
        raise BattlelogParseError(f"{key} is missing or is not a list")
    return value


def require_data_object(data: Any) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise BattlelogParseError("data is not an object")
    return data


def check_identity(
    data: Mapping[str, Any], persona_id: int | None, platform_int: int | None
) -> None:
    """When the caller says which soldier it asked for, the payload must not be another one.

    A present ``personaId`` / ``platformInt`` that differs (or is not an id) is MALFORMED;
    an absent or null one cannot be checked and is accepted.
    """
    _check_one(data, "personaId", persona_id)
    _check_one(data, "platformInt", platform_int)


def _check_one(data: Mapping[str, Any], key: str, expected: int | None) -> None:
    if expected is None or data.get(key) is None:
        return
    found = to_id(data[key])
    if found != expected:
        raise BattlelogParseError(
            f"{key} {short(data[key], 30)} does not match the requested {expected}"
        )


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


def parse_item_batch(body: bytes, list_key: str, build: Callable[[str, Mapping[str, Any]], T],
                     persona_id: int | None, platform_int: int | None) -> ItemBatch[T]:
    """The weapons/vehicles shape: `data.<list_key>` must be a list of items with guids."""
    data = require_data_object(open_envelope(body))
    entries = require_list(data, list_key)
    check_identity(data, persona_id, platform_int)
    return collect_items(entries, build)
