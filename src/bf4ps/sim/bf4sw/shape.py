"""The real BF4SW population's shape (census 2026-10-06, 188,364 soldiers; upstream-facts §3).

* Platforms: PC 65 %, PS4 17 %, Xbox One 18 %, in BF4SW's own strings: "PC"; "PS4" (85 %) or
  "PS5" (15 %); "XBox" (70 %), "XBoxOne" (25 %) or "XBoxSeries" (5 %); ~1 % of console
  personas are later seen under a second string too (a console upgrade: a second alias row).
* Last seen: < 1 h 2.1 %, 1-6 h 4.2 %, 6-24 h 7.0 %, 1-7 d 25.4 %, 7-30 d 42.8 %, older 18.6 %,
  the oldest up to two years back (density falling with age).
* First seen: 15 % of those seen within 7 days are newcomers (first seen under a day before
  their last sighting: ~2,400 new per day at full scale); the others ~5 months (exponential).
* Name changes: 3 % of personas have 2 (75 %) or 3 (25 %) alias names over time.
Quotas (exact, shuffled) and samplers: a 3,000-soldier population has the real proportions.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from bf4ps.domain import Platform

HOUR = 3600.0
DAY = 24 * HOUR
HISTORY = 730 * DAY

PLATFORM_SHARES: tuple[tuple[Platform, float], ...] = (
    (Platform.PC, 0.65), (Platform.PS4, 0.17), (Platform.XBOXONE, 0.18))
RAW_STRINGS: dict[Platform, tuple[tuple[str, float], ...]] = {
    Platform.PC: (("PC", 1.0),),
    Platform.PS4: (("PS4", 0.85), ("PS5", 0.15)),
    Platform.XBOXONE: (("XBox", 0.70), ("XBoxOne", 0.25), ("XBoxSeries", 0.05)),
}
UPGRADES = {"PS4": "PS5", "XBox": "XBoxSeries", "XBoxOne": "XBoxSeries"}
UPGRADE_SHARE = 0.01

# (lower bound, upper bound) of the age of last_seen in seconds, and the share of personas
LAST_SEEN_BUCKETS: tuple[tuple[float, float, float], ...] = (
    (0.0, HOUR, 0.0209),
    (HOUR, 6 * HOUR, 0.0416),
    (6 * HOUR, DAY, 0.0697),
    (DAY, 7 * DAY, 0.2545),
    (7 * DAY, 30 * DAY, 0.4277),
    (30 * DAY, HISTORY, 0.1856),
)
NEWCOMER_SHARE = 0.15
NEWCOMER_WINDOW = 7 * DAY
VETERAN_MEAN_GAP = 150 * DAY
RENAME_SHARE = 0.03
THIRD_NAME_SHARE = 0.25
MIN_RENAME_SPAN = 2 * HOUR

T = TypeVar("T")


def quota(n: int, shares: Sequence[float]) -> list[int]:
    """n split by shares, largest remainders first: the counts add up to n exactly."""
    total = sum(shares)
    exact = [n * s / total for s in shares]
    counts = [int(x) for x in exact]
    order = sorted(range(len(shares)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


def shuffled_quota(rng: random.Random, n: int, items: Sequence[tuple[T, float]]) -> list[T]:
    counts = quota(n, [share for _, share in items])
    out = [item for (item, _), count in zip(items, counts, strict=True) for _ in range(count)]
    rng.shuffle(out)
    return out


def last_seen_age(rng: random.Random, bucket: tuple[float, float, float]) -> float:
    lo, hi, _ = bucket
    if hi >= HISTORY:  # the long tail: fewer personas the longer ago
        return lo + (hi - lo) * rng.random() ** 2
    return rng.uniform(lo, hi)


def first_seen_age(rng: random.Random, last_age: float) -> float:
    """Age of first_seen, never younger than last_seen's age, never beyond the history."""
    if last_age < NEWCOMER_WINDOW and rng.random() < NEWCOMER_SHARE:
        gap = rng.uniform(0.0, DAY)
    else:
        gap = rng.expovariate(1.0 / VETERAN_MEAN_GAP)
    if last_age + gap > HISTORY:  # BF4SW's history is finite: somewhere within it
        gap = rng.uniform(0.0, max(0.0, HISTORY - last_age))
    return last_age + gap


def raw_string(rng: random.Random, platform: Platform) -> str:
    strings = RAW_STRINGS[platform]
    return rng.choices([s for s, _ in strings], [w for _, w in strings])[0]


def alias_count(rng: random.Random, span: float) -> int:
    if span < MIN_RENAME_SPAN or rng.random() >= RENAME_SHARE:
        return 1
    return 3 if rng.random() < THIRD_NAME_SHARE else 2


def split_span(rng: random.Random, first_age: float, last_age: float,
               parts: int) -> list[tuple[float, float]]:
    """(first age, last age) of each alias, oldest first: one name after the other, each last
    seen a little before the next one is first seen."""
    cuts = sorted((rng.uniform(last_age, first_age) for _ in range(parts - 1)), reverse=True)
    bounds = [first_age, *cuts, last_age]
    out = []
    for i in range(parts):
        start, end = bounds[i], bounds[i + 1]
        if i < parts - 1:
            end += min(HOUR, (start - end) / 2)
        out.append((start, end))
    return out
