"""The fleet budget's running count (migration 0033, db/functions/budget.sql): `budget_buckets`
keeps the ledger's counted requests per class in seconds and minutes, written by triggers on
request_ledger in the same statement as the ledger row, its unsent marking and its pruning, and
made again from the ledger when the restore guard sees a new run. `budget_window` reads the
buckets and the part-second at the window's edge from the ledger; `budget_nth_newest` finds the
k-th newest counted slot through the minute and second buckets.

The property: after any interleaving of counts (single rows and batches), unsent marks, prunes
(the product's bf4ps_ledger_prune), rebuilds and new runs, every bucket equals the ledger's count
of its second or minute and class, `budget_window` equals the ledger's own count over any
window — edges on a second, on a minute, or anywhere inside one — and `budget_nth_newest(k)` the
ledger's k-th newest counted slot."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# far enough in the past that the product's prune may delete any of it, on a minute boundary
BASE = datetime(2026, 1, 1, tzinfo=UTC)
CLASSES = ["interactive", "active", "recent", "bootstrap", "retry"]
US = 1_000_000
SPAN = 100.5  # a window of a hundred seconds and a half: its edge never on the slot's second

# offsets (µs from BASE) on and beside second and minute boundaries, and anywhere in between
_EDGES = [k * US + d for k in (-61, -60, -59, -1, 0, 1, 59, 60, 61, 119, 120) for d in (-1, 0, 1)]
OFFSET = st.one_of(st.sampled_from(_EDGES), st.integers(-150 * US, 150 * US))

COUNT = st.tuples(st.just("count"), st.lists(st.tuples(OFFSET, st.sampled_from(CLASSES)),
                                             min_size=1, max_size=6))
UNSENT = st.tuples(st.just("unsent"), st.integers(0, 40))
PRUNE = st.tuples(st.just("prune"), st.tuples(OFFSET, st.integers(0, 8)))
REBUILD = st.tuples(st.just("rebuild"), st.none())
NEW_RUN = st.tuples(st.just("new_run"), st.none())
OPS = st.lists(st.one_of(COUNT, COUNT, UNSENT, PRUNE, REBUILD, NEW_RUN), min_size=1, max_size=25)

LEDGER_BY_BUCKET = """
SELECT s.span, s.span * floor(extract(epoch FROM l.slot_at) / s.span)::bigint, l.budget_class,
       count(*)::integer
FROM request_ledger l, (VALUES (1), (60)) s(span)
WHERE l.unsent_at IS NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"""
BUCKETS = "SELECT span, starts_at, budget_class, n FROM budget_buckets ORDER BY 1, 2, 3"
WINDOW = "SELECT used, total, last_slot FROM budget_window(%(slot)s, %(span)s)"
LEDGER_WINDOW = """
SELECT COALESCE((SELECT jsonb_object_agg(budget_class, n) FROM (
           SELECT budget_class, count(*)::integer AS n FROM counted_requests
           WHERE slot_at > %(edge)s GROUP BY 1) c), '{}'),
       (SELECT count(*)::integer FROM counted_requests WHERE slot_at > %(edge)s),
       (SELECT max(slot_at) FROM counted_requests WHERE slot_at > %(edge)s)"""


def at(offset_us: int) -> datetime:
    return BASE + timedelta(microseconds=offset_us)


@pytest.fixture
def db(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def apply(db: psycopg.Connection[Any], op: str, arg: Any) -> None:
    if op == "count":  # one statement, as admission's one row or a batch
        values = ", ".join(["(%s, 'eg-1', %s)"] * len(arg))
        db.execute(f"INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
                   f"VALUES {values}", [v for off, cls in arg for v in (at(off), cls)])
    elif op == "unsent":  # the k-th counted row (by id) marked unsent
        db.execute("UPDATE request_ledger SET unsent_at = clock_timestamp() "
                   "WHERE request_id = (SELECT request_id FROM counted_requests "
                   "ORDER BY request_id OFFSET %s LIMIT 1)", [arg])
    elif op == "prune":
        cutoff, batch = arg
        db.execute("SELECT bf4ps_ledger_prune(%s, %s)", [at(cutoff), batch])
    elif op == "rebuild":
        db.execute("SELECT bf4ps_budget_rebuild()")
    else:  # the restore guard registers another server run: the buckets are made again
        db.execute("UPDATE restore_guard SET run_started_at = clock_timestamp()")


NTH = "SELECT budget_nth_newest(%(k)s)"
LEDGER_NTH = "SELECT slot_at FROM counted_requests ORDER BY slot_at DESC OFFSET %(k)s - 1 LIMIT 1"


def assert_agree(db: psycopg.Connection[Any], edges: list[int]) -> None:
    assert db.execute(BUCKETS).fetchall() == db.execute(LEDGER_BY_BUCKET).fetchall()
    total = db.execute("SELECT count(*) FROM counted_requests").fetchone()
    assert total is not None
    for k in {1, 2, 3, total[0] // 2, total[0] - 1, total[0], total[0] + 1}:
        if k >= 1:  # the k-th newest counted slot, as admission asks when its window is full
            got, want = (db.execute(q, {"k": k}).fetchone() for q in (NTH, LEDGER_NTH))
            assert (got or (None,))[0] == (want or (None,))[0], f"the {k}-th newest"
    for edge in edges:
        slot = at(edge) + timedelta(seconds=SPAN)
        got = db.execute(WINDOW, {"slot": slot, "span": SPAN}).fetchone()
        want = db.execute(LEDGER_WINDOW, {"edge": at(edge)}).fetchone()
        assert got == want, f"window with its edge at {at(edge)}"


@given(ops=OPS, probes=st.lists(OFFSET, max_size=6))
@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_buckets_equal_the_ledger_after_any_interleaving(
        db: psycopg.Connection[Any], ops: list[tuple[str, Any]], probes: list[int]) -> None:
    db.execute("TRUNCATE request_ledger")
    assert db.execute(BUCKETS).fetchall() == []
    edges = [*probes, *_EDGES[::4]]
    for op, arg in ops:
        apply(db, op, arg)
        if op == "count":
            edges += [off + d for off, _ in arg for d in (-1, 0)]  # a row on the edge and past it
        assert_agree(db, edges[-4:])
    assert_agree(db, edges)


def test_a_bucket_never_goes_below_zero(db: psycopg.Connection[Any]) -> None:
    """Buckets that disagree with the ledger fail the ledger's write instead of counting less."""
    db.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
               "VALUES (%s, 'eg-1', 'recent')", [at(0)])
    db.execute("DELETE FROM budget_buckets")  # as only a bug or a hand could
    with pytest.raises(psycopg.errors.CheckViolation):
        db.execute("UPDATE request_ledger SET unsent_at = clock_timestamp()")
    assert db.execute("SELECT count(*) FROM counted_requests").fetchone() == (1,)


def test_a_new_server_run_makes_the_buckets_again_from_the_ledger(
        db: psycopg.Connection[Any]) -> None:
    db.execute("INSERT INTO request_ledger (slot_at, egress_key, budget_class) "
               "SELECT %s + make_interval(secs => g), 'eg-1', 'active' "
               "FROM generate_series(1, 90) g", [at(0)])
    db.execute("UPDATE budget_buckets SET n = n + 5")  # buckets a restore left behind
    assert db.execute(BUCKETS).fetchall() != db.execute(LEDGER_BY_BUCKET).fetchall()
    db.execute("UPDATE restore_guard SET run_started_at = clock_timestamp()")
    assert db.execute(BUCKETS).fetchall() == db.execute(LEDGER_BY_BUCKET).fetchall()
    row = db.execute(WINDOW, {"slot": at(30 * US + SPAN * US), "span": SPAN}).fetchone()
    assert row is not None and row[1] == 60  # seconds 31..90, from buckets and the edge


def _crash_state(db: psycopg.Connection[Any]) -> None:
    """What crash recovery leaves of the unlogged buckets: nothing, nor their ready row."""
    db.execute("DELETE FROM budget_buckets_ready")
    db.execute("DELETE FROM budget_buckets")


def test_buckets_a_crash_emptied_are_made_again_by_the_next_ledger_write(
        db: psycopg.Connection[Any]) -> None:
    """The trigger's first write after a crash rebuilds from the ledger, its own rows included
    (counted once), whether it adds a request or marks one unsent."""
    db.execute("TRUNCATE request_ledger")
    apply(db, "count", [(k * US, "active") for k in range(30)])
    _crash_state(db)
    apply(db, "count", [(40 * US, "recent")])
    assert db.execute(BUCKETS).fetchall() == db.execute(LEDGER_BY_BUCKET).fetchall()
    assert db.execute("SELECT count(*) FROM budget_buckets_ready").fetchone() == (1,)
    _crash_state(db)
    apply(db, "unsent", 3)
    assert db.execute(BUCKETS).fetchall() == db.execute(LEDGER_BY_BUCKET).fetchall()
    assert_agree(db, [0, 5 * US, 39 * US])
