"""A look-up's name search, as one job's requests through the gates: the session's start page
when none is open, the search, and when it answered an empty list the check that decides
whether that answer is believed.

Search trust is per answer: an empty list is "no such soldier" only when, in the same job and
the same session, a search for a soldier BF4PS has stored (the canary: the soldier a search
found most recently, else the one BF4SW saw playing most recently; never the name looked up)
finds that soldier. The check is a physical request like any other, in a counted slot of its
own; without a stored soldier, without a slot or when the check fails, the answer stays
"search unavailable" (UNRECOGNIZED, retried, never "no such soldier")."""

from __future__ import annotations

from typing import NamedTuple

from bf4ps.battlelog.client import UNVERIFIED_EMPTY, BattlelogClient
from bf4ps.battlelog.models import FetchResult
from bf4ps.battlelog.window import SendWindow
from bf4ps.collector.slots import Pacing, further_request
from bf4ps.db.connect import Conn
from bf4ps.db.queries import one


async def search(conn: Conn, client: BattlelogClient, pacing: Pacing, name: str,
                 window: SendWindow) -> FetchResult | None:
    """The look-up's answer: the first request in the admitted slot, the others each in a
    slot of their own. None: a further request found no slot."""
    result = await _search(conn, client, pacing, name, window)
    if result is None or result.details.get("signal") != UNVERIFIED_EMPTY:
        return result
    return await confirm(conn, client, pacing, name, result)


async def _search(conn: Conn, client: BattlelogClient, pacing: Pacing, name: str,
                  window: SendWindow) -> FetchResult | None:
    """Without a session, the admitted slot opens one (GET of the start page: the search's
    check-sum) and the search takes the next slot. The session serves this collector's later
    searches."""
    if client.check_sum is not None:
        return await client.search(name, window=window)
    # a redirect of the start page is a request of its own: each hop takes a counted slot
    session = await client.open_session(
        window=window, further=lambda send: further_request(conn, pacing, send))
    if session is None or not session.ok:
        return session  # the lookup's attempt failed at its first request: classified as such
    result = await further_request(conn, pacing,
                                   lambda later: client.search(name, window=later))
    if result is not None:
        result.details["session_opened"] = 1
    return result


class _Canary(NamedTuple):
    name: str


async def confirm(conn: Conn, client: BattlelogClient, pacing: Pacing, name: str,
                  empty: FetchResult) -> FetchResult:
    """Believe an empty answer only when the canary check passes (see above)."""
    canary = await one(conn, _Canary, "search_canary", {"name": name})
    if canary is None:
        return client.unconfirmed(empty, "BF4PS has no stored soldier to check it with")
    checked = await further_request(conn, pacing, lambda later: client.confirm_empty(
        empty, canary.name, window=later))
    if checked is None:
        return client.unconfirmed(empty, "no slot for the check search")
    return checked
