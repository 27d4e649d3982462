"""Defensive coercion of Battlelog values, used by every parser.

Battlelog sends the same counter as a JSON string ("4836", "12.0"), an int, a float (0.0) or
null, depending on endpoint and year. ``None`` stays ``None`` (a counter not given is never
invented as 0); ``bool`` is never a number; strings are stripped and read as ints or floats;
garbage (lists, objects, words, NaN/inf, out-of-range numbers) becomes ``None``. Integers are
limited to the signed 64-bit range of the database columns; a float given for an integer
counter is rounded to the nearest integer (``11.999999``), never making a missing value a
number. Ids are positive 64-bit integers from ints or digit strings only (floats lose
precision above 2**53). Whether a missing or wrong *structure* is an error is the parsers' call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# A decimal number longer than this is garbage for any counter (int64 has 19 digits); the cap
# also keeps int()/float() away from pathological inputs.
_MAX_NUMBER_TEXT = 64


def _in_int64(value: int) -> int | None:
    return value if INT64_MIN <= value <= INT64_MAX else None


def _float_to_int(value: float) -> int | None:
    if not math.isfinite(value):
        return None
    return _in_int64(round(value))


def _text_to_number(text: str) -> int | float | None:
    text = text.strip()
    if not text or len(text) > _MAX_NUMBER_TEXT or "_" in text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def to_int(value: Any) -> int | None:
    """An integer counter, or None for null and garbage."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _in_int64(value)
    if isinstance(value, float):
        return _float_to_int(value)
    if isinstance(value, str):
        number = _text_to_number(value)
        if isinstance(number, int):
            return _in_int64(number)
        if isinstance(number, float):
            return _float_to_int(number)
    return None


def to_float(value: Any) -> float | None:
    """A real number (ratio, percent, metres), or None for null and garbage."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if INT64_MIN <= value <= INT64_MAX else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        number = _text_to_number(value)
        return None if number is None else float(number)
    return None


def to_id(value: Any) -> int | None:
    """A positive 64-bit id (persona, user, platform) from an int or a digit string."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if not text.isdigit() or not text.isascii() or len(text) > 19:
            return None
        number = int(text)
    else:
        return None
    return number if 0 < number <= INT64_MAX else None


def to_str(value: Any) -> str | None:
    """A string as sent; anything that is not a string is None."""
    return value if isinstance(value, str) else None


def to_text(value: Any) -> str | None:
    """A non-blank string, stripped; blank strings (e.g. an empty clan tag) are None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text or None


def as_mapping(value: Any) -> Mapping[str, Any]:
    """A JSON object, or an empty mapping for anything else (for optional sub-objects)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """A JSON array, or an empty list for anything else (for optional arrays)."""
    return value if isinstance(value, list) else []


def numbers(source: Mapping[str, Any], ints: tuple[tuple[str, str], ...],
            floats: tuple[tuple[str, str], ...]) -> dict[str, int | float | None]:
    """Fields read from `source` by (field, key): `ints` through to_int, `floats` to_float."""
    values: dict[str, int | float | None] = {f: to_int(source.get(k)) for f, k in ints}
    values.update({f: to_float(source.get(k)) for f, k in floats})
    return values
