"""docs/configuration.md, generated from the Settings and Policy models so it cannot drift
(a test compares the file with this output): python -m bf4ps.cli.confdoc > docs/configuration.md"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic.fields import FieldInfo

from bf4ps.policy import Policy
from bf4ps.settings import Settings

HEADER = """# Configuration reference

Generated from `bf4ps.settings.Settings` and `bf4ps.policy.Policy` by
`python -m bf4ps.cli.confdoc`; a test fails when this file and the code disagree.

## Process settings

Every process reads one settings object, built in `main()` from `BF4PS_*` environment
variables and, when `BF4PS_CONFIG_FILE` names one, a TOML file (keys without the prefix,
lower case). Environment variables win over the file.

| variable | default | meaning |
|---|---|---|
"""

POLICY = """
## Run-time policy

Stored in the `scheduler_policy` table and read by the scheduler and collectors on every
tick: change a value with `bf4ps config set KEY VALUE` (validated first), see all with
`bf4ps config show`, go back to the default with `bf4ps config unset KEY`. No restart and no
migration is needed.

| key | default | meaning |
|---|---|---|
"""

POLICY_HELP = {
    "freshness_detailed_seconds": "Active soldiers' detailed stats are refreshed after this.",
    "freshness_profile_seconds": "Active soldiers' profile is refreshed after this.",
    "freshness_weapons_seconds": "Active soldiers' weapons are refreshed after this.",
    "freshness_vehicles_seconds": "Active soldiers' vehicles are refreshed after this.",
    "active_window_seconds": "Seen by BF4SW within this: class active.",
    "recent_window_seconds": "Seen within this (but not active): class recent.",
    "aging_recent_seconds": "Rank offset of recent work (its longest wait behind active work).",
    "aging_bootstrap_seconds": "Rank offset of bootstrap work (its bounded wait).",
    "share_active": "Feeder share of the deficit for active work.",
    "share_recent": "Feeder share for recent work.",
    "share_bootstrap": "Feeder share for bootstrap work.",
    "share_retry": "Feeder share for retry-due work whose job is gone.",
    "budget_cap_active": "Fleet budget: active work's cap (share of N).",
    "budget_floor_interactive": ("Fleet budget: interactive work's reserved floor while a "
                                 "request waits and an interactive collector serves."),
    "budget_floor_bootstrap": "Fleet budget: bootstrap's reserved floor while it has work.",
    "budget_floor_retry": "Fleet budget: retries' reserved floor while they have work.",
    "working_set_background": "Runnable background jobs the feeder keeps in the queue.",
    "watermark_profile": "Detailed coverage (attempted share) at which profile joins bootstrap.",
    "watermark_weapons": "... at which weapons join bootstrap.",
    "watermark_vehicles": "... at which vehicles join bootstrap.",
    "weight_detailed": "Bootstrap mix weight of detailed.",
    "weight_profile": "Bootstrap mix weight of profile.",
    "weight_weapons": "Bootstrap mix weight of weapons.",
    "weight_vehicles": "Bootstrap mix weight of vehicles.",
    "backoff_seconds": "Retry delays after 1, 2, 3, 4+ consecutive failures (background).",
    "backoff_interactive_seconds": "The same for interactive requests.",
    "backoff_throttle_seconds": "Retry delay of a throttled job.",
    "backoff_jitter": "± fraction of jitter on every retry delay.",
    "max_consecutive_failures": ("Failures in a row, each of a parking class (a malformed "
                                 "payload), before a resource is unavailable; outages (5xx, "
                                 "redirects, timeouts, login walls, implausible answers) never "
                                 "count."),
    "unavailable_recheck_seconds": ("A parked (unavailable) resource of a soldier seen playing "
                                    "(active) is tried once more this long after its last "
                                    "attempt; 0: never."),
    "interactive_min_age_seconds": "A manual request re-collects resources older than this.",
    "circuit_window_seconds": "Fleet circuit breaker: the window its failures are counted in.",
    "circuit_min_soldiers": "Distinct soldiers failing with one signature that open a circuit.",
    "circuit_min_egresses": "... on at least this many egresses (one egress's trouble is its own).",
    "circuit_min_failure_share": ("... and at least this share of the attempts finished since "
                                  "the signature's first failure in the window."),
    "circuit_probe_seconds": "While open, one held job is released (a probe) this often.",
    "circuit_close_successes": "Successes while open that close the circuit again.",
    "circuit_hold_seconds": "Held jobs are retried after this at the latest, open or not.",
    "session_gap_seconds": ("A soldier unseen by BF4SW this long has ended his play session "
                            "(keep it well above the reconciliation interval)."),
    "final_refresh_min_play_seconds": ("An ended session (a chain across servers: its play "
                                       "summed) with at least this much play gets its "
                                       "closing detailed snapshot (final_refresh); 0: every "
                                       "session. See `bf4ps forecast` for what it costs."),
    "final_refresh_items_min_play_seconds": ("... and its closing weapons and vehicles with "
                                             "at least this much play."),
    "session_refresh_seconds": ("A session longer than this refreshes detailed each interval "
                                "(active_refresh)."),
    "scheduled_profile_seconds": ("Every known soldier's profile is refreshed this often, "
                                  "active or not (scheduled_profile); 0: never."),
    "scheduled_profile_batch": "Profiles the sweep makes due at most per run.",
    "outage_cooldown_seconds": ("An outage answer (5xx, a redirect, an error page, a timeout, "
                                "a login wall) cools its egress this long."),
    "retry_after_max_seconds": ("An answer's Retry-After cools its egress that long instead, "
                                "at most this."),
    "outage_cooldown_jitter": ("Outage cool-downs are spread over this share of "
                               "outage_cooldown_seconds (± half of it; a Retry-After only "
                               "longer), so egresses cooled by one outage resume apart."),
    "soft_throttle_run": ("Soft throttles (answers with nothing in them) among an egress's "
                          "last soft_throttle_answers answers that cool it like a 403; fewer "
                          "are transient: the job retries, the egress goes on."),
    "soft_throttle_answers": "... the answers looked at (since the egress's last cool-down).",
    "soft_throttle_window_seconds": "... and how far back they may lie at most.",
    "gate_cooldown_max_seconds": ("The longest cool-down a collector may put on its egress "
                                  "(a throttle's or an outage's): the database clamps it."),
    "gate_seed_min_interval_seconds": ("The fastest pacing a collector may seed a new "
                                       "egress's gate with: the database clamps it."),
    "lease_max_seconds": ("The longest lease a collector may take, start, renew or re-slot "
                          "(BF4PS_LEASE_SECONDS above it is cut to it): the database clamps "
                          "it."),
    "reset_confirmations": ("Answers with lifetime counters below the stored ones, agreeing "
                            "with each other, before they are believed as a Battlelog stats "
                            "reset ..."),
    "reset_min_span_seconds": "... and the time they must span at least.",
    "archive_answers_kept": ("Raw answers kept (compressed) per soldier and resource for "
                             "`bf4ps battlelog show/replay`; 0: none."),
    "archive_retention_days": "Archived raw answers older than this are removed.",
    "event_retention_days": ("Collector events older than this are removed; none younger, "
                             "whatever a caller asks (the database reads this key)."),
    "history_retention_days": "Fleet-history records (the console's charts) older than this "
                              "are removed.",
    "ledger_retention_days": ("Request-ledger rows (one per physical Battlelog request) older "
                              "than this are removed; never those inside twice the fleet "
                              "budget window."),
    "progress_ceiling_kpm": "An interval between two collections with more kills per minute "
                            "is flagged (checks after storage).",
    "progress_ceiling_spm": "An interval with a higher score per minute is flagged.",
    "progress_ceiling_accuracy_percent": "An interval with a higher accuracy (at volume) is "
                                         "flagged.",
    "progress_accuracy_min_shots": "Shots an interval needs before its accuracy is judged.",
    "progress_ceiling_headshots_per_kill": "An interval with more headshots per kill (over "
                                           "enough kills) is flagged.",
    "progress_headshots_min_kills": "Kills an interval needs before its headshots are judged.",
    "progress_check_min_seconds": "Play an interval needs before its kill and score rates are "
                                  "judged.",
    "gains_window_seconds": "The gains leaderboards' window (\"this week\").",
    "gains_board_min_seconds": "Play a soldier needs in the window to be on a gains board.",
    "gains_board_item_min_seconds": "Time with a weapon or vehicle in the window to be on its "
                                    "gains board.",
    "gains_prior_minutes": "Minutes at the population's average rate added to every sample "
                           "(smoothing: a short sample cannot top a board).",
    "gains_board_refresh_seconds": "The scheduler rebuilds the gains boards this often (and "
                                   "at once when a flag is cleared).",
}


def _default(field: FieldInfo) -> Any:
    if field.default_factory is not None:
        return "(computed)"
    if isinstance(field.default, tuple):  # a tuple of enum members shows their values
        return tuple(v.value if isinstance(v, Enum) else v for v in field.default)
    return field.default


def render() -> str:
    lines = [HEADER.rstrip("\n")]
    for name, field in Settings.model_fields.items():
        default = _default(field)
        shown = "unset" if default is None else f"`{default}`"
        if name == "data_dir":
            shown = "`/var/lib/bf4ps` as root, else `~/.local/share/bf4ps`"
        lines.append(f"| `BF4PS_{name.upper()}` | {shown} | {field.description or ''} |")
    lines.append(POLICY.rstrip("\n"))
    for name, field in Policy.model_fields.items():
        lines.append(f"| `{name}` | `{_default(field)}` | {POLICY_HELP.get(name, '')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
