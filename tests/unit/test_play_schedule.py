"""The shared play schedule (sim/play.py): what BF4SW sights and what Battlelog counts agree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bf4ps.sim import play

SPEED = 60.0
ANCHOR = 1_800_000_000.0
S = play.Schedule(speed=SPEED, anchor=ANCHOR, players=1.0)
PERSONAS = st.integers(min_value=1_000_000_000, max_value=1_100_000_000_000)


@settings(max_examples=60, deadline=None)
@given(PERSONAS, st.floats(0, 40 * 3600), st.floats(1, 6 * 3600))
def test_seconds_played_are_the_sessions_between_two_instants(
        pid: int, t0: float, span: float) -> None:
    a, b = ANCHOR + t0, ANCHOR + t0 + span
    played = S.played(pid, b) - S.played(pid, a)
    overlap = sum(min(s.end, b) - max(s.start, a) for s in S.between(pid, a, b))
    assert played >= -1e-6  # a difference of two sums at epoch scale: float rounding only
    assert abs(played - overlap * SPEED) < 1e-3 * max(1.0, played)


@settings(max_examples=60, deadline=None)
@given(PERSONAS, st.floats(0, 40 * 3600))
def test_a_player_is_on_a_server_exactly_while_he_plays(pid: int, t: float) -> None:
    at, step = ANCHOR + t, 0.01
    on = S.at(pid, at)
    gained = S.played(pid, at + step) - S.played(pid, at)
    if on is None:  # off a server: nothing played, unless a session begins within the step
        assert gained < step * SPEED - 1e-6 or S.at(pid, at + step) is not None
    elif at + step < on.end:
        assert abs(gained - step * SPEED) < 1e-6
    if on is not None:
        assert on.server_name in dict(play.SERVERS).values()
        assert play.MIN_SESSION <= on.seconds * SPEED <= play.MAX_SESSION + 1e-6


def test_nothing_is_played_before_the_anchor_and_non_players_never_play() -> None:
    pid = 1_234_567_890
    assert S.played(pid, ANCHOR - 10_000) == 0 and S.at(pid, ANCHOR - 1) is None
    nobody = play.Schedule(speed=SPEED, anchor=ANCHOR, players=0.0)
    assert nobody.played(pid, ANCHOR + 86_400) == 0 and not nobody.between(pid, ANCHOR,
                                                                             ANCHOR + 86_400)
