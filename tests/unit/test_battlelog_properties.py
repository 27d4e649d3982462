"""Property tests over every real Battlelog fixture: perturbed and re-typed variants (numbers as
strings and floats, digit strings as numbers, unknown keys, a UTF-8 BOM, nulled and missing
values, empty ``games`` with ``gamesJson``) keep every present value, and never turn a present
value into 0 or null.

The variants are made by walking the real document with a random generator hypothesis draws
(so a failure shrinks to its seed); ids are re-typed only between int and digit string, the way
Battlelog sends them, and text fields are never re-typed.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bf4ps.battlelog.envelope import BOM, ItemBatch
from bf4ps.battlelog.parse_detailed import parse_detailed
from bf4ps.battlelog.parse_items import parse_vehicle_batch, parse_weapon_batch
from bf4ps.battlelog.parse_profile import parse_profile
from bf4ps.battlelog.parse_search import parse_account_soldiers
from tests import captures

captures.skip_module_without()
PARSERS: dict[str, Callable[[bytes], Any]] = {
    "2013-bf4intel/details-stats.json": parse_detailed,
    "2020-battlelog-net/detailed-TheOnlyBond.json": parse_detailed,
    "2020-battlelog-net/detailed-idcsander.json": parse_detailed,
    "2013-bf4intel/soldieroverview.json": parse_profile,
    "2013-bf4intel/weapon-stats.json": parse_weapon_batch,
    "2013-bf4intel/vehicles-stats.json": parse_vehicle_batch,
    "2013-bf4intel/soldier_listing.json": parse_account_soldiers,
}
# sent as int or digit string, never as a float (a float id loses digits above 2**53)
ID_KEYS = frozenset({"personaId", "userId", "platformInt", "platform", "gameInt", "game",
                     "currentUserId", "loadoutId"})
# text, whatever it looks like: never re-typed
TEXT_KEYS = frozenset({"name", "personaName", "tag", "clanTag", "slug", "category",
                       "categorySID", "code", "guid", "username", "picture", "namespace",
                       "gravatarMd5", "statsTemplate", "gamesJson", "texture", "type",
                       "message"})
# what identifies an entry (an entry without it is dropped, rightly): never nulled here
STRUCTURAL = ID_KEYS | {"guid", "type", "message", "data", "games", "gamesJson", "personaName",
                          "slug"}
UNKNOWN = "zzBf4psUnknown"
RAW = {name: orjson.loads(captures.read(name)) for name in PARSERS}
BASELINE = {name: PARSERS[name](orjson.dumps(doc)) for name, doc in RAW.items()}
CASES = settings(max_examples=40, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _retype(key: str, value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool) or key in TEXT_KEYS:
        return value
    if isinstance(value, int):
        choices = [str(value)]
        if key not in ID_KEYS and abs(value) < 2**53:
            choices.append(float(value))
        return rng.choice(choices)
    if isinstance(value, float) and key not in ID_KEYS:
        return repr(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 16:
        return int(value)
    return value


def variant(doc: Any, rng: random.Random, *, retype: float, unknown: float,
            drop: float, counter: list[int], key: str = "") -> Any:
    """A copy of the document, perturbed; `counter[0]` counts the values nulled or removed."""
    if isinstance(doc, dict):
        out: dict[str, Any] = {}
        for k, v in doc.items():
            scalar = not isinstance(v, dict | list)
            if scalar and v is not None and k not in STRUCTURAL and rng.random() < drop:
                counter[0] += 1
                if rng.random() < 0.5:
                    out[k] = None
                continue
            out[k] = variant(v, rng, retype=retype, unknown=unknown, drop=drop,
                             counter=counter, key=k)
        if rng.random() < unknown:
            out[f"{UNKNOWN}{rng.randint(0, 99)}"] = rng.choice([1, "x", None, [], {"a": 1}])
        return out
    if isinstance(doc, list):
        return [variant(v, rng, retype=retype, unknown=unknown, drop=drop, counter=counter,
                        key=key) for v in doc]
    return _retype(key, doc, rng) if rng.random() < retype else doc


def fields(model: Any) -> dict[str, Any]:
    if isinstance(model, ItemBatch):
        return {item.guid: fields(item) for item in model.items}
    if isinstance(model, tuple):
        return {i: fields(item) for i, item in enumerate(model)}
    if dataclasses.is_dataclass(model) and not isinstance(model, type):
        return {f.name: fields(getattr(model, f.name)) for f in dataclasses.fields(model)}
    return model


def flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out.update(flat(v, f"{prefix}/{k}"))
        return out
    return {prefix: tree}


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return bool(a == b)


def encode(doc: Any, rng: random.Random) -> bytes:
    body = orjson.dumps(doc)
    return BOM + body if rng.random() < 0.3 else body


@pytest.mark.parametrize("name", list(PARSERS))
@CASES
@given(seed=st.integers(0, 2**32 - 1))
def test_retyped_variants_keep_every_value(name: str, seed: int) -> None:
    rng = random.Random(seed)
    counter = [0]
    doc = variant(RAW[name], rng, retype=0.5, unknown=0.3, drop=0.0, counter=counter)
    parsed = PARSERS[name](encode(doc, rng))
    before, after = flat(fields(BASELINE[name])), flat(fields(parsed))
    assert before.keys() == after.keys()
    changed = {k: (before[k], after[k]) for k in before if not same(before[k], after[k])}
    assert not changed, changed


@pytest.mark.parametrize("name", list(PARSERS))
@CASES
@given(seed=st.integers(0, 2**32 - 1))
def test_nulled_and_missing_values_never_become_zero_or_another_value(
        name: str, seed: int) -> None:
    rng = random.Random(seed)
    counter = [0]
    doc = variant(RAW[name], rng, retype=0.3, unknown=0.1, drop=0.05, counter=counter)
    parsed = PARSERS[name](encode(doc, rng))
    before, after = flat(fields(BASELINE[name])), flat(fields(parsed))
    assert before.keys() == after.keys()  # no item lost: ids and guids were left alone
    changed = {k: (before[k], after[k]) for k in before if not same(before[k], after[k])}
    # a value the variant did not give is unknown (None; a missing item name is ""), never 0
    # or anything invented
    assert all(new is None or (new == "" and isinstance(old, str))
               for old, new in changed.values()), changed
    assert len(changed) <= counter[0] * 6  # kitTimes-like maps feed a few fields at most
    if counter[0] == 0:
        assert not changed


def test_empty_games_with_games_json_keeps_every_soldier() -> None:
    name = "2013-bf4intel/soldier_listing.json"
    doc = orjson.loads(orjson.dumps(RAW[name]))
    for box in doc["data"]["soldiersBox"]:
        persona = box["persona"]
        persona["gamesJson"] = orjson.dumps(persona["games"]).decode()
        persona["games"] = {}
        box.pop("game", None)  # the persona's games decide (gamesJson, since games is empty)
    baseline = BASELINE[name]
    assert baseline  # the fixture has BF4 soldiers
    assert parse_account_soldiers(orjson.dumps(doc)) == baseline
    for box in doc["data"]["soldiersBox"]:
        box["persona"]["gamesJson"] = "{}"
    assert parse_account_soldiers(orjson.dumps(doc)) == ()  # without it they would be lost
