"""Property tests: whatever Battlelog sends, a parser returns a well-typed model or raises
BattlelogParseError, never anything else.

The inputs are the real fixtures, damaged: values of random keys replaced by other JSON types,
keys dropped, bytes truncated, lists and strings inflated, nesting deepened.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from types import UnionType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bf4ps.battlelog.coerce import INT64_MAX, INT64_MIN
from bf4ps.battlelog.models import (
    BattlelogParseError,
    DetailedStats,
    LinkedSoldier,
    ProfileStats,
    VehicleItem,
    WeaponItem,
)
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.battlelog.parse_items import (
    parse_vehicle_batch,
    parse_vehicles,
    parse_weapon_batch,
    parse_weapons,
)
from bf4ps.battlelog.parse_profile import parse_profile
from bf4ps.battlelog.parse_search import parse_account_soldiers
from tests import captures

captures.skip_module_without()
Path_ = tuple[str | int, ...]


def _detailed(body: bytes) -> Any:
    return parse_detailed(body, persona_id=200661244, platform_int=1)


# fixture, parser, expected type (items type for tuples), the parts the parser reads
CASES: dict[str, tuple[str, Callable[[bytes], Any], type, tuple[str, ...]]] = {
    "detailed": ("2013-bf4intel/details-stats.json", _detailed, DetailedStats, ("generalStats",)),
    "detailed-2020": (
        "2020-battlelog-net/detailed-TheOnlyBond.json",
        parse_detailed,
        DetailedStats,
        ("generalStats",),
    ),
    "profile": (
        "2013-bf4intel/soldieroverview.json",
        parse_profile,
        ProfileStats,
        ("overviewStats", "viewedPersonaInfo", "topWeapons", "topVehicles", "gameProgress"),
    ),
    "weapons": ("2013-bf4intel/weapon-stats.json", parse_weapons, WeaponItem, ("mainWeaponStats",)),
    "vehicles": (
        "2013-bf4intel/vehicles-stats.json",
        parse_vehicles,
        VehicleItem,
        ("mainVehicleStats",),
    ),
    "account": (
        "2013-bf4intel/soldier_listing.json",
        parse_account_soldiers,
        LinkedSoldier,
        ("soldiersBox",),
    ),
}
BODIES = {name: captures.read(case[0]) for name, case in CASES.items()}
DOCUMENTS = {name: json.loads(body) for name, body in BODIES.items()}
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- helpers ---------------------------------------------------------------------------------


def paths(node: Any, prefix: Path_ = (), depth: int = 4) -> list[Path_]:
    """Every key/index path below ``node`` down to ``depth`` (list items: the first three)."""
    found: list[Path_] = []
    if depth == 0:
        return found
    children: list[tuple[str | int, Any]] = []
    if isinstance(node, dict):
        children = list(node.items())
    elif isinstance(node, list):
        children = list(enumerate(node[:3]))
    for key, child in children:
        found.append((*prefix, key))
        found.extend(paths(child, (*prefix, key), depth - 1))
    return found


def focus_paths(name: str) -> list[Path_]:
    """Envelope and data keys, and everything the parser reads, to a useful depth."""
    document = DOCUMENTS[name]
    found: list[Path_] = [(key,) for key in document]
    found += [("data", key) for key in document["data"]]
    for key in CASES[name][3]:
        found += paths(document["data"].get(key), ("data", key), depth=3)
    return found


PATHS = {name: focus_paths(name) for name in CASES}


def replaced(node: Any, path: Path_, value: Any, delete: bool = False) -> Any:
    """A copy of ``node`` with ``path`` set to ``value`` (or deleted); only the spine is copied."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(node, dict) and key in node:
        copy: Any = dict(node)
    elif isinstance(node, list) and isinstance(key, int) and key < len(node):
        copy = list(node)
    else:
        return node
    if delete and not rest:
        del copy[key]
    else:
        copy[key] = replaced(copy[key], rest, value, delete)
    return copy


def get(node: Any, path: Path_) -> Any:
    for key in path:
        node = node[key]
    return node


def flipped(value: Any, kind: str) -> Any:
    """``value`` turned into another JSON type."""
    conversions: dict[str, Callable[[Any], Any]] = {
        "str": lambda v: v if isinstance(v, str) else json.dumps(v),
        "int": lambda v: int(v) if isinstance(v, int | float) and v == v else 7,
        "float": lambda v: float(v) if isinstance(v, int | float) else 7.5,
        "null": lambda v: None,
        "list": lambda v: [v],
        "dict": lambda v: {"value": v},
        "bool": lambda v: True,
    }
    return conversions[kind](value)


def encode(document: Any) -> bytes:
    return json.dumps(document).encode()


def check_value(value: Any, hint: Any) -> None:
    origin = typing.get_origin(hint)
    if origin in (UnionType, typing.Union):
        options = typing.get_args(hint)
        if value is None:
            assert type(None) in options
            return
        check_value(value, next(o for o in options if o is not type(None)))
    elif origin is tuple:
        assert isinstance(value, tuple)
        for item in value:
            check_value(item, typing.get_args(hint)[0])
    elif hint is int:
        assert type(value) is int and INT64_MIN <= value <= INT64_MAX
    elif hint is float:
        assert type(value) is float and value == value and abs(value) != float("inf")
    elif hint is str:
        assert type(value) is str
    else:
        check_model(value, hint)


def check_model(value: Any, expected: type) -> None:
    assert isinstance(value, expected) and is_dataclass(value)
    hints = typing.get_type_hints(expected)
    for field in fields(expected):
        check_value(getattr(value, field.name), hints[field.name])


def parse_checked(name: str, body: bytes) -> Any:
    """Parse; a parse error is fine, any other exception fails; a model must be well typed."""
    _, parse, expected, _ = CASES[name]
    try:
        result = parse(body)
    except BattlelogParseError:
        return None
    if isinstance(result, tuple):
        for item in result:
            check_model(item, expected)
    else:
        check_model(result, expected)
    return result


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["4836", "12.0", "0.0", " 7 ", "-1", "1e3", "NaN", "", "0x10", "९"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)
FLIPS = st.sampled_from(["str", "int", "float", "null", "list", "dict", "bool", "drop", "value"])


# --- properties ------------------------------------------------------------------------------


def test_every_fixture_parses_well_typed() -> None:
    for name in CASES:
        assert parse_checked(name, BODIES[name]) is not None


@pytest.mark.parametrize("name", list(CASES))
@FUZZ
@given(data=st.data())
def test_flipped_and_dropped_keys(name: str, data: st.DataObject) -> None:
    document = DOCUMENTS[name]
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        path = data.draw(st.sampled_from(PATHS[name]))
        try:
            current = get(document, path)
        except (KeyError, IndexError, TypeError):
            continue
        kind = data.draw(FLIPS)
        if kind == "drop":
            document = replaced(document, path, None, delete=True)
        elif kind == "value":
            document = replaced(document, path, data.draw(JSON_VALUES))
        else:
            document = replaced(document, path, flipped(current, kind))
    parse_checked(name, encode(document))


@pytest.mark.parametrize("name", list(CASES))
@FUZZ
@given(data=st.data())
def test_truncated_bodies(name: str, data: st.DataObject) -> None:
    body = BODIES[name]
    cut = data.draw(st.integers(min_value=0, max_value=len(body) - 1))
    result = parse_checked(name, body[:cut])
    if cut < len(body.rstrip()):
        assert result is None  # a JSON document cut short is never valid


@FUZZ
@given(body=st.binary(max_size=2048))
def test_random_bytes(body: bytes) -> None:
    for name in CASES:
        parse_checked(name, body)


def stringified(node: Any) -> Any:
    """Every number as a JSON string, the way Battlelog sends most counters."""
    if isinstance(node, dict):
        return {key: stringified(value) for key, value in node.items()}
    if isinstance(node, list):
        return [stringified(value) for value in node]
    if isinstance(node, int | float) and not isinstance(node, bool):
        return repr(node)
    return node


@pytest.mark.parametrize("name", list(CASES))
def test_numbers_as_strings_give_the_same_model(name: str) -> None:
    document = DOCUMENTS[name]
    for key in CASES[name][3]:
        document = replaced(document, ("data", key), stringified(document["data"][key]))
    document = replaced(document, ("data", "personaId"), str(document["data"].get("personaId")))
    assert parse_checked(name, encode(document)) == parse_checked(name, BODIES[name])


@pytest.mark.parametrize(
    ("name", "list_key", "batch"),
    [
        ("weapons", "mainWeaponStats", parse_weapon_batch),
        ("vehicles", "mainVehicleStats", parse_vehicle_batch),
    ],
)
@settings(max_examples=10, deadline=None)
@given(copies=st.integers(min_value=2, max_value=12), fresh=st.booleans())
def test_inflated_item_lists(
    name: str, list_key: str, batch: Callable[[bytes], Any], copies: int, fresh: bool
) -> None:
    items = DOCUMENTS[name]["data"][list_key]
    inflated = [
        {**item, "guid": f"{item['guid']}-{n}"} if fresh and n else item
        for n in range(copies)
        for item in items
    ]
    result = batch(encode(replaced(DOCUMENTS[name], ("data", list_key), inflated)))
    expected_items = len(items) * copies if fresh else len(items)
    assert (len(result.items), result.skipped) == (expected_items, len(inflated) - expected_items)


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=15, deadline=None)
@given(data=st.data(), size=st.sampled_from([10_000, 1_000_000]), depth=st.sampled_from([5, 3000]))
def test_huge_strings_and_deep_nesting(
    name: str, data: st.DataObject, size: int, depth: int
) -> None:
    path = data.draw(st.sampled_from(PATHS[name]))
    document = replaced(DOCUMENTS[name], path, "9" * size)
    parse_checked(name, encode(document))
    nested = encode(replaced(DOCUMENTS[name], path, "__DEEP__")).replace(
        b'"__DEEP__"', b"[" * depth + b"]" * depth, 1
    )
    result = parse_checked(name, nested)
    if depth > 1024:
        assert result is None  # orjson's depth limit: MALFORMED, not a RecursionError
