"""Errors as answers: JSON under /api (and for JSON clients), an HTML page elsewhere. Input
problems are 4xx with a message saying what to fix; an unexpected exception is a bug (500,
logged), and an unreachable database is 503."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from fastapi.exceptions import RequestValidationError
from psycopg_pool import PoolTimeout
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from bf4ps.interactive.inputs import InputError

log = logging.getLogger(__name__)

REASONS = {400: "Bad request", 401: "Authentication required", 403: "Forbidden",
           404: "Not found", 405: "Method not allowed", 413: "Request too large",
           415: "Unsupported media type", 422: "Unprocessable input",
           429: "Too many requests", 500: "Internal error", 503: "Service unavailable"}


class ErrorBody(BaseModel):
    """Every refusal's JSON body: what to fix, the status again, and the field at fault."""

    error: str
    status: int
    field: str | None = None


class WebError(Exception):
    """An answer other than success, with a message meant for the user."""

    def __init__(self, status: int, message: str, *, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.headers = headers or {}


def from_input(exc: InputError, status: int = 422) -> WebError:
    return WebError(status, exc.message, field=exc.field)


PLACES = {"query": "parameter", "path": "no such item: path segment", "body": "field"}


def _printable(text: str, limit: int = 200) -> str:
    """Text that any response can carry (a lone surrogate from a JSON body cannot be encoded)."""
    return text[:limit].encode("utf-8", "replace").decode("utf-8")


def from_validation(errors: Sequence[Any], where: str = "body") -> WebError:
    """The first problem pydantic found, as the input parsers would say it, naming the field:
    a body that is not JSON is 400, a path segment that names nothing 404, anything else 422.
    `where`: the input the locations are in when they do not say (a model validated alone)."""
    first = dict(errors[0]) if errors else {}
    loc = [str(x) for x in first.get("loc", ())]
    if first.get("type") == "json_invalid":
        return WebError(400, "the body is not valid JSON")
    if loc and loc[0] in PLACES:
        where, loc = loc[0], loc[1:]
    field = loc[-1] if loc else None
    message = str(first.get("msg", "invalid input")).removeprefix("Value error, ")
    if first.get("type") == "missing":
        message = "is required"
    elif first.get("type") == "extra_forbidden":
        message = "is not a field of this request"
    text = f"{PLACES.get(where, where)} {field!r}: {message}" if field else f"the body: {message}"
    status = 404 if where == "path" else 422
    return WebError(status, _printable(text), field=_printable(field, 60) if field else None)


def wants_json(request: Request) -> bool:
    path = request.url.path
    if path.startswith(("/api/", "/community/")) or path in ("/openapi.json", "/healthz",
                                                               "/metrics"):
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def error_response(request: Request, status: int, message: str, *, field: str | None = None,
                   headers: Mapping[str, str] | None = None) -> Response:
    if wants_json(request):
        body: dict[str, Any] = {"error": message, "status": status}
        if field:
            body["field"] = field
        return JSONResponse(body, status, headers=headers)
    templates = getattr(request.app.state, "templates", None)
    if templates is None:
        return HTMLResponse(f"<h1>{status}</h1>", status, headers=headers)
    return templates.TemplateResponse(  # type: ignore[no-any-return]
        request, "error.html", {"status": status, "reason": REASONS.get(status, "Error"),
                                "message": message, "field": field},
        status_code=status, headers=headers)


async def on_web_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, WebError)
    return error_response(request, exc.status, exc.message, field=exc.field,
                          headers=exc.headers)


async def on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: "no such page", 405: "method not allowed here"}.get(
        exc.status_code, str(exc.detail))
    return error_response(request, exc.status_code, message, headers=exc.headers)


async def on_input_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, InputError)
    return error_response(request, 422, exc.message, field=exc.field)


async def on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    err = from_validation(exc.errors())
    return error_response(request, err.status, err.message, field=err.field)


async def on_data_error(request: Request, exc: Exception) -> Response:
    """A value PostgreSQL refused: inputs are validated first, so this names a gap in the
    validation; still the client's value, so 400."""
    log.warning("database refused a value for %s: %s", request.url.path, exc)
    return error_response(request, 400, "a value in the request is out of range or malformed")


async def on_unavailable(request: Request, exc: Exception) -> Response:
    log.warning("database unavailable for %s: %s", request.url.path, exc)
    return error_response(request, 503, "the database is unavailable; try again shortly",
                          headers={"Retry-After": "5"})


LOGGED = "bf4ps.bug_logged"  # scope key: on_bug answered and logged this request's exception


async def on_bug(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error for %s %s", request.method, request.url.path)
    request.scope[LOGGED] = True
    return error_response(request, 500, "internal error")


HANDLERS: dict[Any, Any] = {
    WebError: on_web_error,
    HTTPException: on_http_exception,
    InputError: on_input_error,
    RequestValidationError: on_validation_error,
    psycopg.DataError: on_data_error,
    psycopg.OperationalError: on_unavailable,
    PoolTimeout: on_unavailable,
    Exception: on_bug,
}
