"""The demo's one time factor, `--speed` S: S simulated seconds pass per real second.

It compresses the simulated world and BF4PS's refresh policy alike:
* BF4SW's activity (`simulate bf4sw --live --rate S`) and its players' sessions (sim/play.py:
  a 15-60 minute session in a 2-hour cycle takes 15-60 s in a 2-minute cycle at S = 60);
* the Battlelog simulator's clock (`speed`: counters grow with simulated play; latencies ÷ S);
* the policy's time windows and refresh intervals (POLICY_SCALED below), divided by S, so a
  soldier is refreshed as often per simulated day as the shipped policy refreshes him per day.
Not scaled: the collectors' pacing (real seconds against the simulator's real rate limits: a
capacity, not a time), retry backoffs, circuits, retention. The intake looks at BF4SW every
sync_seconds (reconciliation: 5 x); forecasts are recorded every simulated hour.
"""

from __future__ import annotations

import json

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn

# an hour and a half a minute: five minutes hold seven and a half simulated hours, three
# sessions of a player who plays
DEFAULT_SPEED = 90.0
PACE_SECONDS = 1.0  # each demo egress: one request a second (plus its margin)
SYNC_SECONDS = 2.0  # BF4PS_BF4SW_SYNC_SECONDS up to speed 60: reconciliation every 10 s


def sync_seconds(speed: float) -> float:
    """The intake's interval, shorter above 60: a soldier still on his server is seen again at
    each reconciliation, which must stay well within the scaled session gap (20 s at 60, twice
    the reconciliation's 10 s) or each session falls apart into sightings."""
    return SYNC_SECONDS * min(1.0, 60.0 / speed)
# soldiers playing sessions by the schedule (about; a share of the BF4SW population): as many
# as the demo's capacity serves with their first collections and every session's closing ones
# (some 10 requests a player over five simulated hours), whatever the population
SESSION_PLAYERS = 50


def session_players(soldiers: int) -> float:
    """The share of the population that plays sessions (the simulators' --session-players)."""
    return min(1.0, SESSION_PLAYERS / max(soldiers, 1))
# random sightings, new soldiers and renames at a fifth of the census's volume: at the demo's
# capacity (four egresses at a request a second) the players' sessions stay visible
ACTIVITY = 0.2
POLICY_SCALED = (
    "freshness_detailed_seconds", "freshness_profile_seconds", "freshness_weapons_seconds",
    "freshness_vehicles_seconds", "interactive_min_age_seconds", "active_window_seconds",
    "recent_window_seconds", "session_gap_seconds", "session_refresh_seconds",
    "scheduled_profile_seconds", "gains_board_refresh_seconds")
# the closing snapshots (simulated seconds of play, scaled like the windows): the demo brackets
# every session with detailed and those of 20 minutes or more (most of the simulator's 15-60)
# with weapons and vehicles too, where the fleet's defaults, chosen for the documented budget,
# ask 2 h and 8 h, longer than any simulated session
FINAL_MIN_PLAY = 0.0
FINAL_ITEMS_MIN_PLAY = 20 * 60.0
# the weekly per-weapon board: a minute with a weapon within the window (the fleet's: 30),
# as a few simulated hours hold a fraction of a week's play
BOARD_ITEM_MIN_SECONDS = 60.0


# a soldier's four resources fed together (no watermarks, equal weights): every soldier the
# home page links has weapons and vehicles, not only the detailed stats bootstrap starts with
MIX = {"watermark_profile": 0.0, "watermark_weapons": 0.0, "watermark_vehicles": 0.0,
       "weight_detailed": 1.0, "weight_profile": 1.0, "weight_weapons": 1.0,
       "weight_vehicles": 1.0}


FORECAST_RECORD_FLOOR = 10.0  # seconds: a forecast record at least this far apart


def forecast_record_seconds(speed: float) -> float:
    """The scheduler's hourly forecast record, scaled: an hour of simulated time."""
    return max(FORECAST_RECORD_FLOOR, 3600.0 / speed)


def policy_overrides(speed: float) -> dict[str, object]:
    shipped = policy_mod.Policy()
    out: dict[str, object] = {k: float(getattr(shipped, k)) / speed for k in POLICY_SCALED}
    out["final_refresh_min_play_seconds"] = FINAL_MIN_PLAY / speed
    out["final_refresh_items_min_play_seconds"] = FINAL_ITEMS_MIN_PLAY / speed
    out["gains_board_item_min_seconds"] = BOARD_ITEM_MIN_SECONDS
    out.update(MIX)
    return out


async def apply(conn: Conn, speed: float) -> None:
    """Store the scaled policy (as `bf4ps config set` would)."""
    for key, value in policy_overrides(speed).items():
        await policy_mod.set_value(conn, key, json.dumps(value), by="demo")
