"""The archived raw answers (stats/archive.py): what Battlelog said for one soldier
(`bf4ps battlelog show`), and what a parser would change over the answers already collected
(`bf4ps battlelog replay`), before it is deployed.

Replay takes, per soldier and resource, the newest archived answer that was stored as current
since a time, parses it with today's parser (or the one given: a parser change under test),
and compares the result with the stored current statistics field by field: detailed and the
overview's scalar fields, per weapon/vehicle its counters (an item the stored list lacks is a
change; the overview's lists are not compared). A row is reported only when something would
change, or when the parser now refuses the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, fields
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

import orjson
from pydantic import BaseModel

from bf4ps.battlelog.classify import Parser, apply_parser, resource_parser
from bf4ps.battlelog.models import (
    DetailedStats,
    FetchResult,
    ProfileStats,
    VehicleItem,
    WeaponItem,
)
from bf4ps.db.connect import Conn
from bf4ps.db.queries import Record, all_rows, mapped, one, one_row
from bf4ps.domain import Platform, Resource
from bf4ps.stats.archive import unpack
from bf4ps.stats.items import VEHICLE_STAT_FIELDS, WEAPON_STAT_FIELDS

ParserFor = Callable[[Resource, int, int], Parser]
_STORED = {Resource.DETAILED: "replay_detailed_stored",
           Resource.PROFILE: "replay_profile_stored",
           Resource.WEAPONS: "replay_weapons_stored",
           Resource.VEHICLES: "replay_vehicles_stored"}
_ITEM_FIELDS = {Resource.WEAPONS: WEAPON_STAT_FIELDS[1:],
                Resource.VEHICLES: VEHICLE_STAT_FIELDS[1:]}


class ArchivedAnswer(BaseModel):
    answer_id: int
    received_at: datetime
    http_status: int | None
    outcome: str
    body_bytes: int
    stored_bytes: int
    body: Any  # the JSON document, or the text when it is not JSON


class Suspect(BaseModel):
    resource: str
    kind: str
    first_at: datetime
    last_at: datetime
    answers: int


class SoldierAnswers(BaseModel):
    persona_id: int
    platform: str | None
    resource: str
    answers: list[ArchivedAnswer]
    suspects: list[Suspect]


def _document(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace")


def _archived(r: Mapping[str, Any]) -> ArchivedAnswer:
    return ArchivedAnswer(**{k: r[k] for k in ("answer_id", "received_at", "http_status",
                                               "outcome", "body_bytes", "stored_bytes")},
                          body=_document(unpack(r["body"])))


class _Soldier(NamedTuple):
    soldier_id: int


async def show(conn: Conn, persona_id: int, resource: Resource, platform: Platform | None = None,
               limit: int = 10) -> SoldierAnswers:
    answers = await all_rows(conn, mapped(_archived), "archive_of", {
        "persona_id": persona_id, "platform": platform.value if platform else None,
        "resource": Resource(resource).value, "limit": limit})
    soldier = await one(conn, _Soldier, "answers_soldier", {
        "persona_id": persona_id, "platform": platform.value if platform else None})
    suspects = [] if soldier is None else await all_rows(
        conn, Suspect, "suspects_of_soldier", {"soldier_id": soldier.soldier_id})
    return SoldierAnswers(persona_id=persona_id, platform=platform.value if platform else None,
                          resource=Resource(resource).value, answers=answers, suspects=suspects)


class FieldChange(BaseModel):
    field: str  # a column, or `guid:column` for an item
    stored: Any
    replayed: Any


class ReplayRow(BaseModel):
    answer_id: int
    soldier_id: int
    persona_id: int
    platform: str
    resource: str
    received_at: datetime
    error: str | None = None  # the parser now refuses the answer
    changes: list[FieldChange] = []


class ReplayReport(BaseModel):
    since: datetime
    examined: int
    rows: list[ReplayRow]  # only those that would change (or fail)


def _default_parser(resource: Resource, persona_id: int, platform_int: int) -> Parser:
    return resource_parser(resource, persona_id, platform_int)


def _stored(r: Mapping[str, Any]) -> tuple[ReplayRow, bytes]:
    """An answer stored as current (archive_replay): its row, and its compressed body."""
    return ReplayRow.model_validate({k: r[k] for k in ReplayRow.model_fields if k in r}), r["body"]


async def replay(conn: Conn, since: datetime, resource: Resource | None = None,
                 parser_for: ParserFor = _default_parser) -> ReplayReport:
    rows = await all_rows(conn, mapped(_stored), "archive_replay", {
        "since": since, "resource": Resource(resource).value if resource else None})
    report = ReplayReport(since=since, examined=len(rows), rows=[])
    for row, body in rows:
        await _replay_one(conn, row, unpack(body), parser_for)
        if row.error is not None or row.changes:
            report.rows.append(row)
    return report


async def _replay_one(conn: Conn, row: ReplayRow, body: bytes, parser_for: ParserFor) -> None:
    """Parse the stored answer again: the parser's refusal, or what it would change."""
    resource = Resource(row.resource)
    parser = parser_for(resource, row.persona_id, Platform(row.platform).battlelog_int)
    result = apply_parser(FetchResult(resource, 200, 0.0, len(body)), body, parser)
    if not result.ok or result.parsed is None:
        row.error = f"{result.error_class}: {result.message}"
        return
    row.changes = await _changes(conn, resource, row.soldier_id, result.parsed)


async def _changes(conn: Conn, resource: Resource, soldier_id: int, parsed: Any
                   ) -> list[FieldChange]:
    params = {"soldier_id": soldier_id}
    if isinstance(parsed, DetailedStats | ProfileStats):
        stored = await one(conn, Record, _STORED[resource], params) or Record()
        names = [f.name for f in fields(parsed) if not isinstance(getattr(parsed, f.name), tuple)]
        return _diff({n: stored.get(n) for n in names},
                     {n: getattr(parsed, n) for n in names})
    stored_items = {str(x["guid"]): x for x in await all_rows(conn, Record, _STORED[resource],
                                                              params)}
    item_fields = _ITEM_FIELDS[resource]
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    for item in parsed:
        if isinstance(item, WeaponItem | VehicleItem):
            values = asdict(item)
            have = stored_items.get(item.guid, Record())
            for name in item_fields:
                old[f"{item.guid}:{name}"] = have.get(name)
                new[f"{item.guid}:{name}"] = values[name]
    return _diff(old, new)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def _diff(stored: dict[str, Any], replayed: dict[str, Any]) -> list[FieldChange]:
    return [FieldChange(field=k, stored=stored.get(k), replayed=v)
            for k, v in replayed.items() if not _same(stored.get(k), v)]


class _Size(NamedTuple):
    answers: int
    stored_bytes: int | Decimal  # sums: numeric
    body_bytes: int | Decimal
    most_per_resource: int


async def archive_size(conn: Conn) -> dict[str, int]:
    row = await one_row(conn, _Size, "archive_size")
    return {k: int(v) for k, v in row._asdict().items()}
