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
