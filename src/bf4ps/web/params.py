"""Reading the HTML pages' input strictly: bounded query parameters, path segments and forms
(the JSON API's is validated by FastAPI against the read side's types). Every refusal is a
WebError with a message saying what to fix."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TypeVar
from uuid import UUID

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request

from bf4ps.domain import Platform
from bf4ps.interactive.inputs import InputError, parse_persona_id, parse_platform
from bf4ps.web.errors import WebError

MAX_PARAM = 200
_INTEGER = re.compile(r"-?[0-9]+")


def query(request: Request, name: str, *, max_len: int = 64) -> str | None:
    """A query parameter, stripped; None when absent or empty."""
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise WebError(400, f"parameter {name!r} given more than once", field=name)
    value = values[0].strip()
    if len(value) > max_len:
        raise WebError(422, f"parameter {name!r} is longer than {max_len} characters",
                       field=name)
    if "\x00" in value:
        raise WebError(422, f"parameter {name!r} contains a NUL character", field=name)
    return value or None


def int_query(request: Request, name: str, *, default: int, lo: int, hi: int) -> int:
    raw = query(request, name, max_len=20)
    if raw is None:
        return default
    if _INTEGER.fullmatch(raw) is None:
        raise WebError(422, f"parameter {name!r} must be an integer", field=name)
    value = int(raw)
    if not lo <= value <= hi:
        raise WebError(422, f"parameter {name!r} must be between {lo} and {hi}", field=name)
    return value


E = TypeVar("E", bound=StrEnum)


def choice_query(request: Request, name: str, choices: type[E], default: E, *,
                 max_len: int = 10) -> E:
    """One of an enumeration's values (`default` when absent), else a 422 naming them all."""
    raw = query(request, name, max_len=max_len)
    if raw is None:
        return default
    try:
        return choices(raw)
    except ValueError:
        raise WebError(422, f"parameter {name!r} must be one of: " + ", ".join(choices),
                       field=name) from None


def platform_query(request: Request, name: str = "platform") -> Platform | None:
    raw = query(request, name, max_len=20)
    if raw is None:
        return None
    try:
        return parse_platform(raw, name)
    except InputError as exc:
        raise WebError(422, exc.message, field=name) from None


def soldier_path(request: Request) -> tuple[Platform, int]:
    """/…/{platform}/{persona_id}: an unknown platform or a bad id is a 404 with a reason."""
    try:
        platform = parse_platform(request.path_params["platform"])
        persona_id = parse_persona_id(request.path_params["persona_id"])
    except InputError as exc:
        raise WebError(404, f"no such soldier: {exc.message}", field=exc.field) from None
    return platform, persona_id


def uuid_path(request: Request, name: str = "request_id") -> UUID:
    raw = str(request.path_params[name])
    try:
        if len(raw) > 40:
            raise ValueError(raw)
        return UUID(raw)
    except ValueError:
        raise WebError(404, "no such request: request ids are UUIDs", field=name) from None


async def form(request: Request) -> FormData:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ("application/x-www-form-urlencoded", "multipart/form-data"):
        raise WebError(415, "send the form as application/x-www-form-urlencoded")
    try:
        return await request.form(max_files=0, max_fields=20, max_part_size=4096)
    except (HTTPException, MultiPartException, ValueError) as exc:  # malformed, too many fields
        detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
        raise WebError(400, f"the form could not be read: {str(detail)[:100]}") from None


def form_text(data: FormData, name: str, max_len: int = 300) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise WebError(422, f"field {name!r} must be text", field=name)
    text = value.strip()
    if len(text) > max_len:
        raise WebError(422, f"field {name!r} is longer than {max_len} characters", field=name)
    if "\x00" in text:
        raise WebError(422, f"field {name!r} contains a NUL character", field=name)
    return text or None
