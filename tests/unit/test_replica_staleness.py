"""How stale the read replica may be (web/replica.py staleness): the age of the newest sample of
the primary's WAL position the replica has replayed past, a lower bound when it is behind all."""

from __future__ import annotations

from bf4ps.web.replica import staleness

SAMPLES = [(10.0, 100), (11.0, 200), (12.0, 200), (13.0, 350)]


def test_caught_up_the_age_of_the_newest_sample() -> None:
    assert staleness(SAMPLES, 350, 13.25) == (0.25, True)
    assert staleness(SAMPLES, 400, 14.0) == (1.0, True)


def test_behind_the_newest_sample_it_replayed_past() -> None:
    # replayed to 200: it has all the primary had at 12.0 (11.0's position too), not 13.0's
    assert staleness(SAMPLES, 200, 15.0) == (3.0, True)
    assert staleness(SAMPLES, 349, 15.0) == (3.0, True)


def test_behind_every_sample_only_a_lower_bound() -> None:
    assert staleness(SAMPLES, 99, 15.0) == (5.0, False)
    assert staleness([], 99, 15.0) is None
