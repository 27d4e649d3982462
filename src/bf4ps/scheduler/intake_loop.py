"""The BF4SW intake as a loop, the same for its two callers: `bf4ps bf4sw sync` (the CLI maps
SIGINT/SIGTERM to `stop`) and the scheduler, which runs it on its own connections while it leads
(scheduler_intake). Discovery every bf4sw_sync_seconds, reconciliation every five intervals
(timed by the durable watermark, so restarts keep the rhythm); a stop request is honoured
between batches; a lost connection is reopened after one interval.

Bounded by design: the scheduler's intake (and the CLI's unless told otherwise) only records
soldiers, activity and due work; the feeder materializes jobs (active first), so a first import
of 190k soldiers never floods the live queue and bootstrap keeps its share from the first minute.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import psycopg

from bf4ps import policy as policies
from bf4ps.db.connect import BF4SW_DB, Conn, bounded_url, connection, resolve_url
from bf4ps.scheduler.intake import IntakeReport, Options, record_error, sync_once
from bf4ps.scheduler.intake_source import source_connection, table_present
from bf4ps.settings import Settings
from bf4ps.waiting import sleep_unless_stopped

log = logging.getLogger(__name__)

CHUNK_BATCHES = 20  # batches per call, so that a stop request waits for at most this many
RECONCILE_FACTOR = 5

IntakeLoop = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


class SourceMissing(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class LoopConfig:
    settings: Settings  # where both databases are, bf4sw_sync_seconds, the statement timeout
    once: bool = False  # catch up, reconcile once, return (errors are raised, not retried)
    options: Options = field(default_factory=Options)
    # BF4SW without its table: said once and looked for again every interval (the scheduler,
    # which runs whether or not BF4SW is there yet); False: SourceMissing
    wait_for_source: bool = False

    @property
    def interval(self) -> float:
        return self.settings.bf4sw_sync_seconds


async def bf4sw_url(settings: Settings) -> str:
    if settings.bf4sw_database_url:
        return bounded_url(settings.bf4sw_database_url, settings)
    return await resolve_url(settings, BF4SW_DB)


def scheduler_intake(settings: Settings) -> IntakeLoop:
    """The scheduler's intake (Scheduler(intake=...)): no first jobs of its own, a line in the
    log for each pass that read something."""
    config = LoopConfig(settings, options=Options(bootstrap_jobs=False, first_jobs=False),
                        wait_for_source=True)

    def said(report: IntakeReport) -> None:
        if report.soldiers_new or report.aliases_read:
            log.info("bf4sw intake: %s", report.describe())

    async def loop(stop: asyncio.Event) -> None:
        await run(config, stop, said)

    return loop


async def one_pass(ps: Conn, sw: Conn, opts: Options, stop: asyncio.Event,
                   reconcile_every: float) -> IntakeReport:
    """Discovery until caught up (checking `stop` between chunks), then a reconciliation if it
    is due. The policy is reloaded each pass: it can change at run time."""
    policy = await policies.load(ps)
    total = IntakeReport()
    while not stop.is_set():
        part = await sync_once(ps, sw, policy, opts.batch_size, reconcile_every=None,
                               max_batches=CHUNK_BATCHES, options=opts)
        total.merge(part)
        if part.busy or part.batches < CHUNK_BATCHES:
            break
    if not stop.is_set() and not total.busy:
        total.merge(await sync_once(ps, sw, policy, opts.batch_size, max_batches=0,
                                    reconcile_every=reconcile_every, options=opts))
    return total


async def run(config: LoopConfig, stop: asyncio.Event,
              on_report: Callable[[IntakeReport], None]) -> None:
    """Until `stop` (or one pass with config.once). Connection losses are logged and retried
    after one interval; other database errors are recorded in intake_state and retried."""
    reconcile_every = 0.0 if config.once else RECONCILE_FACTOR * config.interval
    said_missing = False
    while not stop.is_set():
        try:
            if await _connected(config, stop, on_report, reconcile_every):
                return
            if not said_missing:
                log.info("bf4sw intake: no bf4_player_aliases table yet; nothing to import")
                said_missing = True
        except psycopg.OperationalError as exc:
            if config.once:
                raise
            log.warning("bf4sw intake: connection lost (%s); retrying", exc)
        await sleep_unless_stopped(stop, config.interval)


async def _connected(config: LoopConfig, stop: asyncio.Event,
                     on_report: Callable[[IntakeReport], None], reconcile_every: float) -> bool:
    """Passes on one pair of connections until `stop` (True); False: BF4SW has no table yet
    (with config.wait_for_source)."""
    settings = config.settings
    async with connection(await resolve_url(settings)) as ps, source_connection(
            await bf4sw_url(settings), settings.bf4sw_statement_timeout_seconds) as sw:
        if not await table_present(sw):
            if config.wait_for_source:
                return False
            raise SourceMissing("BF4SW has no table bf4_player_aliases "
                                "(`bf4ps simulate bf4sw` makes a local one)")
        while not stop.is_set():
            try:
                on_report(await one_pass(ps, sw, config.options, stop, reconcile_every))
            except psycopg.OperationalError:
                raise
            except psycopg.Error as exc:
                if config.once:
                    raise
                log.exception("bf4sw intake pass failed")
                await record_error(ps, exc)
            if config.once:
                return True
            await sleep_unless_stopped(stop, config.interval)
    return True
