"""Interactive submissions against real PostgreSQL: coalescing and promotion, lookup jobs for
unknown names, resolve_lookup, the per-client rate limit and the ETA recorded at submission."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bf4ps.battlelog.models import SearchHit
from bf4ps.capacity import eta
from bf4ps.db.connect import Conn
from bf4ps.db.queries import q
from bf4ps.domain import Lane, Platform, PriorityClass, SourceType
from bf4ps.interactive.inputs import InputError, parse_soldier_url
from bf4ps.interactive.lookup import found, resolve_lookup
from bf4ps.interactive.submit import Limits, RateLimited, UnknownSoldier, submit
from bf4ps.interactive.target import parse_target
from bf4ps.policy import Policy
from bf4ps.queue import claim as qclaim
from bf4ps.settings import SendTimings
from bf4ps.stats import soldiers
from bf4ps.views import request_status as views
from bf4ps.views.request_status import SubmissionView, request_status
from tests.helpers import add_job, count, interactive_gate, make_collector, make_soldier

POLICY = Policy()
GATE = SendTimings(seed_interval=2.0, margin=0.0, idle_poll=1.0, connect_lead=0.2)


async def submitted(conn: Conn, **target: object) -> SubmissionView:
    """A submission storing the read side's estimate, and its answer as the API gives it."""
    sub = await submit(conn, parse_target(**target), client_key="t", policy=POLICY, gate=GATE)
    return await views.submission(conn, sub, GATE)


async def jobs(conn: Conn) -> list[dict[str, object]]:
    cur = await conn.execute(
        "SELECT soldier_id, resource, lane, priority_class, reason, status, request_id, "
        "lookup_name, lookup_platform FROM collection_jobs ORDER BY job_id")
    return await cur.fetchall()


async def test_known_soldier_gets_four_interactive_jobs_and_an_eta(
        conn: Conn, tmp_path: Path) -> None:
    await interactive_gate(conn, tmp_path)
    sid = await make_soldier(conn, 4001)
    sub = await submitted(conn, platform="pc", persona_id=4001)
    assert sub.status == "queued" and sub.soldier_id == sid and sub.jobs_created == 4
    assert sub.resources == ["detailed", "profile", "weapons", "vehicles"]
    assert sub.position == 0 and sub.eta_at is not None and sub.collector_serving is True
    rows = await jobs(conn)
    assert {r["resource"] for r in rows} == set(sub.resources)
    assert all(r["lane"] == "interactive" and r["priority_class"] == "interactive"
               and r["reason"] == "manual" and r["request_id"] == sub.request_id for r in rows)
    cur = await conn.execute("SELECT status, resources, eta_at, created_at FROM "
                             "interactive_requests WHERE request_id = %s", [sub.request_id])
    req = await cur.fetchone()
    assert req is not None and req["status"] == "queued" and req["eta_at"] == sub.eta_at
    # an idle lane: the first request goes out within the collector's poll, not a whole queue
    assert timedelta(0) <= req["eta_at"] - req["created_at"] < timedelta(seconds=3)


async def test_by_name_case_insensitive_and_former_name(conn: Conn) -> None:
    sid = await make_soldier(conn, 4002, name="OldName")
    await make_soldier(conn, 4002, name="NewName", seen=datetime(2027, 1, 1, tzinfo=UTC))
    by_current = await submit(conn, parse_target(platform="pc", name="newname"), client_key="t",
                              policy=POLICY)
    assert by_current.soldier_id == sid
    # the open request is reused for the same soldier, also when named by its former name
    by_former = await submit(conn, parse_target(platform="pc", name="OLDNAME"), client_key="t",
                             policy=POLICY)
    assert by_former.reused and by_former.request_id == by_current.request_id
    assert await count(conn, "SELECT count(*) FROM interactive_requests") == 1
    # other platforms are other soldiers
    other = await submit(conn, parse_target(platform="ps4", name="NewName"), client_key="t",
                         policy=POLICY)
    assert other.soldier_id is None and other.resources == ("lookup",)


async def test_promotes_pending_background_work_and_attaches_to_running(
        conn: Conn, tmp_path: Path) -> None:
    sid = await make_soldier(conn, 4003)
    pending = await add_job(conn, sid, "weapons", PriorityClass.BOOTSTRAP)
    running = await add_job(conn, sid, "detailed", PriorityClass.ACTIVE)
    me = await make_collector(conn, tmp_path, "bg-1", Lane.BACKGROUND, "bg-egress")
    claimed = await qclaim.claim(conn, me, 60, soldier_id=sid)
    assert claimed is not None and claimed.resource == "detailed"
    sub = await submit(conn, parse_target(platform="pc", persona_id=4003), client_key="t",
                       policy=POLICY)
    assert sub.created == 2  # profile, vehicles; weapons promoted, detailed attached
    cur = await conn.execute("SELECT job_id, resource, lane, status, request_id FROM "
                             "collection_jobs ORDER BY resource")
    by_resource = {r["resource"]: r for r in await cur.fetchall()}
    assert by_resource["weapons"]["job_id"] == pending.job_id
    assert by_resource["weapons"]["lane"] == "interactive"
    assert by_resource["detailed"]["job_id"] == running.job_id
    assert by_resource["detailed"]["lane"] == "background"  # a held job is never moved
    assert all(r["request_id"] == sub.request_id for r in by_resource.values())
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE job_id = %(j)s "
                             "AND event_type = 'promoted'", {"j": pending.job_id}) == 1
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == 4


async def test_fresh_resources_are_not_recollected(conn: Conn) -> None:
    sid = await make_soldier(conn, 4004)
    await conn.execute(
        "UPDATE collection_state SET status = 'current', last_success_at = now(), "
        "last_attempt_at = now(), next_due_at = now() + interval '1 day' "
        "WHERE soldier_id = %s AND resource IN ('detailed', 'weapons')", [sid])
    sub = await submit(conn, parse_target(platform="pc", persona_id=4004), client_key="t",
                       policy=POLICY)
    assert sub.resources == ("profile", "vehicles")
    await conn.execute("UPDATE collection_state SET status = 'current', last_success_at = "
                       "now() - interval '2 hours', last_attempt_at = now() - interval "
                       "'2 hours', next_due_at = now() WHERE soldier_id = %s", [sid])
    await conn.execute("DELETE FROM collection_jobs")
    await conn.execute("UPDATE interactive_requests SET status = 'done'")
    older = await submit(conn, parse_target(platform="pc", persona_id=4004), client_key="t",
                         policy=POLICY)
    assert len(older.resources) == 4  # older than interactive_min_age_seconds (1 h)
    await conn.execute("DELETE FROM collection_jobs")
    await conn.execute("UPDATE interactive_requests SET status = 'done'")
    await conn.execute("UPDATE collection_state SET last_success_at = now() WHERE "
                       "soldier_id = %s", [sid])
    fresh = await submit(conn, parse_target(platform="pc", persona_id=4004), client_key="t",
                         policy=POLICY)
    assert fresh.status == "done" and fresh.resources == () and fresh.eta_at is None
    assert await count(conn, "SELECT count(*) FROM collection_jobs") == 0


async def test_unknown_name_gets_one_lookup_job(conn: Conn) -> None:
    sub = await submit(conn, parse_target(platform="xboxone", name="Some Gamertag"), client_key="t",
                       policy=POLICY)
    assert sub.soldier_id is None and sub.lookup_name == "Some Gamertag" and sub.created == 1
    rows = await jobs(conn)
    assert rows == [{"soldier_id": None, "resource": "lookup", "lane": "interactive",
                     "priority_class": "interactive", "reason": "lookup", "status": "pending",
                     "request_id": sub.request_id, "lookup_name": "Some Gamertag",
                     "lookup_platform": "xboxone"}]
    again = await submit(conn, parse_target(platform="xboxone", name="some gamertag"),
                         client_key="u", policy=POLICY)
    assert again.reused and again.request_id == sub.request_id


async def test_persona_url_registers_an_unknown_soldier(conn: Conn) -> None:
    ref = parse_soldier_url(
        "https://battlelog.battlefield.com/bf4/soldier/Url_Guy/stats/1003662931478/ps4/")
    assert (ref.persona_id, ref.platform, ref.name) == (1003662931478, Platform.PS4, "Url_Guy")
    sub = await submit(conn, parse_target(platform=ref.platform, persona_id=ref.persona_id,
                                          name=ref.name), client_key="t", policy=POLICY)
    assert sub.soldier_id is not None and sub.created == 4
    assert await count(conn, "SELECT count(*) FROM soldier_sources WHERE source_type = "
                             "'manual'") == 1
    # asked for is not seen playing: no last-seen time, so the soldier is not made active
    assert await count(conn, "SELECT count(*) FROM soldiers WHERE last_seen_at IS NULL") == 1
    with pytest.raises(UnknownSoldier):
        await submit(conn, parse_target(platform="pc", persona_id=77), client_key="t",
                     policy=POLICY)


async def test_requests_do_not_move_a_soldiers_last_seen_playing(conn: Conn) -> None:
    """Only BF4SW's sightings say when a soldier played: a submission by URL and a resolved
    lookup leave last_seen_at (and so the activity class) as BF4SW left it; the lookup's name,
    Battlelog's own, becomes the current name."""
    seen = datetime(2026, 6, 1, tzinfo=UTC)
    sid = await make_soldier(conn, 4200, name="OldName", seen=seen)
    await submit(conn, parse_target(platform="pc", persona_id=4200, name="Typed"), client_key="t",
                 policy=POLICY)
    cur = await conn.execute("SELECT current_name, last_seen_at FROM soldiers")
    assert await cur.fetchall() == [{"current_name": "OldName", "last_seen_at": seen}]
    await soldiers.upsert(conn, soldiers.Sighting(4200, Platform.PC, "NewName",
                                                  datetime.now(UTC), datetime.now(UTC),
                                                  SourceType.BATTLELOG))
    cur = await conn.execute("SELECT soldier_id, current_name, last_seen_at FROM soldiers")
    assert await cur.fetchall() == [{"soldier_id": sid, "current_name": "NewName",
                                     "last_seen_at": seen}]


async def test_a_url_with_a_made_up_persona_cannot_take_a_real_soldiers_name(
        conn: Conn) -> None:
    """Anyone may register a soldier by URL, name included, and it is seen 'now'. A name BF4SW
    saw still resolves to BF4SW's soldier, also when the real soldier has since renamed."""
    real = await make_soldier(conn, 4100, name="Alex-")
    renamed = await make_soldier(conn, 4101, name="Bravo")
    await make_soldier(conn, 4101, name="Bravo2", seen=datetime(2027, 1, 1, tzinfo=UTC))
    for pid, name in ((424243, "alex-"), (424244, "BRAVO")):
        fake = await submit(conn, parse_target(platform="pc", persona_id=pid, name=name),
                            client_key="attacker", policy=POLICY)
        assert fake.soldier_id not in (None, real, renamed)
    by_name = await submit(conn, parse_target(platform="pc", name="Alex-"), client_key="t",
                           policy=POLICY)
    assert by_name.soldier_id == real
    by_former = await submit(conn, parse_target(platform="pc", name="bravo"), client_key="t",
                             policy=POLICY)
    assert by_former.soldier_id == renamed
    # a name Battlelog's search confirmed is trusted like BF4SW's: the current holder of
    # "Bravo" found by a lookup wins over the BF4SW soldier who used to have the name
    await conn.execute("INSERT INTO soldier_sources (soldier_id, source_type, first_seen_at, "
                       "last_seen_at) SELECT soldier_id, 'battlelog', now(), now() FROM "
                       "soldiers WHERE persona_id = 424244")
    assert (await submit(conn, parse_target(platform="pc", name="bravo"), client_key="t2",
                         policy=POLICY)).soldier_id not in (None, renamed)
    # a name only ever typed into a URL still resolves to that soldier
    only = await submit(conn, parse_target(platform="pc", persona_id=424245, name="Charlie"),
                        client_key="attacker", policy=POLICY)
    again = await submit(conn, parse_target(platform="pc", name="charlie"), client_key="t",
                         policy=POLICY)
    assert again.soldier_id == only.soldier_id and again.reused


async def test_resolve_lookup(conn: Conn, tmp_path: Path) -> None:
    me = await make_collector(conn, tmp_path, "int-1", Lane.INTERACTIVE, "int-egress")
    sub = await submit(conn, parse_target(platform="pc", name="LookMeUp"), client_key="t",
                       policy=POLICY)
    later = await submitted(conn, platform="pc", name="Later")
    job = await qclaim.claim(conn, me, 60)
    assert job is not None and job.is_lookup and job.request_id == sub.request_id
    # no exact name on the platform: None, nothing written
    assert found(job, (SearchHit(9, "LookMeUp2", 1), SearchHit(8, "LookMeUp", 32))) is None
    assert await count(conn, "SELECT count(*) FROM soldiers") == 0
    hits = (SearchHit(555, "LOOKMEUP", Platform.PS4.battlelog_int),
            SearchHit(556, "LookMeUpToo", Platform.PC.battlelog_int),
            SearchHit(557, "lookmeup", Platform.PC.battlelog_int))
    hit = found(job, hits)
    assert hit is not None
    async with conn.transaction():
        sid = await resolve_lookup(conn, job, hit, POLICY)
    assert sid is not None
    cur = await conn.execute("SELECT persona_id, platform, current_name, last_seen_at "
                             "FROM soldiers")
    assert await cur.fetchall() == [{"persona_id": 557, "platform": "pc",
                                     "current_name": "lookmeup", "last_seen_at": None}]
    cur = await conn.execute("SELECT soldier_id, resources FROM interactive_requests WHERE "
                             "request_id = %s", [sub.request_id])
    assert await cur.fetchone() == {"soldier_id": sid, "resources": [
        "detailed", "profile", "weapons", "vehicles"]}
    assert await count(conn, "SELECT count(*) FROM collection_jobs WHERE soldier_id = %(s)s "
                             "AND request_id = %(r)s AND lane = 'interactive'",
                       {"s": sid, "r": sub.request_id}) == 4
    assert await count(conn, "SELECT count(*) FROM collection_events WHERE event_type = "
                             "'lookup_resolved'") == 1
    cur = await conn.execute("SELECT source_type FROM soldier_sources WHERE soldier_id = %s",
                             [sid])
    assert await cur.fetchall() == [{"source_type": "battlelog"}]  # Battlelog gave the name
    # the found soldier's jobs keep the request's place: ahead of a later request
    await conn.execute("DELETE FROM collection_jobs WHERE job_id = %s", [job.job_id])
    nxt = await qclaim.claim(conn, me, 60)
    assert nxt is not None and nxt.soldier_id == sid and nxt.request_id == sub.request_id
    assert later.position == 1
    # the request's page follows the chain: the look-up done, then each resource's own job
    await qclaim.start(conn, nxt, 60, datetime.now(UTC))
    status = await request_status(conn, sub.request_id, GATE)
    assert status is not None
    assert [(r.resource, r.job_status, r.state_status) for r in status.resources] == [
        ("lookup", None, "current"), ("detailed", "running", "never_attempted"),
        ("profile", "pending", "never_attempted"), ("weapons", "pending", "never_attempted"),
        ("vehicles", "pending", "never_attempted")]


async def test_rate_limit_per_client(conn: Conn) -> None:
    limits = Limits(requests=3, window_seconds=60)
    for i in range(3):
        await submit(conn, parse_target(platform="pc", name=f"Rate{i}"), client_key="10.0.0.1",
                     policy=POLICY, limits=limits)
    with pytest.raises(RateLimited) as exc:
        await submit(conn, parse_target(platform="pc", name="Rate9"), client_key="10.0.0.1",
                     policy=POLICY, limits=limits)
    assert 1 <= exc.value.retry_after <= 60
    await submit(conn, parse_target(platform="pc", name="Rate9"), client_key="10.0.0.2",
                 policy=POLICY, limits=limits)


async def test_eta_grows_with_the_queue_ahead(conn: Conn, tmp_path: Path) -> None:
    await interactive_gate(conn, tmp_path, interval=2.0)
    subs = []
    for i in range(3):
        await make_soldier(conn, 4100 + i)
        subs.append(await submitted(conn, platform="pc", persona_id=4100 + i))
    assert [s.position for s in subs] == [0, 4, 8]
    # per soldier: detailed, weapons, vehicles one slot each, profile two (its account lookup)
    gaps = [(b.eta_at - a.eta_at).total_seconds()  # type: ignore[operator]
            for a, b in itertools.pairwise(subs)]
    assert all(abs(g - 10.0) < 0.5 for g in gaps), gaps
    status = await request_status(conn, subs[2].request_id, GATE)
    assert status is not None and status.position == 8
    assert [r.job_status for r in status.resources] == ["pending"] * 4
    # all collected: the four chained jobs (five gate slots) take most of the 10 s before the
    # next soldier's first request, never beyond it
    for a, b in itertools.pairwise(subs):
        first = await request_status(conn, a.request_id, GATE)
        assert first is not None
        start, done = first.estimated_start_at, first.estimated_done_at
        assert start is not None and done is not None
        assert 7.0 < (done - start).total_seconds() < 10.0, (start, done)
        assert done <= b.eta_at  # type: ignore[operator]
    # a lookup's request is done when the soldier it finds is collected too
    lookup = await submitted(conn, platform="pc", name="Unseen")
    found = await request_status(conn, lookup.request_id, GATE)
    assert found is not None and found.estimated_start_at and found.estimated_done_at
    assert (found.estimated_done_at - found.estimated_start_at).total_seconds() > 9.0


async def test_eta_uses_measured_durations(conn: Conn, tmp_path: Path) -> None:
    await interactive_gate(conn, tmp_path, interval=0.5)
    cur = await conn.execute("SELECT collector_uuid FROM collectors")
    row = await cur.fetchone()
    assert row is not None
    for job_id in range(1, 6):  # weapons jobs measured at 3 s each, longer than the gate
        await conn.execute(
            "INSERT INTO collection_events (event_type, occurred_at, lane, job_id, "
            "lease_token, resource, claimed_at, started_at) VALUES ('succeeded', "
            "now() - interval '7 s', 'interactive', %(j)s, %(t)s, 'weapons', "
            "now() - interval '11 s', now() - interval '10 s')",
            {"j": job_id, "t": "00000000-0000-0000-0000-00000000000" + str(job_id)})
    model = await eta.costs(conn, GATE)
    assert model.measured and abs(model.duration("weapons") - 3.0) < 0.01
    # a job longer than the gate interval: its duration, then the next job's connect lead
    assert model.job_cost("weapons") == pytest.approx(3.0 + eta.OVERHEAD_SECONDS + 0.2, abs=0.01)
    assert model.job_cost("detailed") == pytest.approx(0.6 + eta.OVERHEAD_SECONDS + 0.2)
    slow = await eta.costs(conn, dataclasses.replace(GATE, connect_lead=1.0))
    assert slow.job_cost("detailed") == pytest.approx(0.6 + eta.OVERHEAD_SECONDS + 1.0)


async def test_measuring_the_lane_reads_only_interactive_successes(conn: Conn) -> None:
    """Every status poll measures the interactive lane; the background fleet's far more
    numerous events must not be walked to find its few (the index of migration 0007)."""
    await conn.execute(
        "INSERT INTO collection_events (event_type, occurred_at, lane, job_id, lease_token, "
        "resource, claimed_at, started_at) SELECT 'succeeded', "
        "now() - make_interval(secs => g) + interval '0.5 s', "
        "CASE WHEN g % 500 = 0 THEN 'interactive' ELSE 'background' END, g, "
        "md5(g::text)::uuid, 'detailed', now() - make_interval(secs => g), "
        "now() - make_interval(secs => g) FROM generate_series(1, 5000) g")
    await conn.execute("ANALYZE collection_events")
    sql = q("interactive_measured_durations").encode()
    params = {"window_seconds": 6 * 3600.0, "limit": 200}
    cur = await conn.execute(b"EXPLAIN (FORMAT JSON) " + sql, params)  # type: ignore[arg-type]
    row = await cur.fetchone()
    assert row is not None
    names: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if "Index Name" in node:
            names.append(node["Index Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(row["QUERY PLAN"][0]["Plan"])
    cur = await conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
                             [names])
    defs = [str(r["indexdef"]) for r in await cur.fetchall()]
    assert any("'interactive'" in d and "'succeeded'" in d for d in defs), (names, defs)
    rows = await (await conn.execute(sql, params)).fetchall()  # type: ignore[arg-type]
    assert [(r["resource"], r["n"]) for r in rows] == [("detailed", 10)]


@pytest.mark.parametrize("kwargs, field", [
    ({"platform": "pc", "name": "bad;name"}, "name"),
    ({"platform": "pc", "name": "x" * 40}, "name"),
    ({"platform": "pc", "name": "' OR 1=1 --"}, "name"),
    ({"platform": "nintendo", "name": "ok"}, "platform"),
    ({"platform": "pc", "persona_id": 2**63}, "persona_id"),
    ({"platform": "pc", "persona_id": "-5"}, "persona_id"),
    ({"platform": "pc"}, "name"),
    ({"platform": ["pc"], "name": "ok"}, "platform"),
])
async def test_invalid_input(conn: Conn, kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as exc:
        await submit(conn, parse_target(**kwargs), client_key="t", policy=POLICY)
    assert exc.value.field == field
    if isinstance(kwargs["platform"], list):  # was "platform is required", though one was sent
        assert exc.value.message.startswith("platform must be text")
    assert await count(conn, "SELECT count(*) FROM interactive_requests") == 0


async def test_request_text_names_the_first_request_and_the_end(
        conn: Conn, tmp_path: Path) -> None:
    from bf4ps.cli.request import _describe

    await interactive_gate(conn, tmp_path)
    await make_soldier(conn, 4301)
    sub = await submitted(conn, platform="pc", persona_id=4301)
    done = sub.estimated_done_at
    assert sub.eta_at is not None and done is not None and done > sub.eta_at
    text = _describe(sub)
    assert f"first Battlelog request expected at {sub.eta_at:%H:%M:%S} UTC" in text
    assert f"all collected by about {done:%H:%M:%S} UTC" in text


def test_cli_request(db_url: str) -> None:
    import json

    from click.testing import CliRunner

    from bf4ps.cli.request import request as request_cmd
    from bf4ps.settings import Settings

    runner = CliRunner()
    settings = Settings(database_url=db_url)
    done = runner.invoke(request_cmd, ["Some_Body", "--platform", "pc", "--json"], obj=settings)
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["resources"] == ["lookup"] and data["status"] == "queued"
    assert data["collector_serving"] is False  # no interactive collector registered here
    assert data["estimated_done_at"] > data["eta_at"]  # the lookup, then what it finds
    url = "https://battlelog.battlefield.com/bf4/soldier/UrlMan/stats/31337/ps4/"
    text = runner.invoke(request_cmd, [url], obj=settings)
    assert text.exit_code == 0 and "collects: detailed, profile, weapons, vehicles" in text.output
    # it used to promise "first Battlelog request expected at ... (in ~0 s)"
    assert "no interactive collector is online right now" in text.output
    assert "expected at" not in text.output
    bad = runner.invoke(request_cmd, ["bad;name", "--platform", "pc"], obj=settings)
    assert bad.exit_code == 2 and "soldier names use" in bad.output
    missing = runner.invoke(request_cmd, ["Someone"], obj=settings)
    assert missing.exit_code == 2
