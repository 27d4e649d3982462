"""The raw answers archive (stats/archive.py) and its read side (views/answers.py, `bf4ps
battlelog show/replay`): answers from the real simulator over HTTP, stored through the real
finalize path (archived in its transaction), replayed with today's parser (nothing would change)
and with a parser change (exactly the rows it changes are reported); bounded by count and age."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bf4ps.battlelog.classify import Parser, resource_parser
from bf4ps.battlelog.client import BattlelogClient
from bf4ps.battlelog.envelope import ItemBatch
from bf4ps.battlelog.models import DetailedStats, WeaponItem
from bf4ps.db.connect import Conn
from bf4ps.domain import Platform, Resource
from bf4ps.policy import Policy
from bf4ps.scheduler import retention
from bf4ps.sim.battlelog.career import is_unknown
from bf4ps.sim.battlelog.config import SimConfig
from bf4ps.sim.battlelog.server import start_in_thread
from bf4ps.sim.personas import persona_id_for
from bf4ps.stats import archive
from bf4ps.views import answers
from tests.helpers import count, make_collector, make_soldier
from tests.procs import bf4ps_env
from tests.system.test_plausibility import collect

POLICY = Policy(archive_answers_kept=2)
RESOURCES = (Resource.DETAILED, Resource.WEAPONS)
PERSONAS = [p for p in (persona_id_for(f"replay-{n}", Platform.PC) for n in range(40))
            if not is_unknown(p)][:16]


@pytest.fixture
async def collected(conn: Conn, tmp_path: Path) -> AsyncIterator[dict[int, int]]:
    """Every persona's detailed and weapons answers, fetched from the simulator and stored
    (and archived) through the finalize path: persona -> soldier id."""
    me = await make_collector(conn, tmp_path, "archive-1")
    # the count kept is read in the database (bf4ps_archive_keep): this test's is stored there
    await conn.execute("INSERT INTO scheduler_policy (key, value) VALUES "
                       "('archive_answers_kept', %s::jsonb)", (str(POLICY.archive_answers_kept),))
    soldiers = {}
    with start_in_thread(SimConfig(port=0, min_interval=0.0, speed=1000.0)) as sim:
        async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
            for persona in PERSONAS:
                soldiers[persona] = await make_soldier(conn, persona)
                for resource in RESOURCES:
                    await _fetch_and_store(conn, me, battlelog, soldiers[persona], persona,
                                           resource)
    yield soldiers


async def _fetch_and_store(conn: Conn, me: Any, battlelog: BattlelogClient, soldier: int,
                           persona: int, resource: Resource) -> None:
    result = await battlelog.fetch(resource, persona, Platform.PC)
    assert result.ok and result.parsed is not None and result.body is not None
    raw = await archive.pack(resource, result.http_status, result.body)
    assert (await collect(conn, me, soldier, resource, result.parsed, POLICY, raw)).committed


def changed_parser(resource: Resource, persona_id: int, platform_int: int) -> Parser:
    """A parser change under review: ranks above 50 capped, a star per 150 kills."""
    base = resource_parser(resource, persona_id, platform_int)

    def detailed(body: bytes) -> Any:
        stats = base(body)
        assert isinstance(stats, DetailedStats)
        rank = stats.rank if stats.rank is None else min(stats.rank, 50)
        return dataclasses.replace(stats, rank=rank)

    def weapons(body: bytes) -> Any:
        batch = base(body)
        assert isinstance(batch, ItemBatch)
        return ItemBatch(tuple(dataclasses.replace(w, service_stars=(w.kills or 0) // 150)
                               for w in batch.items if isinstance(w, WeaponItem)),
                         batch.skipped)

    return {Resource.DETAILED: detailed, Resource.WEAPONS: weapons}.get(resource, base)


async def _expected(conn: Conn) -> set[tuple[int, str]]:
    cur = await conn.execute(
        "SELECT s.persona_id, 'detailed' AS resource FROM detailed_stats_current d "
        "JOIN soldiers s USING (soldier_id) WHERE d.rank > 50 "
        "UNION SELECT DISTINCT s.persona_id, 'weapons' FROM soldier_weapon_stats w "
        "JOIN soldiers s USING (soldier_id) "
        "WHERE w.service_stars IS DISTINCT FROM COALESCE(w.kills, 0) / 150")
    return {(int(r["persona_id"]), str(r["resource"])) for r in await cur.fetchall()}


async def test_replay_reports_exactly_the_rows_a_parser_change_would_change(
        conn: Conn, collected: dict[int, int]) -> None:
    since = datetime.now(UTC) - timedelta(hours=1)
    today = await answers.replay(conn, since)
    assert today.examined == len(PERSONAS) * len(RESOURCES) and today.rows == []
    report = await answers.replay(conn, since, parser_for=changed_parser)
    got = {(row.persona_id, row.resource) for row in report.rows}
    expected = await _expected(conn)
    assert expected and got == expected
    assert {r for r in expected if r[1] == "detailed"}  # both resources are exercised
    assert {r for r in expected if r[1] == "weapons"}
    for row in report.rows:
        if row.resource == "detailed":
            assert [c.field for c in row.changes] == ["rank"]
            assert all(c.replayed == 50 and c.stored > 50 for c in row.changes)
        else:
            assert all(c.field.endswith(":service_stars") for c in row.changes)
    only_weapons = await answers.replay(conn, since, Resource.WEAPONS, changed_parser)
    assert {r.resource for r in only_weapons.rows} == {"weapons"}


async def test_show_and_the_commands_read_the_archive(conn: Conn, collected: dict[int, int],
                                                      db_url: str, tmp_path: Path) -> None:
    persona = PERSONAS[0]
    shown = await answers.show(conn, persona, Resource.DETAILED)
    assert [a.outcome for a in shown.answers] == ["stored"]
    answer = shown.answers[0]
    assert answer.body["data"]["personaId"] == persona and answer.stored_bytes < answer.body_bytes
    env = bf4ps_env(BF4PS_DATABASE_URL=db_url, BF4PS_DATA_DIR=str(tmp_path))
    cmd = [sys.executable, "-m", "bf4ps.cli.main", "battlelog"]
    out = subprocess.run([*cmd, "show", "--persona", str(persona), "--resource", "weapons",
                          "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["answers"][0]["body"]["data"]["personaId"] == persona
    text = subprocess.run([*cmd, "replay", "--since", "1h"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert f"{len(PERSONAS) * len(RESOURCES)} archived answers" in text.stdout
    assert "0 would change" in text.stdout


async def test_the_archive_keeps_the_last_answers_and_retention_prunes_it(
        conn: Conn, collected: dict[int, int], tmp_path: Path) -> None:
    persona, soldier = next(iter(collected.items()))
    me = await make_collector(conn, tmp_path, "archive-2")
    with start_in_thread(SimConfig(port=0, min_interval=0.0, speed=1000.0)) as sim:
        async with BattlelogClient(sim.base_url, "bf4ps-test") as battlelog:
            for _ in range(3):
                await _fetch_and_store(conn, me, battlelog, soldier, persona, Resource.DETAILED)
    kept = await count(conn, "SELECT count(*) FROM raw_answers WHERE soldier_id = %(s)s AND "
                             "resource = 'detailed'", {"s": soldier})
    assert kept == POLICY.archive_answers_kept
    size = await answers.archive_size(conn)
    assert size["most_per_resource"] == 2 and size["stored_bytes"] < size["body_bytes"] / 5
    # retention never deletes an answer younger than the policy's days, whatever it is told
    assert await retention.prune_archive(conn, 0.001) == 0
    await conn.execute("UPDATE raw_answers SET received_at = received_at - make_interval("
                       "days => %s)", (int(POLICY.archive_retention_days) + 1,))
    pruned = await retention.prune_archive(conn, POLICY.archive_retention_days)
    assert pruned == size["answers"] and await count(conn, "SELECT count(*) FROM raw_answers") == 0
