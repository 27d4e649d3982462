"""BF4SW, the read-only source: its platform strings, its alias rows, and one identity per
(BF4PS platform, persona id) merged from them.

BF4SW writes platform strings of its own ("PC", "PS4", "PS5", "XBox", "XBoxOne", ...). They map
to BF4PS platforms case-insensitively; a persona seen under two strings that map to the same
platform (an Xbox One player now on a Series console) is one BF4PS soldier, and its aliases are
always read under all those strings together, so a batch never sees half a soldier.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, cast

from bf4ps.db.connect import Conn, connection
from bf4ps.db.queries import all_rows, one, q, scalar
from bf4ps.domain import Platform, bf4sw_platform

MAX_NAME_LENGTH = 64
STATEMENT_TIMEOUT = 30.0  # seconds (BF4PS_BF4SW_STATEMENT_TIMEOUT_SECONDS)
SEEN_PAGE = 1000  # alias rows per reconciliation read


def usable_name(name: str) -> bool:
    return bool(name.strip()) and len(name) <= MAX_NAME_LENGTH


@dataclass(frozen=True, slots=True)
class Alias:
    id: int
    platform: str
    persona_id: int
    name: str
    first_seen: datetime | None  # as BF4SW might have them: see dated()
    last_seen: datetime | None


@dataclass(slots=True)
class Identity:
    """One BF4PS soldier as BF4SW knows it: every alias folded together."""

    persona_id: int
    platform: Platform
    first_id: int
    current_name: str
    current_key: tuple[datetime, int]
    first_seen: datetime
    last_seen: datetime
    names: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)

    @classmethod
    def of(cls, alias: Alias, platform: Platform, first: datetime, last: datetime) -> Identity:
        return cls(alias.persona_id, platform, alias.id, alias.name, (last, alias.id), first,
                   last, {alias.name: (first, last)})

    def add(self, alias: Alias, first: datetime, last: datetime) -> None:
        self.first_id = min(self.first_id, alias.id)
        self.first_seen = min(self.first_seen, first)
        self.last_seen = max(self.last_seen, last)
        if (last, alias.id) > self.current_key:
            self.current_name, self.current_key = alias.name, (last, alias.id)
        seen = self.names.get(alias.name)
        self.names[alias.name] = (min(seen[0], first), max(seen[1], last)) if seen else (
            first, last)


@dataclass(frozen=True, slots=True)
class Server:
    """The server BF4SW last saw a persona on (its optional bf4_server_players table)."""

    guid: str
    name: str
    seen_at: datetime


def dated(alias: Alias) -> tuple[datetime, datetime] | None:
    """Usable (first, last) times of an alias: a missing one takes the other's value, an
    inverted pair is put in order (BF4PS insists on first <= last); None when both are missing.
    """
    first = alias.first_seen or alias.last_seen
    last = alias.last_seen or alias.first_seen
    if first is None or last is None:
        return None
    return (first, last) if first <= last else (last, first)


@dataclass(frozen=True, slots=True)
class Grouped:
    identities: list[Identity]  # in BF4SW discovery order (smallest alias id first)
    skipped: int  # aliases with an unknown platform, an unusable name or no times


def group(aliases: Iterable[Alias]) -> Grouped:
    merged: dict[tuple[int, Platform], Identity] = {}
    skipped = 0
    for alias in aliases:
        platform = bf4sw_platform(alias.platform)
        seen = dated(alias)
        if platform is None or seen is None or not usable_name(alias.name) or (
                alias.persona_id <= 0):
            skipped += 1
            continue
        key = (alias.persona_id, platform)
        if key in merged:
            merged[key].add(alias, *seen)
        else:
            merged[key] = Identity.of(alias, platform, *seen)
    return Grouped(sorted(merged.values(), key=lambda i: i.first_id), skipped)


# ---------------------------------------------------------------- reads


@asynccontextmanager
async def source_connection(url: str, statement_timeout: float = STATEMENT_TIMEOUT
                            ) -> AsyncIterator[Conn]:
    """A connection to BF4SW on which every transaction is read-only and no statement runs
    longer than `statement_timeout` seconds."""
    async with connection(url) as conn:
        await conn.execute(q("bf4sw_read_only"))
        await conn.execute(q("bf4sw_statement_timeout"),
                           {"ms": str(max(1, round(statement_timeout * 1000)))})
        yield conn


class _Present(NamedTuple):
    present: bool


class _AliasKey(NamedTuple):
    """A bf4_player_aliases row's identity (BF4SW's table)."""

    id: int
    platform: str
    persona_id: int


class _Seen(NamedTuple):
    id: int
    platform: str
    persona_id: int
    last_seen: datetime


class _Platform(NamedTuple):
    platform: str


class _Alias(NamedTuple):
    id: int
    platform: str
    persona_id: int
    player_name: str | None
    first_seen: datetime | None
    last_seen: datetime | None


class _Seat(NamedTuple):
    """Where BF4SW last saw a persona play (bf4_server_players)."""

    platform: str
    persona_id: int
    server_guid: str | None
    server_name: str | None
    seen_at: datetime | None


async def table_present(conn: Conn) -> bool:
    row = await one(conn, _Present, "bf4sw_table_exists")
    return bool(row and row.present)


async def source_now(conn: Conn) -> datetime:
    return cast(datetime, await scalar(conn, "bf4sw_now"))


Key = tuple[str, int]  # BF4SW's identity: (platform string, persona id)


@dataclass(frozen=True, slots=True)
class Batch:
    keys: list[Key]  # distinct identities, in id order
    rows: int  # alias rows read
    last_id: int  # the last id read, or the cursor itself when nothing is new


async def new_aliases(conn: Conn, after_id: int, limit: int) -> Batch:
    """The identities of the next `limit` alias rows past the cursor."""
    rows = await all_rows(conn, _AliasKey, "bf4sw_new_aliases",
                          {"after_id": after_id, "limit": limit})
    keys = [(str(r.platform), r.persona_id) for r in rows]
    last = rows[-1].id if rows else after_id
    return Batch(list(dict.fromkeys(keys)), len(rows), last)


async def seen_identities(conn: Conn, since: datetime, until: datetime,
                          page: int = SEEN_PAGE) -> list[Key]:
    """Identities with an alias seen in [since, until], by their first alias id in the window;
    read `page` rows at a time, so no statement reads an unbounded window."""
    first: dict[Key, int] = {}
    after: tuple[datetime, int] = (since, 0)
    while True:
        rows = await all_rows(conn, _Seen, "bf4sw_seen_page", {
            "after_seen": after[0], "after_id": after[1], "until": until, "limit": page})
        for r in rows:
            key = (str(r.platform), r.persona_id)
            first[key] = min(first.get(key, r.id), r.id)
        if len(rows) < page:
            return sorted(first, key=first.__getitem__)
        after = (rows[-1].last_seen, rows[-1].id)


async def platform_strings(conn: Conn) -> list[str]:
    return [str(r.platform) for r in await all_rows(conn, _Platform, "bf4sw_platform_strings")]


async def aliases_of(conn: Conn, keys: Sequence[Key]) -> list[Alias]:
    """Every alias of these identities, under every platform string that maps to the same
    BF4PS platform (a persona seen as "XBox" and as "XBoxSeries" is one soldier)."""
    variants: dict[Platform | None, list[str]] = {}
    for raw in await platform_strings(conn):
        variants.setdefault(bf4sw_platform(raw), []).append(raw)
    wanted = dict.fromkeys((v, persona) for raw, persona in keys
                           for v in variants.get(bf4sw_platform(raw), [raw]))
    rows = await all_rows(conn, _Alias, "bf4sw_aliases_of", {
        "platforms": [k[0] for k in wanted], "persona_ids": [k[1] for k in wanted]})
    return [Alias(r.id, str(r.platform), r.persona_id, str(r.player_name or ""), r.first_seen,
                  r.last_seen) for r in rows]


async def servers_of(conn: Conn, aliases: Sequence[Alias]) -> dict[tuple[str, int], Server]:
    """The server each of these aliases' personas was last seen on, by (BF4PS platform,
    persona id), from BF4SW's optional bf4_server_players table (empty without it)."""
    present = await one(conn, _Present, "bf4sw_servers_present")
    if not aliases or not (present and present.present):
        return {}
    keys = dict.fromkeys((a.platform, a.persona_id) for a in aliases)
    rows = await all_rows(conn, _Seat, "bf4sw_servers_of", {
        "platforms": [k[0] for k in keys], "persona_ids": [k[1] for k in keys]})
    out: dict[tuple[str, int], Server] = {}
    for r in rows:
        platform = bf4sw_platform(str(r.platform))
        if platform is None or r.seen_at is None:
            continue
        key = (platform.value, r.persona_id)
        server = Server(str(r.server_guid or "")[:100], str(r.server_name or "")[:200],
                        r.seen_at)
        if key not in out or server.seen_at > out[key].seen_at:
            out[key] = server
    return out
