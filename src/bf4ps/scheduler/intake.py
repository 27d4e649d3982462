"""BF4SW intake: soldiers and their activity from BF4SW's read-only database into BF4PS.

Discovery reads alias rows past the id cursor (intake_state), a batch at a time, importing
every alias of each identity and advancing the cursor in the import's transaction (a crash
repeats a batch, never skips one). Reconciliation re-imports the aliases whose last_seen moved
within [watermark - overlap, BF4SW's now] (the overlap also covers ids committed out of order).
Each batch also sets the activity classes, makes work actionable (intake_materialize) and
records play sessions; each reconciliation closes the sessions unseen for the gap
(scheduler/sessions.py). One importer at a time (a transaction-level advisory lock; a busy
tick is skipped, sync_once reports busy=True). BF4SW is only ever read. docs/architecture.md
"The BF4SW intake" has the details.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple, cast

from bf4ps.db.connect import Conn
from bf4ps.db.queries import one, q, scalar
from bf4ps.policy import Policy
from bf4ps.scheduler import activity, sessions
from bf4ps.scheduler import intake_source as src
from bf4ps.scheduler.intake_materialize import Clocks, materialize
from bf4ps.scheduler.intake_store import store

CURSOR = "bf4sw"
RECONCILE = "bf4sw_reconcile"
DEFAULT_BATCH = 1000
DEFAULT_OVERLAP = timedelta(minutes=15)
RECONCILE_EVERY = 300.0  # seconds: 5 x the default bf4sw_sync_seconds
FIRST_WINDOW = timedelta(hours=24)
ANALYZE_EVERY = 25_000  # new soldiers imported by one call between two ANALYZEs


@dataclass(slots=True)
class IntakeReport:
    aliases_new: int = 0  # alias rows past the cursor
    aliases_read: int = 0  # alias rows imported (every alias of every identity touched)
    aliases_skipped: int = 0  # unknown platform string or unusable name
    identities: int = 0
    soldiers_new: int = 0
    soldiers_updated: int = 0
    names_new: int = 0
    jobs_created: int = 0
    jobs_promoted: int = 0
    marked_due: int = 0
    sessions_opened: int = 0
    sessions_closed: int = 0
    created_by_class: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    reconciled: bool = False
    busy: bool = False
    cursor: int = 0
    watermark: datetime | None = None

    def describe(self) -> str:
        """One line for people (the sync command's output, the scheduler's log)."""
        classes = ", ".join(f"{k} {v}" for k, v in sorted(self.created_by_class.items()))
        watermark = f"{self.watermark:%Y-%m-%d %H:%M:%S} UTC" if self.watermark else "none"
        return (f"{self.aliases_new} new aliases in {self.batches} batches, "
                f"{self.aliases_read} read ({self.aliases_skipped} skipped); soldiers "
                f"+{self.soldiers_new} new, {self.soldiers_updated} updated, {self.names_new} "
                f"new names; jobs {self.jobs_created} created ({classes or 'none'}), "
                f"{self.jobs_promoted} promoted; {self.marked_due} marked due; sessions "
                f"+{self.sessions_opened} opened, {self.sessions_closed} closed; cursor "
                f"{self.cursor}, watermark {watermark}"
                f"{' (reconciled)' if self.reconciled else ''}"
                f"{' (busy: skipped)' if self.busy else ''}")

    def merge(self, other: IntakeReport) -> None:
        """Add a later report's counts; its cursor and watermark win."""
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for klass, n in other.created_by_class.items():
            self.created_by_class[klass] = self.created_by_class.get(klass, 0) + n
        self.reconciled = self.reconciled or other.reconciled
        self.busy = self.busy or other.busy
        self.cursor = max(self.cursor, other.cursor)
        self.watermark = other.watermark or self.watermark


COUNTS = ("aliases_new", "aliases_read", "aliases_skipped", "identities", "soldiers_new",
          "soldiers_updated", "names_new", "jobs_created", "jobs_promoted", "marked_due",
          "sessions_opened", "sessions_closed", "batches")


@dataclass(frozen=True, slots=True)
class Options:
    batch_size: int = DEFAULT_BATCH
    overlap: timedelta = DEFAULT_OVERLAP
    first_window: timedelta = FIRST_WINDOW
    bootstrap_jobs: bool = True  # False: bootstrap-class soldiers are left to the feeder
    first_jobs: bool = True  # False: no job at all is created here, the feeder does it


async def sync_once(bf4ps_conn: Conn, bf4sw_conn: Conn, policy: Policy,
                    batch_size: int = DEFAULT_BATCH, *,
                    reconcile_every: float | None = RECONCILE_EVERY,
                    max_batches: int | None = None, options: Options | None = None,
                    ) -> IntakeReport:
    """Discovery until caught up (or `max_batches` batches), then a reconciliation when the
    previous one is at least `reconcile_every` seconds old on the source's clock (0: always,
    None: never). Both connections are autocommit; every batch is one BF4PS transaction."""
    opts = options or Options(batch_size=batch_size)
    report = IntakeReport()
    await discover(bf4ps_conn, bf4sw_conn, policy, opts, report, max_batches)
    if not report.busy and reconcile_every is not None:
        await reconcile(bf4ps_conn, bf4sw_conn, policy, opts, report, reconcile_every)
    return report


async def discover(bf4ps: Conn, bf4sw: Conn, policy: Policy, opts: Options,
                   report: IntakeReport, max_batches: int | None = None) -> None:
    analyzed_at = 0
    while max_batches is None or report.batches < max_batches:
        async with bf4ps.transaction():
            if not await _lock(bf4ps, report):
                return
            cursor, _ = await _state(bf4ps)
            batch = await src.new_aliases(bf4sw, cursor, opts.batch_size)
            if batch.keys:
                await _import(bf4ps, bf4sw, batch.keys, policy, opts, report)
            await bf4ps.execute(q("intake_cursor_advance"),
                                {"source": CURSOR, "last_alias_id": batch.last_id})
        report.cursor = batch.last_id
        if not batch.keys:
            return
        report.aliases_new += batch.rows
        report.batches += 1
        if report.soldiers_new - analyzed_at >= ANALYZE_EVERY:
            await bf4ps.execute(q("intake_analyze"))
            analyzed_at = report.soldiers_new


async def reconcile(bf4ps: Conn, bf4sw: Conn, policy: Policy, opts: Options,
                    report: IntakeReport, every: float = 0.0) -> None:
    now = await src.source_now(bf4sw)
    _, watermark = await _state(bf4ps, RECONCILE)
    report.watermark = watermark
    if watermark is not None and (now - watermark).total_seconds() < every:
        return
    since = now - opts.first_window if watermark is None else watermark - opts.overlap
    keys = await src.seen_identities(bf4sw, since, now, opts.batch_size)
    for start in range(0, len(keys), opts.batch_size):
        async with bf4ps.transaction():
            if not await _lock(bf4ps, report):
                return
            await _import(bf4ps, bf4sw, keys[start:start + opts.batch_size], policy, opts,
                          report)
    async with bf4ps.transaction():
        report.sessions_closed += await sessions.close(bf4ps, now, policy)
        await bf4ps.execute(q("intake_watermark_advance"),
                            {"source": RECONCILE, "watermark": now})
    report.reconciled, report.watermark = True, max(now, watermark or now)


async def record_error(bf4ps: Conn, error: BaseException) -> None:
    await bf4ps.execute(q("intake_error"), {"source": CURSOR,
                                            "error": f"{type(error).__name__}: {error}"[:500]})


async def _import(bf4ps: Conn, bf4sw: Conn, keys: list[src.Key], policy: Policy,
                  opts: Options, report: IntakeReport) -> None:
    aliases = await src.aliases_of(bf4sw, keys)
    grouped = src.group(aliases)
    clocks = Clocks(await src.source_now(bf4sw), await _now(bf4ps))
    stored = await store(bf4ps, grouped.identities, clocks.now)
    await activity.refresh(bf4ps, [s.soldier_id for s in stored.soldiers], policy)
    on_server = sessions.playing(stored.soldiers, await src.servers_of(bf4sw, aliases),
                                 clocks.source_now, policy)
    report.sessions_opened += await sessions.observe(bf4ps, on_server, policy)
    made = await materialize(bf4ps, stored.soldiers, clocks, policy,
                             bootstrap_jobs=opts.bootstrap_jobs,
                             first_jobs=opts.first_jobs)
    new = sum(1 for s in stored.soldiers if s.inserted)
    report.aliases_read += len(aliases)
    report.aliases_skipped += grouped.skipped
    report.identities += len(grouped.identities)
    report.soldiers_new += new
    report.soldiers_updated += len(stored.soldiers) - new
    report.names_new += stored.names_new
    report.jobs_created += made.jobs_created
    report.jobs_promoted += made.jobs_promoted
    report.marked_due += made.marked_due
    for klass, n in made.created_by_class.items():
        report.created_by_class[klass] = report.created_by_class.get(klass, 0) + n


class _Locked(NamedTuple):
    locked: bool


class _State(NamedTuple):
    last_alias_id: int
    reconcile_watermark: datetime | None


async def _lock(bf4ps: Conn, report: IntakeReport) -> bool:
    row = await one(bf4ps, _Locked, "intake_lock")
    locked = bool(row and row.locked)
    report.busy = report.busy or not locked
    return locked


async def _state(bf4ps: Conn, source: str = CURSOR) -> tuple[int, datetime | None]:
    row = await one(bf4ps, _State, "intake_state_get", {"source": source})
    if row is None:
        return 0, None
    return row.last_alias_id, row.reconcile_watermark


async def _now(bf4ps: Conn) -> datetime:
    return cast(datetime, await scalar(bf4ps, "intake_now"))
