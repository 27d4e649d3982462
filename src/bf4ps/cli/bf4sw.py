"""`bf4ps bf4sw sync` (the BF4SW intake) and `bf4ps simulate bf4sw` (a local BF4SW).

BF4SW's database is settings.bf4sw_database_url, or the database "bf4sw" on BF4PS's own server.
The lead attaches `group` to the main CLI (COMMANDS) and `simulate_bf4sw` to `simulate`
(SIMULATE_COMMANDS).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from bf4ps.cli.common import echo_json, fail, run_async, settings_of
from bf4ps.db import compat
from bf4ps.db.connect import Conn, connection, resolve_url
from bf4ps.scheduler.intake import IntakeReport, Options
from bf4ps.scheduler.intake_loop import LoopConfig, SourceMissing, bf4sw_url, run

if TYPE_CHECKING:
    from bf4ps.sim.bf4sw.live import LiveCounts
    from bf4ps.sim.bf4sw.population import CensusRow


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop`: the work in hand finishes (a batch commits) first."""
    loop = asyncio.get_running_loop()
    sigs = (signal.SIGINT, signal.SIGTERM)
    for sig in sigs:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield
    finally:
        for sig in sigs:
            loop.remove_signal_handler(sig)


@click.group(name="bf4sw")
def group() -> None:
    """BF4SW intake: soldiers and their activity from BF4SW (read-only)."""


@group.command(name="sync")
@click.option("--once", is_flag=True, help="Catch up, reconcile once, exit.")
@click.option("--batch-size", default=1000, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--queue-first-jobs/--no-queue-first-jobs", default=False, show_default=True,
              help="Also queue every new soldier's first (detailed) job at once, past the "
                   "feeder's working-set limit (default: as in the scheduler's intake, the "
                   "bounded feeder materializes them from collection_state).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per pass.")
@click.pass_context
@run_async
async def sync(ctx: click.Context, once: bool, batch_size: int, queue_first_jobs: bool,
               as_json: bool) -> None:
    """Import new BF4SW aliases (id cursor) every bf4sw_sync_seconds and reconcile moved
    last_seen values every 5 x that; SIGINT/SIGTERM stop after the current batch. Like the
    scheduler's intake it records soldiers, activity and due work; the scheduler's feeder
    queues the jobs."""
    settings = settings_of(ctx)
    options = Options(batch_size=batch_size, bootstrap_jobs=queue_first_jobs,
                      first_jobs=queue_first_jobs)
    config = LoopConfig(settings, once, options)
    await compat.require(await resolve_url(settings))

    def show(report: IntakeReport) -> None:
        if as_json:
            echo_json(asdict(report))
        elif once or report.batches or report.reconciled:
            click.echo(f"bf4sw: {report.describe()}")

    stop = asyncio.Event()
    with stop_on_signals(stop):
        try:
            await run(config, stop, show)
        except SourceMissing as exc:
            fail(str(exc))


@click.command(name="bf4sw")
@click.option("--soldiers", default=190_000, show_default=True, type=click.IntRange(min=0),
              help="Personas to create (when the table is empty or --reset).")
@click.option("--live", is_flag=True, help="Keep running: sightings, new soldiers, renames.")
@click.option("--rate", default=1.0, show_default=True,
              type=click.FloatRange(min=0.0, min_open=True),
              help="Simulated days per real day (60: an hour a minute).")
@click.option("--tick", default=1.0, show_default=True,
              type=click.FloatRange(min=0.05), help="Seconds between live ticks.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--reset", is_flag=True, help="Empty the table and fill it again.")
@click.option("--session-players", default=0.0, show_default=True,
              type=click.FloatRange(0.0, 1.0),
              help="Share of personas that play sessions by the shared schedule (sim/play.py; "
                   "give the Battlelog simulator the same share, --rate as its speed and "
                   "--play-anchor).")
@click.option("--activity", default=1.0, show_default=True, type=click.FloatRange(0.0, 10.0),
              help="Volume of random sightings, new soldiers and renames (x the census).")
@click.option("--play-anchor", default=None, type=float,
              help="Unix time the session schedule starts from (default 2026-01-01).")
@click.pass_context
@run_async
async def simulate_bf4sw(ctx: click.Context, soldiers: int, live: bool, rate: float,
                         tick: float, seed: int, reset: bool, session_players: float,
                         activity: float, play_anchor: float | None) -> None:
    """Fill (and with --live keep moving) BF4SW's bf4_player_aliases table."""
    import time

    from bf4ps.sim.bf4sw import live as sim_live
    from bf4ps.sim.bf4sw import population
    from bf4ps.sim.play import Schedule

    schedule = Schedule(speed=rate, players=session_players)
    if play_anchor is not None:
        schedule = Schedule(speed=rate, anchor=play_anchor, players=session_players)

    url = await bf4sw_url(settings_of(ctx))
    async with connection(url) as conn:
        started = time.perf_counter()
        written = await population.fill(conn, soldiers, seed, reset=reset)
        if written:
            click.echo(f"BF4SW: {written} alias rows for {soldiers} soldiers in "
                       f"{time.perf_counter() - started:.1f} s")
        else:
            click.echo("BF4SW: table already populated (--reset to fill it again)")
        for row in await population.census(conn):
            click.echo(_census_line(row))
        if not live:
            return
        stop = asyncio.Event()
        with stop_on_signals(stop):
            counts = await sim_live.run(
                conn, soldiers=await _personas(conn, soldiers), rate=rate, tick=tick,
                seed=seed, stop=stop, report=lambda c: click.echo(_live_line(c)),
                schedule=schedule, rates=sim_live.LiveRates().scaled(activity))
        click.echo(f"stopped: {_live_line(counts)}")


async def _personas(conn: Conn, fallback: int) -> int:
    from bf4ps.sim.bf4sw import population

    rows = await population.census(conn)
    return sum(r.personas for r in rows) or fallback


def _census_line(row: CensusRow) -> str:
    n = max(row.personas, 1)
    cum = " ".join(f"{window} {100 * seen / n:.1f}%" for window, seen in row.seen())
    return (f"  {row.platform:<11} {row.personas:>7} soldiers {row.aliases:>7} aliases"
            f" {row.renamed:>5} renamed; seen within {cum}")


def _live_line(c: LiveCounts) -> str:
    return (f"live: {c.ticks} ticks, {c.sightings} sightings, {c.play_sightings} in "
            f"sessions, {c.new_soldiers} new soldiers, {c.renames} renames")


COMMANDS: list[click.Command] = [group]
SIMULATE_COMMANDS: list[click.Command] = [simulate_bf4sw]
