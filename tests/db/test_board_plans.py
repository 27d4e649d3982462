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


@pytest.mark.parametrize("board", list(Board))
async def test_a_soldiers_place_is_counted_in_the_boards_index_alone(
        conn: Conn, board: Board) -> None:
    """bf4stats' playerRankings counts the soldiers above one (up to 10,000) in each board's
    index without reading their rows (migration 0039 gave the K/D board's index the counters
    its key is computed from)."""
    await conn.execute("SET enable_seqscan = off")
    await conn.execute("SET enable_bitmapscan = off")
    cur = await conn.execute(f"EXPLAIN (COSTS OFF) {q(f'community_rank_{board.value}')}",  # type: ignore[arg-type]
                             {"soldier_id": 1, "platform": "pc", "cap": 10_000})
    plan = "\n".join(str(r["QUERY PLAN"]) for r in await cur.fetchall())
    await conn.execute("RESET enable_seqscan")
    await conn.execute("RESET enable_bitmapscan")
    assert f"Index Only Scan using ix_board_{board.value} on detailed_stats_current" in plan, plan
