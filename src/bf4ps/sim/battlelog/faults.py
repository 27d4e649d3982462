"""Injected faults, latency draws and the non-payload answers (throttle and error pages).

Faults are mutually exclusive per request and drawn from one random.Random(seed), latency from
another (seed + 1), so a given arrival order gives the same faults whatever the latencies.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from bf4ps.sim.battlelog.config import SimConfig

PERSONA_RESOURCES = frozenset({"detailed", "profile", "weapons", "vehicles"})
DISTORTIONS = ("zeros", "decrease", "login_redirect", "retry_after", "other_game",
               "other_endpoint")  # distort.py
HTML = "text/html; charset=utf-8"
JSON = "application/json"

Draw = Callable[[random.Random], float]
LATENCY: dict[str, Draw] = {  # seconds at speed 1, as measured on the live service
    "detailed": lambda r: r.uniform(0.6, 1.0),
    "profile": lambda r: r.triangular(0.6, 1.1, 0.8),
    "weapons": lambda r: 1.0 + 1.2 * r.betavariate(1.5, 4.0),  # 1.0-2.2 s, mean ~1.33
    "vehicles": lambda r: 1.0 + 0.8 * r.betavariate(1.6, 3.5),  # mean ~1.25
    "search": lambda r: r.uniform(0.35, 0.65),
    "soldiers": lambda r: r.uniform(0.4, 0.7),
    "index": lambda r: r.uniform(0.2, 0.4),
}


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes
    media_type: str


def _page(title: str, text: str, marker: str = "") -> bytes:
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
        f'<div id="{marker or "content"}"><h1>{title}</h1><p>{text}</p></div></body></html>'
    ).encode()


def _error_json(message: str) -> bytes:
    return orjson.dumps({"type": "error", "message": message, "data": []})


SOFT_NULL = Answer(200, b"null", JSON)
STATS_MISSING = Answer(200, b'{"type":"success","message":"OK","data":{}}', JSON)

THROTTLE = {
    # a soft-throttling service: an IP over its rate gets empty answers for the penalty
    "soft": STATS_MISSING,
    "403": Answer(
        403,
        _page(
            "Access Denied",
            "You don't have permission to access this "
            "resource. Reference #18.5f3a1b2.1700000000.1a2b3c4",
        ),
        HTML,
    ),
    "429": Answer(
        429,
        _page("429 Too Many Requests", "Too many requests. Please slow down and try again later."),
        HTML,
    ),
    "html": Answer(
        200,
        _page(
            "Battlelog", "Too many requests. Please wait a moment before trying again.", "throttled"
        ),
        HTML,
    ),
}
HTML_ERROR = Answer(
    200,
    _page(
        "Battlelog - Error",
        "Battlelog is experiencing some issues right now. Please try again later.",
        "errorpage",
    ),
    HTML,
)
SERVER_ERRORS = (
    Answer(
        503,
        _page(
            "503 Service Unavailable", "The server is temporarily unable to service your request."
        ),
        HTML,
    ),
    Answer(
        500, _page("500 Internal Server Error", "The server encountered an internal error."), HTML
    ),
)
GATEWAY_TIMEOUT = Answer(
    504, _page("504 Gateway Time-out", "The server didn't respond in time."), HTML
)
NOT_FOUND = Answer(404, _page("Battlelog", "Sorry, that page doesn't exist."), HTML)
# transient: the service failed. An unknown persona (or platform) gets Battlelog's 404 page,
# the one not-found signal with public evidence (docs/battlelog.md); no capture records an
# error envelope wording for it.
TYPE_ERROR = Answer(200, _error_json("Internal error, please try again later"), JSON)
UNKNOWN_PERSONA = NOT_FOUND
BAD_PLATFORM = NOT_FOUND
BAD_CHECK_SUM = Answer(200, _error_json("Invalid post-check-sum"), JSON)  # search, when required
LOGIN_WALL = Answer(200, orjson.dumps({"type": "error", "message": "GATE_REDIRECT",
                                       "data": {"redirect": "/bf4/gate/"}}), JSON)
EMPTY_SEARCH = Answer(200, orjson.dumps({"type": "success", "message": "RESULT", "data": []}),
                      JSON)


def unknown_error(message: str) -> Answer:
    return Answer(200, _error_json(message), JSON)


class Faults:
    def __init__(self, config: SimConfig) -> None:
        self._config = config
        self.reseed(config.seed)

    def reseed(self, seed: int) -> None:
        self._faults = random.Random(seed)
        self._latency = random.Random(seed + 1)

    def draw(self, resource: str) -> str | None:
        """The fault outcome for this request, or None for a normal answer."""
        cfg = self._config
        rates = (
            ("timeout", cfg.fault_timeout),
            ("server_error", cfg.fault_5xx),
            ("html_error", cfg.fault_html),
            ("type_error", cfg.fault_error),
            ("missing_general", cfg.fault_missing_general if resource == "detailed" else 0.0),
            ("unknown_persona", cfg.fault_unknown if resource in PERSONA_RESOURCES else 0.0),
            ("unknown_error",
             cfg.fault_unknown_error if resource in PERSONA_RESOURCES else 0.0),
            ("soft_throttle",
             cfg.fault_soft_throttle if resource in PERSONA_RESOURCES else 0.0),
            *((name, getattr(cfg, f"fault_{name}") if resource in PERSONA_RESOURCES else 0.0)
              for name in DISTORTIONS),
        )
        if not any(rate for _, rate in rates):
            return None
        roll, threshold = self._faults.random(), 0.0
        for outcome, rate in rates:
            threshold += rate
            if roll < threshold:
                return outcome
        return None

    def coin(self, probability: float) -> bool:
        return self._faults.random() < probability

    def latency(self, resource: str) -> float:
        draw = LATENCY.get(resource)
        return draw(self._latency) / self._config.speed if draw else 0.0

    def server_error(self) -> Answer:
        return SERVER_ERRORS[0] if self.coin(0.7) else SERVER_ERRORS[1]

    def timeout_hold(self) -> float:
        return self._config.timeout_hold / self._config.speed
