"""Where the unused budget went (issue 45, "budget left unused while work waits"): with work
waiting only in the active and recent classes, the fleet budget's active cap
(budget_cap_active, 75 %) holds active work back even when no other class has work to use the
rest, so a window with 75 active and 7 recent requests in it admits nothing active: the 18 % an
independent run measured (82 % of its budget) is exactly this. The product says unused shares
are borrowed: budget_allowed_classes applies the cap only while another class has runnable
work, and the admission's demand probe looks for recent work too."""

from __future__ import annotations

from psycopg.types.json import Jsonb

from bf4ps.db.connect import Conn
from bf4ps.policy import Policy

POLICY = Policy()


async def allowed(conn: Conn, used: dict[str, int], demand: list[str]) -> list[str]:
    cur = await conn.execute(
        "SELECT budget_allowed_classes(100, %s, %s, %s, false) AS c",
        [Jsonb(used), demand, Jsonb({"cap_active": POLICY.budget_cap_active,
                                     "floor_interactive": POLICY.budget_floor_interactive,
                                     "floor_bootstrap": POLICY.budget_floor_bootstrap,
                                     "floor_retry": POLICY.budget_floor_retry})])
    row = await cur.fetchone()
    assert row is not None
    return list(row["c"])


async def test_the_active_cap_binds_only_while_other_work_could_use_the_rest(
        conn: Conn) -> None:
    # while bootstrap work waits, the cap keeps its share (this holds today)
    assert "active" not in await allowed(conn, {"active": 75, "recent": 7}, ["bootstrap"])
    # a floor class with no runnable work lends its floor (this holds today)
    assert "recent" in await allowed(conn, {"active": 70, "recent": 10}, [])


async def test_with_only_active_work_waiting_the_whole_budget_is_used(conn: Conn) -> None:
    assert "active" in await allowed(conn, {"active": 75, "recent": 7}, [])

