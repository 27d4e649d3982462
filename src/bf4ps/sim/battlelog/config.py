"""Every knob of the Battlelog simulator, in one mutable dataclass changeable at run time.

Time units: latencies, the timeout hold and the activity clock are scaled by `speed` (latency is
divided by it, simulated play time advances `speed` times faster). Rate-limit knobs (min_interval,
window, penalty, tolerance, fleet window) are in real seconds and never scaled: they judge what the
collectors really put on the wire.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

THROTTLE_MODES = ("403", "429", "html", "soft", "none")
CHECK_SUM_MODES = ("ignored", "required")
LOGIN_WALL_MODES = ("none", "search", "stats", "both")
_CHOICES = {"throttle_status": THROTTLE_MODES, "search_check_sum": CHECK_SUM_MODES,
            "login_wall": LOGIN_WALL_MODES}
FAULT_KNOBS = (
    "fault_5xx",
    "fault_timeout",
    "fault_html",
    "fault_error",
    "fault_missing_general",
    "fault_unknown",
    "fault_unknown_error",
    "fault_soft_throttle",
    "fault_zeros",
    "fault_decrease",
    "fault_login_redirect",
    "fault_retry_after",
    "fault_other_game",
    "fault_other_endpoint",
)
READ_ONLY = frozenset({"host", "port"})
Knob: TypeAlias = str | int | float | None  # the value of any one knob

_FLOATS = frozenset(
    {
        "speed",
        "min_interval",
        "window_seconds",
        "penalty",
        "tolerance",
        "fleet_window",
        "timeout_hold",
        "active_fraction",
        "session_players",
        "play_anchor",
        "session_seconds",
        *FAULT_KNOBS,
    }
)
_OPTIONAL_INTS = frozenset({"window_requests", "fleet_budget", "search_cap",
                            "empty_search_after"})
_INTS = frozenset({"seed", "violations_kept", "session_redirects", "retry_after_seconds"})
_STRINGS = frozenset({"unknown_error_message"})


class ConfigError(ValueError):
    """A knob value the simulator refuses."""


@dataclass(slots=True)
class SimConfig:
    host: str = "127.0.0.1"
    port: int = 8401
    speed: float = 1.0
    # per source IP: minimum spacing (0 = off) and/or at most N per rolling window
    min_interval: float = 5.0
    window_requests: int | None = None
    window_seconds: float = 20.0
    # 403 | 429 | html (HTTP 200 page) | soft (a streak: every answer of the penalty is an
    # HTTP 200 success without its stats, a soft throttle) | none (count only)
    throttle_status: str = "403"
    penalty: float = 60.0  # cool-down after a violation, every request answered throttled
    tolerance: float = 0.0  # an arrival this much too early is not yet a violation
    # fleet: at most N requests across all IPs per rolling window (counted, still served)
    fleet_budget: int | None = None
    fleet_window: float = 3600.0
    # fault rates, each a probability per request (mutually exclusive, checked in this order)
    fault_timeout: float = 0.0
    fault_5xx: float = 0.0
    fault_html: float = 0.0
    fault_error: float = 0.0
    fault_missing_general: float = 0.0  # detailed only
    fault_unknown: float = 0.0
    # answers BF4PS must not take for truths: an error envelope in a wording nobody has seen
    # (stats resources), and soft throttles (a null body, or a success without its stats)
    fault_unknown_error: float = 0.0
    fault_soft_throttle: float = 0.0
    unknown_error_message: str = "ERR_SERVICE_ANSWER_CHANGED"
    # well-formed and wrong (stats resources): every counter 0, or every counter halved
    fault_zeros: float = 0.0
    fault_decrease: float = 0.0
    # Battlelog not itself (stats resources): a 302 to EA's login page, a 503 with Retry-After
    fault_login_redirect: float = 0.0
    fault_retry_after: float = 0.0
    retry_after_seconds: int = 30
    # not BF4's answer to this request (stats resources): another game's (a BF3 or Hardline
    # statsTemplate, Hardline's rank 150), or another BF4 endpoint's answer (distort.py)
    fault_other_game: float = 0.0
    fault_other_endpoint: float = 0.0
    timeout_hold: float = 120.0  # a timeout fault holds the request this long / speed
    active_fraction: float = 0.3  # personas whose counters grow with (simulated) time
    # personas that play sessions (sim/play.py, the same schedule the BF4SW simulator sights):
    # their counters grow only while they play, by the seconds played; `active_fraction` does
    # not apply to them. The schedule runs at `speed` from `play_anchor` (unix seconds).
    session_players: float = 0.0
    play_anchor: float = 1_767_225_600.0
    # search's post-check-sum (first 10 characters of a session cookie the start page set):
    # ignored (older Battlelog: query= alone works) | required (else an error envelope)
    search_check_sum: str = "ignored"
    # a login wall: searches without a logged-in session (POST /__sim/login makes one) answer
    # an empty list; stats answer a GATE_REDIRECT error envelope
    login_wall: str = "none"
    # logged-in sessions expire this many (real) seconds after the login (0: never); with
    # login_wall "stats" or "both" this is the gated mode: stats need a valid session
    session_seconds: float = 0.0
    # the start page redirects this many times (each hop sets a cookie) before its session
    session_redirects: int = 0
    # search treats an unescaped `_` as any one character (and `%` as any run) and returns at
    # most search_cap personas (None: all), the wildcard matches first
    search_cap: int | None = None
    # search lies after a good answer: once this many searches (counted from when the knob was
    # set) answered personas, every later search answers an empty list (None: off)
    empty_search_after: int | None = None
    seed: int = 0
    violations_kept: int = 1000

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if not self.speed > 0:
            raise ConfigError("speed must be > 0")
        for name in ("min_interval", "penalty", "tolerance", "timeout_hold", "session_seconds"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0")
        for name in ("window_seconds", "fleet_window"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0")
        for name in _OPTIONAL_INTS:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1 or null")
        for name in (*FAULT_KNOBS, "active_fraction", "session_players"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be within [0, 1]")
        self._validate_choices()
        if self.violations_kept < 1:
            raise ConfigError("violations_kept must be >= 1")
        self._validate_new_knobs()

    def _validate_new_knobs(self) -> None:
        if self.search_cap is not None and self.search_cap < 1:
            raise ConfigError("search_cap must be >= 1 or null")
        if self.empty_search_after is not None and self.empty_search_after < 0:
            raise ConfigError("empty_search_after must be >= 0 or null")
        if not 0 <= self.session_redirects <= 10:
            raise ConfigError("session_redirects must be within [0, 10]")
        if not 0 <= self.retry_after_seconds <= 86_400:
            raise ConfigError("retry_after_seconds must be within [0, 86400]")
        if not 0 < len(self.unknown_error_message) <= 200:
            raise ConfigError("unknown_error_message must be 1-200 characters")

    def _validate_choices(self) -> None:
        for name, choices in _CHOICES.items():
            if getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}")

    def as_dict(self) -> dict[str, Knob]:
        """Every knob by name (the JSON of /__sim/config)."""
        return dataclasses.asdict(self)

    def update(self, changes: Mapping[str, object]) -> dict[str, Knob]:
        """Apply `changes` atomically (all or nothing); return the knobs that changed."""
        coerced = {name: _coerce(name, value) for name, value in changes.items()}
        candidate = dataclasses.replace(self)
        for name, value in coerced.items():
            setattr(candidate, name, value)
        candidate.validate()
        changed: dict[str, Knob] = {}
        for name, value in coerced.items():
            if getattr(self, name) != value:
                changed[name] = value
            setattr(self, name, getattr(candidate, name))
        return changed


def _coerce(name: str, value: object) -> Knob:
    if name in READ_ONLY:
        raise ConfigError(f"{name} cannot change at run time")
    if isinstance(value, bool):
        raise ConfigError(f"{name}: booleans are not accepted")
    if name in _FLOATS:
        return _number(name, value, float)
    if name in _INTS:
        return int(_number(name, value, int))
    if name in _OPTIONAL_INTS:
        return None if value is None else int(_number(name, value, int))
    if name in _CHOICES:
        return str(value)
    if name in _STRINGS:
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string")
        return value
    raise ConfigError(f"unknown knob {name!r}")


def _number(name: str, value: object, kind: type[float] | type[int]) -> float | int:
    if isinstance(value, int | float):
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ConfigError(f"{name} must be an integer")
        return kind(value)
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            pass
    raise ConfigError(f"{name} must be a number")
