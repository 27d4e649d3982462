"""The scheduler's BF4SW intake: a pass every bf4sw_sync_seconds on its own connections, while
this scheduler leads. No BF4SW table (yet): nothing to import, said once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import psycopg

from bf4ps.db.connect import BF4SW_DB, bounded_url, connection, resolve_url
from bf4ps.scheduler.intake import Options, record_error
from bf4ps.scheduler.intake_loop import RECONCILE_FACTOR, one_pass
from bf4ps.scheduler.intake_source import source_connection, table_present
from bf4ps.settings import Settings

log = logging.getLogger(__name__)

IntakeLoop = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


async def bf4sw_url(settings: Settings) -> str:
    if settings.bf4sw_database_url:
        return bounded_url(settings.bf4sw_database_url, settings)
    return await resolve_url(settings, BF4SW_DB)


def intake_loop(settings: Settings) -> IntakeLoop:
    """Bounded by design: intake only records soldiers, activity and due work; the feeder
    materializes jobs (active first), so a first import of 190k soldiers never floods the
    live queue and bootstrap keeps its share from the first minute."""
    options = Options(bootstrap_jobs=False, first_jobs=False)
    interval = settings.bf4sw_sync_seconds

    async def loop(stop: asyncio.Event) -> None:
        said_missing = False
        while not stop.is_set():
            try:
                said_missing = await _pass(settings, options, interval, stop, said_missing)
            except psycopg.OperationalError as exc:
                log.warning("bf4sw intake: database unavailable (%s)", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)

    return loop


async def _pass(settings: Settings, options: Options, interval: float, stop: asyncio.Event,
                said_missing: bool) -> bool:
    ps_url = await resolve_url(settings)
    async with connection(ps_url) as ps, source_connection(
            await bf4sw_url(settings), settings.bf4sw_statement_timeout_seconds) as sw:
        if not await table_present(sw):
            if not said_missing:
                log.info("bf4sw intake: no bf4_player_aliases table yet; nothing to import")
            return True
        try:
            report = await one_pass(ps, sw, options, stop, RECONCILE_FACTOR * interval)
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            log.exception("bf4sw intake pass failed")
            await record_error(ps, exc)
            return False
        if report.soldiers_new or report.aliases_read:
            log.info("bf4sw intake: %s", report.describe())
    return False
