"""Figures that are the same for every client (bf4stats' onlinePlayers, the boards' sizes in
playerRankings), kept on the app: the first request computes one; after `seconds` the next
request starts a refresh in the background on a connection of its own and is answered with the
kept value meanwhile, so no request waits for a figure that costs a scan."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.requests import Request

from bf4ps.db.connect import Conn
from bf4ps.web.state import WebState, pooled, read_db, state_of

log = logging.getLogger(__name__)
T = TypeVar("T")
STORE = "community_kept"  # app.state: key -> Kept


@dataclass
class Kept:
    made_at: float
    value: Any
    refreshing: asyncio.Task[None] | None = None


def _store(request: Request) -> dict[str, Kept]:
    store: dict[str, Kept] | None = getattr(request.app.state, STORE, None)
    if store is None:
        store = {}
        setattr(request.app.state, STORE, store)
    return store


async def kept(request: Request, key: str, seconds: float,
               make: Callable[[Conn], Awaitable[T]]) -> T:
    """`make`'s value for `key`, at most `seconds` old but for a refresh under way."""
    store = _store(request)
    entry = store.get(key)
    if entry is None:
        async with read_db(request) as conn:
            value = await make(conn)
        store[key] = Kept(time.monotonic(), value)
        return value
    if time.monotonic() - entry.made_at > seconds and entry.refreshing is None:
        entry.refreshing = asyncio.create_task(_refresh(state_of(request), entry, make),
                                               name=f"community-kept-{key}")
    kept_value: T = entry.value
    return kept_value


async def _refresh(web: WebState, entry: Kept, make: Callable[[Conn], Awaitable[Any]]) -> None:
    try:
        async with pooled(web) as conn:
            entry.value = await make(conn)
        entry.made_at = time.monotonic()
    except Exception:  # the kept value stays; the next request after `seconds` tries again
        log.warning("refreshing a kept figure failed", exc_info=True)
    finally:
        entry.refreshing = None
