"""What the submit button does, shared by the pages and the JSON API: the use case
(interactive/submit.py) for the parsed target, its refusals as 4xx WebErrors."""

from __future__ import annotations

import math

from starlette.requests import Request

from bf4ps.interactive.inputs import InputError
from bf4ps.interactive.submit import RateLimited, Submission, UnknownSoldier, submit
from bf4ps.interactive.target import parse_target
from bf4ps.web import clients
from bf4ps.web.errors import WebError, from_input
from bf4ps.web.state import db, state_of


def client_key(request: Request) -> str:
    """The submission limit's client: its address, an IPv6 one by its network (clients.py)."""
    prefix = state_of(request).settings.client_ipv6_prefix_length
    return f"web:{clients.network(clients.address(request), prefix)}"[:100]


async def submit_from(request: Request, name: object, platform: object, persona_id: object,
                      url: object) -> Submission:
    """Submit as the website does; input problems, the rate limit and an unknown persona
    become 4xx WebErrors."""
    web = state_of(request)
    try:
        target = parse_target(name=name, platform=platform, persona_id=persona_id, url=url)
        async with db(request) as conn:
            return await submit(conn, target, client_key=client_key(request),
                                limits=web.limits, gate=web.gate)
    except InputError as exc:
        raise from_input(exc) from None
    except RateLimited as exc:
        raise WebError(429, str(exc), headers={"Retry-After": str(math.ceil(
            exc.retry_after))}) from None
    except UnknownSoldier as exc:
        raise WebError(404, str(exc), field="persona_id") from None
