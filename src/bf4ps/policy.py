"""Run-time scheduling policy: defaults here, overrides in the scheduler_policy table.

`bf4ps config set KEY VALUE` validates a value against this model before storing it, so the
scheduler and collectors never read a policy they cannot use. No migration is ever needed to
change a weight, a watermark or an interval.
"""

from __future__ import annotations

import json
import logging
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bf4ps.db.connect import Conn
from bf4ps.db.queries import all_rows, q
from bf4ps.domain import Lane, PriorityClass, Resource

log = logging.getLogger(__name__)
_WARNED: set[str] = set()

DAY = 86_400
WEEK = 7 * DAY


class Policy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # eligibility: refresh intervals for soldiers in the active window. Chosen to fit the
    # documented population (25,000 seen a day, 73,000 a week, 2,400 new a day) under the
    # documented budget (1,296 requests/h, active cap 75 %): about 860 requests/h; the
    # existing deployment's daily/weekly refresh would need about 2,800/h. See
    # docs/operations.md "Capacity planning" and `bf4ps forecast`.
    freshness_detailed_seconds: float = Field(WEEK, gt=0)
    freshness_profile_seconds: float = Field(8 * WEEK, gt=0)
    freshness_weapons_seconds: float = Field(8 * WEEK, gt=0)
    freshness_vehicles_seconds: float = Field(8 * WEEK, gt=0)
    interactive_min_age_seconds: float = Field(
        3600, ge=0, description="A manual request re-collects a resource older than this.")
    active_window_seconds: float = Field(DAY, gt=0)
    recent_window_seconds: float = Field(WEEK, gt=0)
    # play sessions (scheduler/sessions.py): a soldier unseen for the gap has ended his session;
    # its final refresh collects detailed once when it had at least final_refresh_min_play
    # seconds of play, weapons and vehicles too when it had at least the items' minimum (the
    # freshness interval does not apply: it is the snapshot that closes the session; a chain
    # of sessions across servers counts as one, its play summed; 0 brackets every session).
    # Chosen with the forecast: at the documented census (25,000 seen a day, a session each,
    # their lengths as the census's concurrency implies) the shipped minimums keep the whole
    # demand within the documented budget; see docs/operations.md "Capacity planning".
    # A stale resource of a soldier on a server waits for his session's end instead of being
    # collected at the sighting. A session longer than session_refresh_seconds gets an active
    # refresh of detailed each interval; every known soldier's profile is refreshed every
    # scheduled_profile_seconds whether active or not (0: never), at most
    # scheduled_profile_batch made due per sweep.
    session_gap_seconds: float = Field(1200, gt=0)
    final_refresh_min_play_seconds: float = Field(2 * 3600, ge=0)
    final_refresh_items_min_play_seconds: float = Field(8 * 3600, ge=0)
    session_refresh_seconds: float = Field(7200, gt=0)
    scheduled_profile_seconds: float = Field(13 * WEEK, ge=0)
    scheduled_profile_batch: int = Field(500, ge=1, le=100_000)
    # fairness: rank offsets (aging) and feeder shares per class
    aging_recent_seconds: float = Field(600, ge=0)
    aging_bootstrap_seconds: float = Field(1800, ge=0)
    # (active > recent > bootstrap, the seed's class order: under sustained active demand each
    # class is fed in these proportions, so recent work is never fed behind bootstrap work)
    share_active: float = Field(0.60, ge=0, le=1)
    share_recent: float = Field(0.20, ge=0, le=1)
    share_bootstrap: float = Field(0.15, ge=0, le=1)
    share_retry: float = Field(0.05, ge=0, le=1)
    # fleet budget class shares (physical requests per rolling window): caps and floors;
    # a floor is reserved only while that class has runnable work (unused shares are borrowed).
    # Interactive work is never held back by another class's floor; its own floor keeps
    # background work from taking the window's last slots while a player's request waits (and
    # an interactive collector serves).
    budget_cap_active: float = Field(0.75, ge=0, le=1)
    budget_floor_interactive: float = Field(0.25, ge=0, le=1)
    budget_floor_bootstrap: float = Field(0.20, ge=0, le=1)
    budget_floor_retry: float = Field(0.05, ge=0, le=1)
    # bounded feeder
    working_set_background: int = Field(200, ge=1, le=100_000)
    # progressive bootstrap mix: a resource joins once detailed coverage (attempted share)
    # reaches its watermark; joined resources are fed in proportion to their weights.
    watermark_profile: float = Field(0.05, ge=0, le=1)
    watermark_weapons: float = Field(0.25, ge=0, le=1)
    watermark_vehicles: float = Field(0.25, ge=0, le=1)
    weight_detailed: float = Field(6, ge=0)
    weight_profile: float = Field(2, ge=0)
    weight_weapons: float = Field(1, ge=0)
    weight_vehicles: float = Field(1, ge=0)
    # retries
    backoff_seconds: tuple[float, ...] = (900, 3600, 21_600, 86_400)
    backoff_interactive_seconds: tuple[float, ...] = (20, 60, 300, 1800)
    backoff_throttle_seconds: float = Field(60, ge=0)
    backoff_jitter: float = Field(0.1, ge=0, le=1)
    max_consecutive_failures: int = Field(10, ge=1)
    unavailable_recheck_seconds: float = Field(WEEK, ge=0)  # 0: a parked resource stays parked
    # fleet circuit breaker (per lane + resource): it opens when, within the window, at least
    # circuit_min_soldiers distinct soldiers failed with one signature on at least
    # circuit_min_egresses egresses and those failures are at least circuit_min_failure_share
    # of the finished attempts; while open one held job is released per probe interval; it
    # closes after circuit_close_successes successes. Held jobs are retried after at most
    # circuit_hold_seconds whatever happens.
    circuit_window_seconds: float = Field(300, gt=0)
    circuit_min_soldiers: int = Field(3, ge=2)
    circuit_min_egresses: int = Field(2, ge=1)
    circuit_min_failure_share: float = Field(0.5, gt=0, le=1)
    circuit_probe_seconds: float = Field(60, gt=0)
    circuit_close_successes: int = Field(2, ge=1)
    circuit_hold_seconds: float = Field(3600, gt=0)
    # progress (stats/gains.py): checks after storage flag an interval whose rates exceed these
    # ceilings (rates over at least progress_check_min_seconds of play; accuracy at volume;
    # headshots per kill over enough kills); a flagged soldier is on no leaderboard until
    # an operator clears the flag (`bf4ps flags clear`).
    progress_ceiling_kpm: float = Field(5.0, gt=0)
    progress_ceiling_spm: float = Field(2500, gt=0)
    progress_ceiling_accuracy_percent: float = Field(60, gt=0, le=100)
    progress_accuracy_min_shots: int = Field(500, ge=1)
    progress_ceiling_headshots_per_kill: float = Field(0.9, gt=0, le=1)
    progress_headshots_min_kills: int = Field(30, ge=1)
    progress_check_min_seconds: float = Field(120, ge=0)
    # gains leaderboards ("this week"): rebuilt by the scheduler every refresh period from the
    # checked, unflagged intervals of the window; a soldier needs the minimum time in it
    # (weapons and vehicles: their own minimum), and rates are smoothed toward the platform's
    # average as if the prior minutes had been played at it.
    gains_window_seconds: float = Field(WEEK, gt=0)
    gains_board_min_seconds: float = Field(3600, gt=0)
    gains_board_item_min_seconds: float = Field(1800, gt=0)
    gains_prior_minutes: float = Field(60, ge=0)
    gains_board_refresh_seconds: float = Field(300, gt=0)
    # outages (5xx, redirects, error pages, timeouts): the egress cools this long, or for the
    # answer's Retry-After (at most retry_after_max_seconds)
    outage_cooldown_seconds: float = Field(5, ge=0)
    retry_after_max_seconds: float = Field(900, ge=0)
    # ... spread over this share of outage_cooldown_seconds: the plain cool-down ± half of it,
    # a Retry-After plus up to all of it (egresses cooled by one outage resume apart)
    outage_cooldown_jitter: float = Field(0.5, ge=0, le=2)
    # soft throttles (an answer with nothing in it): alone, transient (the job retries, the
    # egress goes on); soft_throttle_run of the egress's last soft_throttle_answers answers
    # (since its last cool-down, within soft_throttle_window_seconds) cool it like a 403
    soft_throttle_run: int = Field(4, ge=1)
    soft_throttle_answers: int = Field(5, ge=1)
    soft_throttle_window_seconds: float = Field(600, gt=0)
    # the bounds the database holds a collector to, whatever it passes (db/functions/gates.sql):
    # no egress cools longer than gate_cooldown_max_seconds (a throttle's or an outage's), no
    # collector seeds a gate faster than gate_seed_min_interval_seconds
    gate_cooldown_max_seconds: float = Field(1800, gt=0)
    gate_seed_min_interval_seconds: float = Field(0.05, gt=0)
    # ... and no lease a collector takes, starts, renews or re-slots runs longer than this
    # (db/functions/queue.sql; BF4PS_LEASE_SECONDS above it is cut to it)
    lease_max_seconds: float = Field(1800, gt=0)
    # plausibility (stats/plausible.py): a stats reset (lifetime counters lower than stored) is
    # believed after reset_confirmations agreeing answers spanning reset_min_span_seconds
    reset_confirmations: int = Field(3, ge=2)
    reset_min_span_seconds: float = Field(DAY, ge=0)
    # the raw answers archive (stats/archive.py): answers kept per soldier + resource (0: none)
    # and for how many days
    archive_answers_kept: int = Field(3, ge=0, le=100)
    archive_retention_days: float = Field(14, ge=1)
    # retention
    event_retention_days: float = Field(180, ge=1)
    ledger_retention_days: float = Field(180, ge=1)
    history_retention_days: float = Field(180, ge=1)

    def freshness(self, resource: Resource) -> float:
        return float(getattr(self, f"freshness_{resource.value}_seconds"))

    def final_refresh_min_play(self, resource: Resource) -> float | None:
        """The play an ended session needs for this resource's closing snapshot (None: the
        resource is never collected at a session's end)."""
        if resource is Resource.DETAILED:
            return self.final_refresh_min_play_seconds
        if resource in (Resource.WEAPONS, Resource.VEHICLES):
            return self.final_refresh_items_min_play_seconds
        return None

    def backoff_steps(self, lane: Lane) -> tuple[float, ...]:
        if lane is Lane.INTERACTIVE:
            return self.backoff_interactive_seconds
        return self.backoff_seconds

    def aging(self, klass: PriorityClass) -> float:
        if klass is PriorityClass.RECENT:
            return self.aging_recent_seconds
        if klass is PriorityClass.BOOTSTRAP:
            return self.aging_bootstrap_seconds
        return 0.0


class PolicyError(ValueError):
    pass


def parse_value(key: str, raw: str) -> Any:
    """A CLI value: JSON if it parses (numbers, lists), else the plain string."""
    if key not in Policy.model_fields:
        raise PolicyError(f"unknown policy key {key!r}; see `bf4ps config show`")
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} "
                     f"(got {e.get('input')!r})" for e in exc.errors())


def validated(overrides: dict[str, Any]) -> Policy:
    try:
        return Policy(**overrides)
    except ValidationError as exc:
        raise PolicyError(_problems(exc)) from None


class _Override(NamedTuple):
    key: str
    value: object  # the setting's JSON value, validated by Policy


async def load(conn: Conn) -> Policy:
    """The stored overrides over the defaults. A stored value this version refuses (its rule
    got stricter) falls back to the default with a warning instead of stopping every
    process that loads the policy."""
    overrides = dict(await all_rows(conn, _Override, "policy_overrides"))
    known = {k: v for k, v in overrides.items() if k in Policy.model_fields}
    try:
        return Policy.model_validate(known)
    except ValidationError as exc:
        bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
        problems = _problems(exc)
        if problems not in _WARNED:  # loaded every tick: say it once per process
            _WARNED.add(problems)
            log.warning("policy: stored values ignored, defaults used instead: %s", problems)
        return validated({k: v for k, v in known.items() if k not in bad})


async def set_value(conn: Conn, key: str, raw: str, *, by: str) -> Policy:
    value = parse_value(key, raw)
    current = await load(conn)
    merged = current.model_dump()
    merged[key] = value
    policy = validated(merged)
    stored = policy.model_dump(mode="json")[key]
    await conn.execute(q("policy_set"), {"key": key, "value": json.dumps(stored), "by": by})
    return policy


async def unset_value(conn: Conn, key: str) -> None:
    if key not in Policy.model_fields:
        raise PolicyError(f"unknown policy key {key!r}")
    await conn.execute(q("policy_unset"), {"key": key})
