"""`bf4ps battlelog ...`: parse a saved Battlelog response, or fetch one live.

Exit codes: 0 success; 2 the saved file is not a good response of that resource
(``parse``); 1 the request failed or was refused (``fetch``). The classified error goes to
stderr. On a host with a database, ``fetch`` counts and paces its requests as the fleet's
(metered.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

import click
import orjson
import psycopg

from bf4ps.battlelog.classify import Parser, apply_parser, resource_parser
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.battlelog.models import (
    DetailedStats,
    FetchResult,
    LinkedSoldier,
    ProfileStats,
    SearchHit,
    VehicleItem,
    WeaponItem,
)
from bf4ps.battlelog.parse_search import parse_account_soldiers, parse_search
from bf4ps.battlelog.window import SendWindow
from bf4ps.cli.metered import UNMETERED_WARNING, Metered, Refused, Unmetered, fleet_configured
from bf4ps.db.connect import connection, resolve_url
from bf4ps.domain import ErrorClass, Platform, Resource
from bf4ps.settings import Settings

Meter = Metered | Unmetered
LOOKUP_KINDS = ("account", "search")
KINDS = [*(resource.value for resource in Resource), *LOOKUP_KINDS]
PLATFORMS = [platform.value for platform in Platform]
TOP_N = 10


@click.group(name="battlelog")
def group() -> None:
    """Battlelog client tools."""


@group.command(name="parse")
@click.option("--resource", "kind", type=click.Choice(KINDS), required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the parsed model as JSON.")
@click.option("--name", default=None, help="search: keep only this exact (any case) name.")
@click.option("--persona", type=int, default=None, help="Check the payload's personaId.")
@click.option("--platform", type=click.Choice(PLATFORMS), default=None, help="Check platformInt.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def parse_command(
    kind: str,
    as_json: bool,
    name: str | None,
    persona: int | None,
    platform: str | None,
    file: Path,
) -> None:
    """Parse a saved response FILE and print a summary (or JSON)."""
    body = file.read_bytes()
    platform_int = Platform(platform).battlelog_int if platform else None
    parser = body_parser(kind, persona, platform_int, name)
    resource = None if kind in LOOKUP_KINDS else Resource(kind)
    result = FetchResult(resource, None, 0.0, len(body))
    result.details["kind"] = kind
    apply_parser(result, body, parser)
    if not result.ok:
        fail(result, exit_code=2)
    emit(result, as_json, with_meta=False)


@group.command(name="fetch")
@click.option("--resource", "kind", type=click.Choice(KINDS), required=True)
@click.option("--persona", type=int, default=None, help="Persona id (stats resources).")
@click.option("--platform", type=click.Choice(PLATFORMS), default="pc", show_default=True)
@click.option("--user-id", type=int, default=None, help="Battlelog user id (account).")
@click.option("--name", default=None, help="Soldier name (search).")
@click.option("--session", is_flag=True,
              help="search: first open an anonymous session (one more request, GET /bf4/) and "
                   "send its post-check-sum, as the collectors do.")
@click.option("--local-address", default=None, help="Send from this local IP address.")
@click.option("--base-url", default=None, help="Override settings.battlelog_base_url.")
@click.option("--egress", default=None,
              help="The egress the request leaves through: its gate paces it and the ledger "
                   "counts it (needed where a database is configured).")
@click.option("--max-wait", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="Give up when the egress has no slot within this many seconds.")
@click.option("--unmetered", is_flag=True,
              help="Send without a gate or the ledger (the fleet's ceiling no longer holds).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
@click.pass_context
def fetch_command(
    ctx: click.Context,
    kind: str,
    persona: int | None,
    platform: str,
    user_id: int | None,
    name: str | None,
    session: bool,
    local_address: str | None,
    base_url: str | None,
    egress: str | None,
    max_wait: float,
    unmetered: bool,
    as_json: bool,
) -> None:
    """Send ONE request to Battlelog (two for a search with --session) and print the
    classified outcome. Where a database is configured, each request goes through the
    --egress gate and the fleet budget and is counted before it is sent."""
    settings = ctx.obj if isinstance(ctx.obj, Settings) else Settings()
    metered = fleet_configured(settings) and not unmetered
    if metered and egress is None:
        raise click.UsageError("a database is configured here, so this request is the fleet's "
                               "to count: give --egress EGRESS (`bf4ps gate list`), or "
                               "--unmetered to send it uncounted")
    if unmetered:
        click.echo(UNMETERED_WARNING, err=True)
    request = functools.partial(_fetch_once, kind, persona, Platform(platform), user_id, name,
                                session)
    try:
        client = BattlelogClient(
            base_url or settings.battlelog_base_url,
            settings.battlelog_user_agent,
            settings.battlelog_timeout_seconds,
            local_address,
            connect_lead=settings.battlelog_connect_lead_seconds if metered else 0.0,
            answer_timeout=settings.battlelog_answer_timeout_seconds,
        )
        if metered:
            assert egress is not None
            result = asyncio.run(_metered(settings, egress, max_wait, request, client))
        else:
            result = asyncio.run(request(client, Unmetered()))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if not result.ok:
        fail(result, exit_code=1, as_json=as_json)
    emit(result, as_json, with_meta=True)


async def _metered(settings: Settings, egress: str, max_wait: float,
                   request: Callable[[BattlelogClient, Meter], Awaitable[FetchResult]],
                   client: BattlelogClient) -> FetchResult:
    try:
        async with connection(await resolve_url(settings)) as conn:
            meter = Metered(conn, settings, egress, max_wait)
            await meter.prepare()
            result = await request(client, meter)
    except (psycopg.OperationalError, OSError) as exc:
        raise Refused(f"the database that counts this fleet's requests cannot be used "
                      f"({str(exc).strip().splitlines()[0] if str(exc).strip() else exc}); "
                      "nothing was sent (--unmetered sends it uncounted)") from None
    for slot in meter.counted:
        click.echo(f"counted in the request ledger: request {slot.request_id}, egress {egress}, "
                   f"slot {slot.at:%H:%M:%S.%f} UTC", err=True)
    return result


async def _fetch_once(
    kind: str,
    persona: int | None,
    platform: Platform,
    user_id: int | None,
    name: str | None,
    session: bool,
    client: BattlelogClient,
    meter: Meter,
) -> FetchResult:
    async with client:
        if kind == "account":
            uid = _required(user_id, "--user-id")
            return await meter.send(lambda w: client.account_soldiers(uid, window=w), kind)
        if kind == "search":
            name = _required(name, "--name")
            if session:
                opened = await meter.send(lambda w: _open_session(client, meter, w), "index")
                if not opened.ok:
                    return opened
            return await meter.send(lambda w: client.search(name, window=w), kind)
        pid = _required(persona, "--persona")
        return await meter.send(
            lambda w: client.fetch(Resource(kind), pid, platform, window=w), kind)


async def _open_session(client: BattlelogClient, meter: Meter,
                        window: SendWindow | None) -> FetchResult:
    """The start page; each redirect hop of it is a request of its own, sent through the
    meter (a counted slot where a database is configured)."""
    opened = await client.open_session(window=window,
                                       further=lambda send: meter.send(send, "index"))
    if opened is None:
        raise RuntimeError("no slot for a redirect of the start page")
    return opened


def _required(value: Any, option: str) -> Any:
    if value is None:
        raise ValueError(f"{option} is required for this resource")
    return value


def body_parser(
    kind: str, persona: int | None, platform_int: int | None, name: str | None
) -> Parser:
    if kind == "account":
        return parse_account_soldiers
    if kind == "search":
        return functools.partial(parse_search, name=name)
    return resource_parser(Resource(kind), persona, platform_int)


def fail(result: FetchResult, exit_code: int, as_json: bool = False) -> None:
    status = f" (HTTP {result.http_status})" if result.http_status is not None else ""
    error_class = result.error_class.value if result.error_class else "unknown"
    click.echo(f"{error_class}{status}: {result.message}", err=True)
    if as_json:
        click.echo(dump(result_json(result)))
    raise click.exceptions.Exit(exit_code)


def emit(result: FetchResult, as_json: bool, with_meta: bool) -> None:
    if as_json:
        click.echo(dump(result_json(result) if with_meta else to_jsonable(result.parsed)))
        return
    if with_meta:
        click.echo(
            f"HTTP {result.http_status}, {result.size_bytes} bytes "
            f"in {result.duration_seconds:.2f} s"
        )
    for line in summary_lines(result.parsed):
        click.echo(line)
    skipped = result.details.get("skipped_items")
    if skipped:
        click.echo(f"skipped items (no guid or repeated guid): {skipped}")


def dump(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def to_jsonable(parsed: Any) -> Any:
    if isinstance(parsed, tuple):
        return [dataclasses.asdict(item) for item in parsed]
    if dataclasses.is_dataclass(parsed) and not isinstance(parsed, type):
        return dataclasses.asdict(parsed)
    return parsed


class ResultJson(TypedDict):
    """What `fetch --json` prints: the classified result and the model it parsed."""

    ok: bool
    resource: Resource | None
    http_status: int | None
    error_class: ErrorClass | None
    message: str
    duration_seconds: float
    size_bytes: int
    details: dict[str, Any]  # FetchResult.details: the classifier's notes, as JSON
    parsed: object  # to_jsonable(result.parsed): a model's fields, a list of them, or None


def result_json(result: FetchResult) -> ResultJson:
    return {
        "ok": result.ok,
        "resource": result.resource,
        "http_status": result.http_status,
        "error_class": result.error_class,
        "message": result.message,
        "duration_seconds": result.duration_seconds,
        "size_bytes": result.size_bytes,
        "details": result.details,
        "parsed": to_jsonable(result.parsed),
    }


def hours(seconds: int | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.1f} h"


def summary_lines(parsed: Any) -> list[str]:
    if isinstance(parsed, DetailedStats):
        return detailed_lines(parsed)
    if isinstance(parsed, ProfileStats):
        return profile_lines(parsed)
    if isinstance(parsed, tuple):
        return tuple_lines(parsed)
    return [repr(parsed)]


def detailed_lines(stats: DetailedStats) -> list[str]:
    return [
        f"rank {stats.rank}  skill {stats.skill}  score {stats.score}",
        f"kills {stats.kills}  deaths {stats.deaths}  assists {stats.kill_assists}",
        f"time played {hours(stats.time_played_seconds)}  SPM {stats.score_per_minute}  "
        f"KPM {stats.kills_per_minute}",
        f"accuracy {stats.accuracy_percent} %  headshots {stats.headshots}  "
        f"longest headshot {stats.longest_headshot} m",
        f"rounds {stats.num_rounds}  wins {stats.wins}  losses {stats.losses}",
        f"kit time: assault {hours(stats.assault_time_seconds)}, "
        f"engineer {hours(stats.engineer_time_seconds)}, "
        f"support {hours(stats.support_time_seconds)}, recon {hours(stats.recon_time_seconds)}",
    ]


def profile_lines(profile: ProfileStats) -> list[str]:
    lines = [
        f"user id {profile.battlelog_user_id}  clan tag {profile.clan_tag or '-'}",
        f"rank {profile.rank} ({profile.rank_name})  rank score {profile.rank_score}"
        f" / next {profile.next_rank_score}",
        f"score {profile.score}  kills {profile.kills}  deaths {profile.deaths}  "
        f"time played {hours(profile.time_played_seconds)}",
    ]
    lines += [f"top weapon  {item.slug or item.name}: {item.kills}" for item in profile.top_weapons]
    lines += [
        f"top vehicle {item.slug or item.name}: {item.kills}" for item in profile.top_vehicles
    ]
    lines += [f"progress {bar.slug}: {bar.current}/{bar.maximum}" for bar in profile.progress]
    return lines


def tuple_lines(items: tuple[Any, ...]) -> list[str]:
    if items and isinstance(items[0], WeaponItem | VehicleItem):
        return item_lines(items)
    lines = [f"{len(items)} soldier(s)"]
    for item in items:
        if isinstance(item, LinkedSoldier | SearchHit):
            platform = Platform.from_battlelog_int(item.platform_int).value
            lines.append(f"{item.persona_id}  {item.name}  {platform}")
    return lines


def item_lines(items: Sequence[WeaponItem | VehicleItem]) -> list[str]:
    lines = [f"{len(items)} item(s); top {TOP_N} by kills:"]
    ranked = sorted(items, key=lambda item: item.kills or 0, reverse=True)[:TOP_N]
    for item in ranked:
        extra = ""
        if isinstance(item, WeaponItem):
            accuracy = "-" if item.accuracy_fraction is None else f"{item.accuracy_fraction:.1%}"
            extra = f"  headshots {item.headshots}  accuracy {accuracy}"
        lines.append(f"{(item.slug or item.name):24} {item.category or '-':34} {item.kills}{extra}")
    return lines


COMMANDS: list[click.Command] = [group]

