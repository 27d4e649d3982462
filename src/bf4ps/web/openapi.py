"""The OpenAPI 3.0 document of the JSON API, built in code (served at /openapi.json)."""

from __future__ import annotations

from typing import Any

from bf4ps.domain import Platform, Resource
from bf4ps.queue.events import EVENT_TYPE_NAMES

PLATFORMS = [p.value for p in Platform]
ERROR = {"$ref": "#/components/schemas/Error"}
OBJECT: dict[str, Any] = {"type": "object"}
DATE = {"type": "string", "format": "date-time", "nullable": True}
NULLABLE_INT = {"type": "integer", "nullable": True}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    words = {400: "Malformed request", 401: "Operator credentials required",
             403: "Operator console disabled", 404: "Not found", 413: "Body too large",
             415: "Body is not JSON", 422: "Invalid input", 429: "Rate limited",
             503: "Database unavailable"}
    return {str(c): _json(ERROR, words[c]) for c in codes}


def _param(name: str, where: str, schema: dict[str, Any], description: str,
           required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required or where == "path",
            "schema": schema, "description": description}


SOLDIER_PARAMS = [
    _param("platform", "path", {"type": "string", "enum": PLATFORMS}, "Platform"),
    _param("persona_id", "path", {"type": "integer", "minimum": 1,
                                  "maximum": 2**63 - 1}, "Battlelog persona id"),
]
OPS_SECURITY: list[dict[str, list[str]]] = [{"basicAuth": []}]


def _get(summary: str, ok: dict[str, Any], params: list[dict[str, Any]] | None = None,
         errors: tuple[int, ...] = (404, 422), ops: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "parameters": params or [],
                          "responses": {"200": _json(ok, "OK"), **_errors(*errors)}}
    if ops:
        op["security"] = OPS_SECURITY
        op["responses"].update(_errors(401, 403))
    return {"get": op}


def _soldier_paths() -> dict[str, Any]:
    limit = _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500},
                   "Snapshots, newest first (default 100)")
    return {
        "/api/soldiers/{platform}/{persona_id}": _get(
            "A soldier's headline stats and the freshness of each resource",
            {"$ref": "#/components/schemas/SoldierOverview"}, SOLDIER_PARAMS, (404,)),
        "/api/soldiers/{platform}/{persona_id}/weapons": _get(
            "A soldier's weapons, most kills first", OBJECT, SOLDIER_PARAMS, (404,)),
        "/api/soldiers/{platform}/{persona_id}/vehicles": _get(
            "A soldier's vehicles, most kills first", OBJECT, SOLDIER_PARAMS, (404,)),
        "/api/soldiers/{platform}/{persona_id}/history": _get(
            "Detailed-stats snapshots over time (oldest first)", OBJECT,
            [*SOLDIER_PARAMS, limit], (404, 422)),
    }


def _request_paths() -> dict[str, Any]:
    submit_body = {"type": "object", "additionalProperties": False, "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 32,
                 "pattern": "^[A-Za-z0-9_.-]{1,32}$", "description": "Soldier name"},
        "platform": {"type": "string", "enum": PLATFORMS},
        "persona_id": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
        "url": {"type": "string", "maxLength": 300,
                "description": "https://battlelog.battlefield.com/bf4/soldier/NAME/stats/ID/pc/"},
    }}
    return {
        "/api/search": _get("Known soldiers by name prefix or Battlelog URL", OBJECT, [
            _param("q", "query", {"type": "string", "minLength": 1, "maxLength": 300},
                   "Name or Battlelog soldier URL", required=True),
            _param("platform", "query", {"type": "string", "enum": PLATFORMS}, "Platform"),
            _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 50},
                   "At most this many soldiers (a page)"),
            _param("page", "query", {"type": "integer", "minimum": 1, "maximum": 50},
                   "Page of the matches, 1 first")], (422,)),
        "/api/requests": {"post": {
            "summary": "Ask for a fresh collection (coalesced into interactive work)",
            "requestBody": {"required": True,
                            "content": {"application/json": {"schema": submit_body}}},
            "responses": {"202": _json({"$ref": "#/components/schemas/Submission"},
                                       "Accepted"),
                          **_errors(400, 404, 413, 415, 422, 429)}}},
        "/api/requests/{request_id}": _get(
            "Where a request stands: position, ETA, per-resource progress",
            {"$ref": "#/components/schemas/RequestStatus"},
            [_param("request_id", "path", {"type": "string", "format": "uuid"},
                    "Request id")], (404,)),
    }


def _ops_paths() -> dict[str, Any]:
    events_params = [
        _param("persona_id", "query", {"type": "integer", "minimum": 1,
                                       "maximum": 2**63 - 1}, "Persona id"),
        _param("name", "query", {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"},
               "Soldier name (current or former, any case)"),
        _param("platform", "query", {"type": "string", "enum": PLATFORMS}, "Platform"),
        _param("collector", "query", {"type": "string", "maxLength": 63}, "Collector name"),
        _param("resource", "query", {"type": "string", "enum": [
            *(r.value for r in Resource), "lookup"]}, "Resource"),
        _param("type", "query", {"type": "string", "enum": list(EVENT_TYPE_NAMES)},
               "Event type"),
        _param("window", "query", {"type": "string", "enum": [
            "15m", "1h", "6h", "24h", "7d", "30d", "180d"]}, "Time window (default 24h)"),
        _param("since", "query", {"type": "string", "format": "date-time"}, "From"),
        _param("until", "query", {"type": "string", "format": "date-time"}, "Until"),
        _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}, "Rows"),
    ]
    control = {"post": {
        "summary": "Drain or resume a collector", "security": OPS_SECURITY,
        "parameters": [
            _param("name", "path", {"type": "string", "pattern":
                                    "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"}, "Collector"),
            _param("action", "path", {"type": "string", "enum": ["drain", "resume"]},
                   "Action")],
        "requestBody": {"required": False, "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": False,
            "properties": {"reason": {"type": "string", "maxLength": 200}}}}}},
        "responses": {"200": _json(OBJECT, "Done"),
                      **_errors(400, 401, 403, 404, 413, 415, 422)}}}
    return {
        "/api/ops/status": _get("Everything the console shows", OBJECT, ops=True, errors=()),
        "/api/ops/fleet": _get("Collectors and their health", OBJECT, ops=True, errors=()),
        "/api/ops/queue": _get("Queue depth (actionable work)", OBJECT, ops=True, errors=()),
        "/api/ops/coverage": _get("Coverage (backlog) per resource and status", OBJECT,
                                  ops=True, errors=()),
        "/api/ops/budget": _get("Budget use per egress and for the fleet", OBJECT, ops=True,
                                errors=()),
        "/api/ops/throttles": _get("Recent throttles", OBJECT, ops=True, errors=()),
        "/api/ops/circuits": _get("Fleet circuit breakers", OBJECT, ops=True, errors=()),
        "/api/ops/events": _get("Search the event log", OBJECT, events_params, (422,), True),
        "/api/ops/collectors/{name}/{action}": control,
    }


def _schemas() -> dict[str, Any]:
    return {
        "Error": {"type": "object", "required": ["error", "status"], "properties": {
            "error": {"type": "string"}, "status": {"type": "integer"},
            "field": {"type": "string"}}},
        "Submission": {"type": "object", "required": ["request_id", "status"], "properties": {
            "request_id": {"type": "string", "format": "uuid"},
            "status": {"type": "string"}, "soldier_id": NULLABLE_INT,
            "eta_at": DATE, "position": NULLABLE_INT,
            "resources": {"type": "array", "items": {"type": "string"}},
            "reused": {"type": "boolean"},
            "collector_serving": {"type": "boolean", "nullable": True},
            "estimated_done_at": DATE}},
        "RequestStatus": {"type": "object", "required": ["request_id", "status"],
                          "properties": {
                              "request_id": {"type": "string", "format": "uuid"},
                              "status": {"type": "string", "enum": [
                                  "queued", "collecting", "done", "not_found", "failed"]},
                              "position": NULLABLE_INT,
                              "estimated_start_at": DATE, "estimated_done_at": DATE,
                              "eta_at": DATE,
                              "first_request_at": DATE,
                              "refreshable_at": {**DATE, "description": (
                                  "nothing was due: when a refresh would collect again")},
                              "resources": {"type": "array", "items": OBJECT}}},
        "SoldierOverview": {"type": "object", "required": ["soldier", "headline", "freshness"],
                            "properties": {"soldier": OBJECT, "headline": OBJECT,
                                           "freshness": {"type": "array", "items": OBJECT}}},
    }


def document() -> dict[str, Any]:
    paths = {**_request_paths(), **_soldier_paths(), **_ops_paths(),
             "/healthz": {"get": {"summary": "Database reachable?", "responses": {
                 "200": _json(OBJECT, "Up"), "503": _json(OBJECT, "Database down")}}},
             "/metrics": {"get": {
                 "summary": "Prometheus metrics (bearer token when BF4PS_METRICS_TOKEN is set)",
                 "responses": {"200": {"description": "Exposition", "content": {
                     "text/plain": {"schema": {"type": "string"}}}},
                     "401": _json(OBJECT, "Token missing or wrong")}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "BF4PS — Battlefield 4 Player Stats", "version": "1",
                 "description": "Soldier stats collected from Battlelog; interactive "
                                "collection requests; operator figures."},
        "paths": paths,
        "components": {"schemas": _schemas(), "securitySchemes": {
            "basicAuth": {"type": "http", "scheme": "basic"}}},
    }
