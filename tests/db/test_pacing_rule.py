"""The egress pacing rule is written once, in SQL (bf4ps_paced_slot, bf4ps_paced_interval:
migration 0031): the admission applies it and the interactive estimate reads it from the
server, so the two agree; no Python copy of it comes back."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

from bf4ps.capacity import eta
from bf4ps.db.connect import Conn
from bf4ps.gates import admission
from bf4ps.gates.admission import Slot
from bf4ps.settings import SendTimings
from tests.helpers import interactive_gate

SRC = Path(admission.__file__).resolve().parents[1]  # src/bf4ps
EGRESS = "int-egress"  # interactive_gate's
TIMINGS = SendTimings(margin=0.25, horizon=5.0, connect_lead=0.2, seed_interval=9.0)
# what the rule reads of a gate row: arithmetic or max/min over these is a copy of it
RULE_FIELDS = ("throttle_streak", "next_slot_at", "cooldown_until")


async def _gate(conn: Conn, sql: str) -> None:
    update = f"UPDATE egress_gates SET {sql} WHERE egress_key = %s"
    await conn.execute(update, [EGRESS])  # type: ignore[arg-type]


async def test_the_estimate_reads_the_interval_the_admission_advances_the_gate_by(
        conn: Conn, tmp_path: Path) -> None:
    await interactive_gate(conn, tmp_path, interval=0.5)
    await _gate(conn, "throttle_streak = 3, next_slot_at = now() - interval '1 s'")
    pace = await eta.pacing(conn, TIMINGS)
    assert abs(pace.interval_seconds - (0.5 * 2.5 + 0.25)) < 1e-9  # slower while throttled
    got = await admission.operator_slot(conn, EGRESS, TIMINGS, "detailed")
    assert isinstance(got, Slot)
    cur = await conn.execute("SELECT next_slot_at FROM egress_gates WHERE egress_key = %s",
                             [EGRESS])
    row = await cur.fetchone()
    assert row is not None
    advanced = (row["next_slot_at"] - got.at).total_seconds()
    assert abs(advanced - pace.interval_seconds) < 1e-6


async def test_the_estimate_reads_the_slot_the_admission_gives(conn: Conn,
                                                               tmp_path: Path) -> None:
    await interactive_gate(conn, tmp_path)
    for sql in ("next_slot_at = now() + interval '20 s', cooldown_until = NULL",
                "next_slot_at = now() + interval '20 s', "
                "cooldown_until = now() + interval '40 s'",
                "next_slot_at = now() + interval '40 s', "
                "cooldown_until = now() + interval '20 s'"):
        await _gate(conn, sql)
        pace = await eta.pacing(conn, TIMINGS)
        look = await admission.operator_slot(conn, EGRESS, TIMINGS, "detailed")
        assert not isinstance(look, Slot)  # beyond the horizon: the admission says when
        assert look.until is not None
        assert pace.next_free == look.until + timedelta(seconds=TIMINGS.ahead), sql


async def test_a_lane_of_no_egress_is_paced_as_a_new_egress_would_be(conn: Conn) -> None:
    pace = await eta.pacing(conn, TIMINGS)
    assert pace.egresses == [] and pace.serving is False and pace.next_free == pace.now
    assert abs(pace.interval_seconds - (9.0 + 0.25)) < 1e-9


async def test_the_admission_calls_the_one_definition(conn: Conn) -> None:
    cur = await conn.execute(
        "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = 'public'::regnamespace")
    sources = {str(r["proname"]): str(r["prosrc"]) for r in await cur.fetchall()}
    assert "bf4ps_paced_slot(" in sources["admission_gate_slot"]
    assert "bf4ps_paced_interval(" in sources["admission_record"]
    # the streak's slowdown (half an interval per throttle) is written in one function only
    assert [n for n, src in sources.items() if "0.5 *" in src] == ["bf4ps_paced_interval"]


def copies_of_the_rule(root: Path) -> list[str]:
    """Places in the Python under `root` that compute with what the rule reads of a gate."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            computes = isinstance(node, ast.BinOp | ast.AugAssign) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("max", "min"))
            if computes and any(_names_rule_field(n) for n in _outside_text(node)):
                found.append(f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}")
    return found


def _outside_text(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and what is under it, but for f-strings (a gate's fields shown, not computed)."""
    if isinstance(node, ast.JoinedStr):
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _outside_text(child)


def _names_rule_field(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in RULE_FIELDS
    if isinstance(node, ast.Constant):
        return node.value in RULE_FIELDS
    return isinstance(node, ast.Name) and node.id in RULE_FIELDS


def test_no_python_copy_of_the_rule() -> None:
    assert copies_of_the_rule(SRC) == []
    assert not hasattr(admission, "effective_interval")
    assert not hasattr(admission, "paced_slot")
