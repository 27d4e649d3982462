"""Each leaderboard's query (one text in web.sql, loaded once per board) is read through its own
partial index (migration 0011): the board's sort key and index predicate reach the planner."""

from __future__ import annotations

import pytest

from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.stats.discovery import Board


@pytest.mark.parametrize("board", list(Board))
async def test_a_board_is_read_in_its_partial_index_order(conn: Conn, board: Board) -> None:
    await conn.execute("SET enable_seqscan = off")
    cur = await conn.execute(f"EXPLAIN (COSTS OFF) {q(board.query)}",  # type: ignore[arg-type]
                             {"platform": "pc", "limit": 25, "offset": 0})
    plan = "\n".join(str(r["QUERY PLAN"]) for r in await cur.fetchall())
    await conn.execute("RESET enable_seqscan")
    assert f"Index Scan using ix_board_{board.value} on detailed_stats_current" in plan, plan
