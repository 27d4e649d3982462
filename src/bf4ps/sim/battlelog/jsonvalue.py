"""Battlelog's JSON as the simulator handles it: a recursive type for values built from the
captured fixtures, and narrowing helpers that raise on a shape the fixtures do not have."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"


class ShapeError(TypeError):
    """A fixture value is not the JSON type the simulator expects there."""


def _wrong(value: object, expected: str) -> ShapeError:
    return ShapeError(f"expected a JSON {expected}, got {type(value).__name__}")


def obj(value: JsonValue) -> JsonObject:
    """`value` as a JSON object."""
    if not isinstance(value, dict):
        raise _wrong(value, "object")
    return value


def arr(value: JsonValue) -> list[JsonValue]:
    """`value` as a JSON array."""
    if not isinstance(value, list):
        raise _wrong(value, "array")
    return value


def array(items: Iterable[JsonValue]) -> list[JsonValue]:
    """`items` as a new JSON array (a list of ints is not a list of JSON values to mypy: lists
    are invariant)."""
    return list(items)


def objs(value: JsonValue) -> list[JsonObject]:
    """`value` as a JSON array of objects (a new list of the same objects)."""
    return [obj(item) for item in arr(value)]


def text(value: JsonValue) -> str:
    """`value` as a JSON string."""
    if not isinstance(value, str):
        raise _wrong(value, "string")
    return value


def number(value: JsonValue) -> int | float:
    """`value` as a JSON number (never a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(value, "number")
    return value


def integer(value: JsonValue) -> int:
    """`value` as a JSON integer (never a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(value, "integer")
    return value
