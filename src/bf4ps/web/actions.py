"""What the submit button does, shared by the pages and the JSON API: the submission itself
(interactive/submit.py, storing the read side's estimate as its eta_at)."""

from __future__ import annotations

import math
from typing import Any

from starlette.requests import Request

from bf4ps import policy as policy_mod
from bf4ps.domain import Platform
from bf4ps.interactive.inputs import InputError, looks_like_url, parse_soldier_url
from bf4ps.interactive.submit import RateLimited, Submission, UnknownSoldier, submit
from bf4ps.views import request_status
from bf4ps.web import clients
from bf4ps.web.errors import WebError, from_input
from bf4ps.web.state import db, state_of


def client_key(request: Request) -> str:
    """The submission limit's client: its address, an IPv6 one by its network (clients.py)."""
    prefix = state_of(request).settings.client_ipv6_prefix_length
    return f"web:{clients.network(clients.address(request), prefix)}"[:100]


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


async def submit_from(request: Request, name: object, platform: object, persona_id: object,
                      url: object) -> Submission:
    """Submit as the website does; input problems, the rate limit and an unknown persona
    become 4xx WebErrors."""
    web = state_of(request)
    try:
        target = target_fields(name, platform, persona_id, url)
        async with db(request) as conn:
            policy = await policy_mod.load(conn)
            return await submit(conn, **target, client_key=client_key(request),
                                policy=policy, limits=web.limits,
                                estimator=request_status.estimator(web.gate))
    except InputError as exc:
        raise from_input(exc) from None
    except RateLimited as exc:
        raise WebError(429, str(exc), headers={"Retry-After": str(math.ceil(
            exc.retry_after))}) from None
    except UnknownSoldier as exc:
        raise WebError(404, str(exc), field="persona_id") from None
