"""The raw answers, kept for a while: the last ``archive_answers_kept`` bodies per soldier and
resource, zlib-compressed, for ``archive_retention_days`` (policy keys; docs/battlelog.md).

A stored answer is archived in the finalize transaction that stores it (checked.py), a refused
one (implausible, unrecognized, malformed ...) right after its failure is finalized: either way
one INSERT that also drops the soldier+resource's oldest answers beyond the count
(``bf4ps_archive_keep``, db/functions/stats.sql); the scheduler's upkeep deletes by age
(``archive_delete_batch``). Compression runs before any transaction opens, off the event loop
for large bodies (a weapons body of about 586 KB compresses to about a tenth). ``outcome`` is
``stored`` for an answer stored as current, else the failure's signature.
"""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass

from bf4ps.db.connect import Conn
from bf4ps.db.queries import execute
from bf4ps.domain import Resource

LEVEL = 6  # zlib's default: the weapons body at about 4 ms, a tenth of its size
THREAD_ABOVE = 64 * 1024  # bodies larger than this are compressed off the event loop
STORED = "stored"
MAX_OUTCOME = 80


@dataclass(frozen=True, slots=True)
class RawAnswer:
    """One answer's body, compressed, ready to archive."""

    resource: Resource
    http_status: int | None
    body_bytes: int
    compressed: bytes


async def pack(resource: Resource, http_status: int | None, body: bytes) -> RawAnswer:
    if len(body) > THREAD_ABOVE:
        compressed = await asyncio.to_thread(zlib.compress, body, LEVEL)
    else:
        compressed = zlib.compress(body, LEVEL)
    return RawAnswer(Resource(resource), http_status, len(body), compressed)


def unpack(compressed: bytes) -> bytes:
    return zlib.decompress(compressed)


def outcome_of(signature: str) -> str:
    """An archive outcome from a failure signature (``[a-z_:]``, at most 80 characters)."""
    cleaned = "".join(ch if ch.isalpha() or ch in "_:" else "_" for ch in signature.lower())
    return (cleaned or "unknown")[:MAX_OUTCOME]


async def keep(conn: Conn, soldier_id: int, raw: RawAnswer, outcome: str, kept: int) -> None:
    """Archive one answer (none when the caller's policy keeps 0); how many the
    soldier+resource keep is the database's stored policy (``bf4ps_archive_keep``)."""
    if kept < 1:
        return
    await execute(conn, "archive_keep", {
        "soldier_id": soldier_id, "resource": raw.resource.value,
        "http_status": raw.http_status, "outcome": outcome_of(outcome),
        "body_bytes": raw.body_bytes, "body": raw.compressed})
