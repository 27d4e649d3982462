"""stats/gains.py over arbitrary snapshot sequences (gaps, failed and partial collections,
Battlelog stats resets): gains are never negative, a reset carries none and is shown as one,
gains start and end only at good snapshots, and they sum to the total change (less the jumps
of the reset intervals)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from bf4ps.stats import gains
from bf4ps.stats.gains import ItemSnapshot, SoldierSnapshot

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REQUIRED = gains.SOLDIER_REQUIRED


@st.composite
def soldier_sequences(draw: st.DrawFn) -> list[SoldierSnapshot]:
    """Counters that mostly grow, with gaps in time, failed collections (ok=False, any values),
    partial ones (a required counter missing) and resets (every counter back to small)."""
    n = draw(st.integers(0, 25))
    at, values = T0, {name: draw(st.integers(0, 10_000)) for name in gains.SOLDIER_COUNTERS}
    rank = draw(st.integers(0, 140))
    out = []
    for _ in range(n):
        at += timedelta(minutes=draw(st.integers(1, 60 * 24 * 3)))  # a gap of up to 3 days
        step = draw(st.sampled_from(["grow", "grow", "grow", "same", "failed", "partial",
                                     "reset"]))
        if step == "reset":
            values = {k: draw(st.integers(0, v)) for k, v in values.items()}
            rank = draw(st.integers(0, rank))
        elif step in ("grow", "same"):
            values = {k: v + (draw(st.integers(0, 500)) if step == "grow" else 0)
                      for k, v in values.items()}
            rank += draw(st.integers(0, 2)) if step == "grow" else 0
        snap = SoldierSnapshot(at=at, rank=rank, **values)
        if step == "failed":
            snap = replace(snap, ok=False, kills=draw(st.integers(0, 10**6)))
        elif step == "partial":
            snap = replace(snap, **{draw(st.sampled_from(REQUIRED)): None})
        out.append(snap)
    return out


@settings(max_examples=400, deadline=None)
@given(soldier_sequences(), st.randoms())
def test_soldier_gains_are_honest(snaps: list[SoldierSnapshot], rnd: object) -> None:
    shuffled = list(snaps)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    found = gains.soldier_gains(shuffled)  # order of the input does not matter
    good = [s for s in snaps if gains.good(s)]
    good_times = {s.at for s in good}
    assert len(found) == max(0, len(good) - 1)
    for g in found:
        assert g.started_at in good_times and g.ended_at in good_times and g.ended_at > g.started_at
        for name in gains.SOLDIER_COUNTERS:
            value = getattr(g, name)
            assert value is None or value >= 0, (name, g)
        if g.reset:
            assert (g.kills, g.deaths, g.score, g.seconds) == (0, 0, 0, 0)
            assert g.rank_ups == 0
    by_end = {g.ended_at: g for g in found}
    for name in REQUIRED:
        jumps = sum(getattr(b, name) - getattr(a, name)
                    for a, b in pairwise(good) if by_end[b.at].reset)
        total = getattr(good[-1], name) - getattr(good[0], name) if good else 0
        assert sum(getattr(g, name) for g in found) == total - jumps
        if not any(g.reset for g in found):
            assert sum(getattr(g, name) for g in found) == total
    t = gains.totals(found)
    assert t.kills == sum(g.kills for g in found) and t.resets == sum(g.reset for g in found)
    assert t.kills >= 0 and t.seconds >= 0 and t.rank_ups >= 0


@st.composite
def item_sequences(draw: st.DrawFn) -> list[ItemSnapshot]:
    n = draw(st.integers(0, 20))
    at, kills, secs, stars = T0, draw(st.integers(0, 999)), draw(st.integers(0, 99_999)), 0
    out = []
    for _ in range(n):
        at += timedelta(minutes=draw(st.integers(1, 10_000)))
        step = draw(st.sampled_from(["grow", "grow", "failed", "partial", "reset"]))
        if step == "reset":
            kills, secs = draw(st.integers(0, kills)), draw(st.integers(0, secs))
        elif step == "grow":
            kills += draw(st.integers(0, 50))
            secs += draw(st.integers(0, 3000))
            stars += draw(st.integers(0, 1))
        snap = ItemSnapshot(at=at, kills=kills, seconds=secs, stars=stars,
                            ok=step != "failed")
        out.append(replace(snap, kills=None) if step == "partial" else snap)
    return out


@settings(max_examples=300, deadline=None)
@given(item_sequences())
def test_item_gains_are_honest(snaps: list[ItemSnapshot]) -> None:
    found = gains.item_gains(snaps)
    good = [s for s in snaps if gains.good(s)]
    assert len(found) == max(0, len(good) - 1)
    assert all(g.kills >= 0 and g.seconds >= 0 and g.stars >= 0 for g in found)
    assert all(g.kills == 0 and g.seconds == 0 for g in found if g.reset)
    jumps = sum(b.kills - a.kills for a, b, g in zip(good, good[1:], found, strict=False)
                if g.reset)
    total = good[-1].kills - good[0].kills if good else 0
    assert sum(g.kills for g in found) == total - jumps  # type: ignore[operator]
    t = gains.totals(found)
    assert t.kills == sum(g.kills for g in found) and t.stars == sum(g.stars for g in found)


def test_a_counter_that_went_down_is_a_reset_not_a_negative_gain() -> None:
    a = SoldierSnapshot(T0, kills=500, deaths=400, score=90_000, seconds=36_000, rank=40)
    b = SoldierSnapshot(T0 + timedelta(hours=1), kills=3, deaths=2, score=900, seconds=600,
                        rank=1)
    g = gains.soldier_gain(a, b)
    assert g is not None and g.reset and g.kills == 0 and g.rank_ups == 0


def test_a_partial_snapshot_is_bridged() -> None:
    a = SoldierSnapshot(T0, kills=10, deaths=10, score=1000, seconds=600)
    partial = SoldierSnapshot(T0 + timedelta(hours=1), kills=None, deaths=12, score=1500,
                              seconds=900)
    c = SoldierSnapshot(T0 + timedelta(hours=2), kills=30, deaths=20, score=4000, seconds=1800)
    [g] = gains.soldier_gains([a, partial, c])
    assert (g.started_at, g.ended_at, g.kills, g.seconds) == (a.at, c.at, 20, 1200)
    assert g.kpm == 1.0 and g.spm == 150.0


def test_ceilings_flag_only_what_no_honest_interval_does() -> None:
    c = gains.Ceilings(kpm=5, spm=2500, accuracy_percent=60, accuracy_min_shots=500,
                       headshots_per_kill=0.9, headshots_min_kills=30, min_seconds=120)
    honest = gains.SoldierGain(T0, T0 + timedelta(hours=1), kills=40, deaths=20, score=30_000,
                               seconds=1800, headshots=8, shots_fired=900, shots_hit=150)
    assert gains.breaches(honest, c) == []
    cheat = replace(honest, kills=600, headshots=590, shots_hit=880)
    reasons = gains.breaches(cheat, c)
    assert [r.split(" ")[0] for r in reasons] == ["kills", "accuracy", "headshots"]
    short = replace(cheat, seconds=60, shots_fired=100, shots_hit=99, kills=20, headshots=20)
    assert gains.breaches(short, c) == []  # too little to judge
    assert gains.breaches(replace(cheat, reset=True), c) == []


def test_smoothing_pulls_a_short_sample_toward_the_average() -> None:
    short = gains.smoothed(20, 120, prior_rate=1.0, prior_minutes=60)  # 10 KPM for 2 minutes
    long = gains.smoothed(600, 300 * 60, prior_rate=1.0, prior_minutes=60)  # 2 KPM for 5 h
    assert short < long < 2.0 and 1.0 < short < 1.3
