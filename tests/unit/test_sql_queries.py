"""The named-query loader: whole-line comments document the .sql files and are dropped on loading,
so the hot queue statements stay within psycopg's parse cache."""

from __future__ import annotations

import pytest
from psycopg import _queries

from bf4ps.db.queries import all_queries, parse, q

HOT_PATH = ["claim_job", "start_job", "renew_lease", "finalize_success", "lock_owned_job",
            "lock_owned_job_now", "job_retry", "release_job"]


def test_whole_line_comments_are_dropped_and_code_is_kept() -> None:
    text = ("-- name: first\n-- what it does\n  -- indented note\nSELECT 1 -- inline stays\n"
            "FROM t\n\n-- name: second\nSELECT '--not a comment'\n-- trailing note\n")
    assert parse(text) == {"first": "SELECT 1 -- inline stays\nFROM t",
                           "second": "SELECT '--not a comment'"}


def test_a_name_defined_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        parse("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n")


def test_no_packaged_query_keeps_a_comment_line() -> None:
    for name, text in all_queries().items():
        assert not any(line.lstrip().startswith("--") for line in text.splitlines()), name


@pytest.mark.parametrize("name", HOT_PATH)
def test_hot_queue_statements_fit_psycopgs_parse_cache(name: str) -> None:
    # psycopg re-parses (in Python) every execution of a longer text; the claim once was longer
    assert len(q(name).encode()) <= _queries.MAX_CACHED_STATEMENT_LENGTH


def _code_texts() -> dict[str, str]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [*(root / "src").rglob("*.py"), *(root / "bench").rglob("*.py"),
             *(root / "tests").rglob("*.py")]
    return {str(f.relative_to(root)): f.read_text(encoding="utf-8") for f in files}


def test_every_query_the_code_names_exists() -> None:
    import re

    named = set(all_queries())
    # q(NAME), and the helpers of db/queries.py that run a query by its name (one, all_rows, ...)
    by_name = re.compile(r'\bq\(\s*"([a-z0-9_]+)"|(?<![\w.])(?:one|one_row|scalar|all_rows|'
                         r'execute)\(\s*[\w.]+,\s*"([a-z0-9_]+)"')
    missing = {f"{path}: {name!r}" for path, text in _code_texts().items()
               for found in by_name.findall(text) for name in found
               if name and name not in named}
    assert not missing, sorted(missing)


def test_every_named_query_is_used_by_the_code() -> None:
    # a query is used when its name stands as a string in src/ or bench/ (some are chosen by
    # a variable: q(name) with name from a table of names); a test alone does not keep one alive
    import re

    texts = [t for path, t in _code_texts().items() if not path.startswith("tests")]
    mentioned = {s for t in texts for s in re.findall(r'"([a-z][a-z0-9_]*)"', t)}
    unused = sorted(set(all_queries()) - mentioned)
    assert not unused, f"named queries nothing uses: {unused}"


def test_a_query_written_for_both_item_kinds_loads_once_per_kind() -> None:
    text = ("-- name: {item}_x\nSELECT {item}_id, {p.counters} FROM soldier_{item}_stats p\n"
            "-- note\nWHERE ({extras}) IS NOT NULL AND x = ANY(ARRAY[{arrays}])\n")
    got = parse(text)
    assert set(got) == {"weapon_x", "vehicle_x"}
    assert got["vehicle_x"] == (
        "SELECT vehicle_id, p.kills, p.time_in_seconds, p.destroy_x_in_y FROM "
        "soldier_vehicle_stats p\nWHERE (service_stars, service_stars_progress) IS NOT NULL "
        "AND x = ANY(ARRAY[%(kills)s::bigint[], %(time_in_seconds)s::bigint[], "
        "%(destroy_x_in_y)s::bigint[], %(service_stars)s::bigint[], "
        "%(service_stars_progress)s::float8[]])")
    with pytest.raises(ValueError, match="defined twice"):
        parse(text + "-- name: weapon_x\nSELECT 1\n")


def test_the_item_columns_are_the_item_kinds_stats() -> None:
    from bf4ps.db.queries import ITEM_COLUMNS
    from bf4ps.stats.items import KINDS

    assert set(ITEM_COLUMNS) == {kind.name for kind in KINDS}
    for kind in KINDS:
        cols = ITEM_COLUMNS[kind.name]
        assert sorted(cols["counters"] + cols["extras"]) == sorted(kind.stat_fields[1:])
        assert kind.catalog_query in all_queries() and kind.stats_query in all_queries()


def test_a_board_query_loads_once_per_board_with_its_index_key_and_predicate() -> None:
    from bf4ps.db.queries import BOARDS
    from bf4ps.stats.discovery import Board

    assert set(BOARDS) == {board.value for board in Board}
    found = parse("-- name: b_{board}\nSELECT 1 WHERE true{where}\nORDER BY {order} DESC\n")
    assert found["b_kd"] == ("SELECT 1 WHERE true AND d.deaths > 0\n"
                             "ORDER BY (d.kills::double precision / d.deaths) DESC")
    assert found["b_spm"] == "SELECT 1 WHERE true\nORDER BY d.score_per_minute DESC"
    assert all(board.query in all_queries() for board in Board)


def test_the_detailed_columns_are_written_once_and_are_the_detailed_stats() -> None:
    """`{detailed}` lists the parsed detailed statistics' fields, in their order, in each of its
    three forms."""
    import dataclasses

    from bf4ps.battlelog.models import DetailedStats
    from bf4ps.db.queries import DETAILED_COLUMNS

    assert tuple(f.name for f in dataclasses.fields(DetailedStats)) == DETAILED_COLUMNS
    loaded = parse("-- name: d\nSELECT {detailed}, {%detailed}, {cur.detailed}\n")["d"]
    assert loaded.startswith("SELECT rank, skill, ") and ", %(rank)s, %(skill)s, " in loaded
    assert ", cur.rank, cur.skill, " in loaded and loaded.endswith("cur.chain_link_score")
    assert "{" not in all_queries()["detailed_write"]
