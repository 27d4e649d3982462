"""What the search box and the submit button do, shared by the pages and the JSON API."""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from starlette.requests import Request

from bf4ps import policy as policy_mod
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import Platform
from bf4ps.interactive.inputs import (
    InputError,
    like_prefix,
    looks_like_url,
    parse_name,
    parse_soldier_url,
)
from bf4ps.interactive.submit import RateLimited, Submission, UnknownSoldier, submit
from bf4ps.stats import discovery
from bf4ps.web import soldier_view
from bf4ps.web.errors import WebError, from_input
from bf4ps.web.state import db, state_of


def client_key(request: Request) -> str:
    host = request.client.host if request.client else "unknown"
    return f"web:{host}"[:100]


async def search(conn: Conn, text: str, platform: Platform | None, page: int = 1,
                 per_page: int = 20) -> dict[str, Any]:
    """Known soldiers for a name (prefix, current or former names) or a Battlelog URL."""
    if looks_like_url(text):
        ref = parse_soldier_url(text, "q")
        found = await soldier_view.find(conn, ref.platform, ref.persona_id)
        listed = []
        if found is not None:
            cur = await conn.execute(q("web_collected_at"), {"soldier_id": found.soldier_id})
            row = await cur.fetchone()
            listed = [{**soldier_view.soldier_dict(found), "exact": True,
                       "collected_at": row["collected_at"] if row else None}]
        return {"kind": "url", "name": ref.name, "platform": ref.platform.value,
                "persona_id": ref.persona_id, "exact": found is not None, "soldiers": listed,
                "total": len(listed), "capped": False, "page": 1, "pages": 1,
                "per_page": per_page}
    name = parse_name(text, "q")
    listing = await discovery.search_page(conn, like_prefix(name), name.lower(), platform,
                                          page, per_page)
    soldiers = [s.as_dict() for s in listing.soldiers]
    return {"kind": "name", "name": name, "platform": platform.value if platform else None,
            "persona_id": None, "exact": any(s["exact"] for s in soldiers),
            "soldiers": soldiers, "total": listing.total, "capped": listing.capped,
            "page": listing.page, "pages": listing.pages, "per_page": per_page}


def target_fields(name: object, platform: object, persona_id: object,
                  url: object) -> dict[str, Any]:
    """submit()'s target keywords from a form or JSON body: a Battlelog URL (in `url`, or
    typed into the name box), else name and/or persona id with a platform."""
    if url is None and isinstance(name, str) and looks_like_url(name):
        url, name = name, None
    if url is not None:
        if not isinstance(url, str):
            raise InputError("url", "url must be text")
        ref = parse_soldier_url(url)
        return {"platform": ref.platform, "persona_id": ref.persona_id, "name": ref.name}
    if platform is None:
        raise InputError("platform", "platform is required: one of " + ", ".join(Platform))
    return {"platform": platform, "name": name, "persona_id": persona_id}


async def submit_from(request: Request, fields: dict[str, Any]) -> Submission:
    """Submit as the website does; input problems become 4xx WebErrors."""
    web = state_of(request)
    try:
        target = target_fields(fields.get("name"), fields.get("platform"),
                               fields.get("persona_id"), fields.get("url"))
        async with db(request) as conn:
            policy = await policy_mod.load(conn)
            return await submit(conn, **target, client_key=client_key(request),
                                policy=policy, limits=web.limits, gate=web.gate)
    except InputError as exc:
        raise from_input(exc) from None
    except RateLimited as exc:
        raise WebError(429, str(exc), headers={"Retry-After": str(math.ceil(
            exc.retry_after))}) from None
    except UnknownSoldier as exc:
        raise WebError(404, str(exc), field="persona_id") from None


def submission_dict(sub: Submission) -> dict[str, Any]:
    return {"request_id": str(sub.request_id), "status": sub.status,
            "soldier_id": sub.soldier_id, "lookup_name": sub.lookup_name,
            "eta_at": sub.eta_at.isoformat() if sub.eta_at else None,
            "position": sub.position, "jobs_created": sub.created,
            "resources": list(sub.resources), "reused": sub.reused,
            "collector_serving": sub.serving,
            "estimated_done_at": sub.done_at.isoformat() if sub.done_at else None,
            "status_url": f"/requests/{sub.request_id}",
            "api_url": f"/api/requests/{sub.request_id}"}


def plain(value: Any) -> Any:
    """JSON-safe: datetimes as ISO 8601, UUIDs and Decimals converted, NaN/inf as null."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Decimal):
        return plain(float(value))
    return value
