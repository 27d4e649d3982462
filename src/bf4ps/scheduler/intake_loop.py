"""`bf4ps bf4sw sync`: the intake as a service. Discovery every interval, reconciliation every
five intervals (timed by the durable watermark, so restarts keep the rhythm); a stop request
(the CLI maps SIGINT/SIGTERM to it) is honoured between batches; a lost connection is reopened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg

from bf4ps import policy as policies
from bf4ps.db.connect import Conn, connection
from bf4ps.scheduler.intake import IntakeReport, Options, record_error, sync_once
from bf4ps.scheduler.intake_source import source_connection, table_present

log = logging.getLogger(__name__)

CHUNK_BATCHES = 20  # batches per call, so that a stop request waits for at most this many
RECONCILE_FACTOR = 5


class SourceMissing(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class LoopConfig:
    bf4ps_url: str
    bf4sw_url: str
    interval: float = 60.0
    once: bool = False
    options: Options = field(default_factory=Options)
    statement_timeout: float = 30.0  # seconds, on BF4SW's database


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
    while not stop.is_set():
        try:
            await _connected(config, stop, on_report, reconcile_every)
            return
        except psycopg.OperationalError as exc:
            if config.once:
                raise
            log.warning("bf4sw intake: connection lost (%s); retrying", exc)
            await _wait(stop, config.interval)


async def _connected(config: LoopConfig, stop: asyncio.Event,
                     on_report: Callable[[IntakeReport], None], reconcile_every: float) -> None:
    async with connection(config.bf4ps_url) as ps, source_connection(
            config.bf4sw_url, config.statement_timeout) as sw:
        if not await table_present(sw):
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
                return
            await _wait(stop, config.interval)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
