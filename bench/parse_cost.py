"""Cost of parsing a live-sized weapons response vs a bare json.loads of the same bytes.

Live weapons bodies are 519-641 KB (median 590 KB) with 173-174 mainWeaponStats entries. The
2013 capture has 136 entries in 391 KB (minified), so this script inflates the entry list to
174 (copies with fresh guids) and pads the unlock catalogue (``weaponsByCategory``) with copies
of its own entries until the minified body is ~586-600 KB. It then times, median of many runs:

* ``parse_weapons(body)``: the full BF4PS parse (orjson decode + 174 WeaponItem);
* ``json.loads(body)``: the standard-library decode alone (the reference; target ratio < 2x);
* ``orjson.loads(body)``: the decode alone, for context.

Run: ``PYTHONPATH=src python bench/parse_cost.py [--runs N]``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from bf4ps.battlelog.parse_items import parse_weapons
from tests import captures

FIXTURE = captures.captures_dir() / "2013-bf4intel/weapon-stats.json"
TARGET_ITEMS = 174
TARGET_MIN_BYTES = 590_000
TARGET_MAX_BYTES = 600_000


def inflated_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = list(items)
    n = 0
    while len(result) < TARGET_ITEMS:
        extra = copy.deepcopy(items[n % len(items)])
        extra["guid"] = f"{extra['guid'][:-4]}{n:04X}"
        result.append(extra)
        n += 1
    return result


def padded_catalogue(document: dict[str, Any]) -> None:
    """Append copies of catalogue entries until the minified body reaches the target size."""
    catalogue: dict[str, list[Any]] = document["data"]["weaponsByCategory"]
    pool = [entry for entries in catalogue.values() for entry in entries]
    padding: list[Any] = catalogue.setdefault("padding", [])
    size = len(orjson.dumps(document))
    n = 0
    while size < TARGET_MIN_BYTES:
        entry = pool[n % len(pool)]
        entry_size = len(orjson.dumps(entry)) + 1
        if size + entry_size > TARGET_MAX_BYTES:
            n += 1
            continue
        padding.append(entry)
        size += entry_size
        n += 1


def build_body() -> bytes:
    document = orjson.loads(FIXTURE.read_bytes())
    data = document["data"]
    data["mainWeaponStats"] = inflated_items(data["mainWeaponStats"])
    padded_catalogue(document)
    return orjson.dumps(document)


def median_ms(function: Callable[[bytes], Any], body: bytes, runs: int) -> float:
    for _ in range(5):  # warm-up
        function(body)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function(body)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="timed runs per figure")
    runs = parser.parse_args().runs
    body = build_body()
    items = parse_weapons(body)
    print(f"body: {len(body):,} bytes, mainWeaponStats: {len(items)} items")
    parse = median_ms(parse_weapons, body, runs)
    stdlib = median_ms(json.loads, body, runs)
    decode = median_ms(orjson.loads, body, runs)
    print(f"parse_weapons (full parse): {parse:8.3f} ms  (median of {runs})")
    print(f"json.loads (stdlib decode): {stdlib:8.3f} ms")
    print(f"orjson.loads (decode only): {decode:8.3f} ms")
    print(f"ratio parse_weapons / json.loads: {parse / stdlib:.2f}x (target < 2x)")


if __name__ == "__main__":
    main()
