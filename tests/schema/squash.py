"""Write a baseline migration from a migrated database: the schema as pg_dump sees it, with the
cluster roles it needs in front and the rows the migrations seeded behind, so that a new
database gets every object in one file instead of replaying the history.

    python -m tests.schema.squash DATABASE_URL OUT.sql --through N [--pg-dump PATH]

The database must be migrated through N and hold nothing else. Its monthly event partitions
(made by `bf4ps db upgrade`, not by a migration) and the runner's own schema_migrations table are
left out. Review the output, then check it with the schema tests: a baseline that differs from
the migrated schema fails tests/db/test_schema.py.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

_ENTRY = re.compile(r"^--\n-- Name: (?P<name>.*?); Type: (?P<type>[^;]+);.*\n--\n", re.MULTILINE)
_RUNNER_OWNED = {("schema_migrations", "TABLE"), ("schema_migrations schema_migrations_pkey",
                                                 "CONSTRAINT")}

PREAMBLE = """\
-- Cluster roles (kept if they exist; CREATEROLE is needed the first time) and what they may do
-- with each other: the operator grants the three process roles to login roles.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['bf4ps_collector', 'bf4ps_scheduler', 'bf4ps_web', 'bf4ps_operator']
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END;
$$;
GRANT bf4ps_collector, bf4ps_scheduler, bf4ps_web TO bf4ps_operator WITH ADMIN OPTION;

SET LOCAL check_function_bodies = false;
SELECT pg_catalog.set_config('search_path', '', true);
"""

SEEDS = """\
-- The rows the schema starts with: the fleet budget (off), the restore guard's anchor and this
-- database's own ledger receipt key.
RESET search_path;
INSERT INTO fleet_budget (budget_id) VALUES (1);
INSERT INTO restore_guard (guard_id, ledger_relid) VALUES (1, 'request_ledger'::regclass);
INSERT INTO ledger_receipt_key (secret)
VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
RESET check_function_bodies;
"""


def dump(url: str, pg_dump: str) -> str:
    return subprocess.run(
        [pg_dump, "--schema-only", "--no-owner", "--no-comments",
         "--exclude-table=public.collection_events_2*", url],
        check=True, capture_output=True, text=True).stdout


def entries(text: str) -> list[tuple[str, str, str]]:
    """(name, type, statements) of each object of a plain-format dump, in its order."""
    marks = list(_ENTRY.finditer(text))
    out = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end():end].strip()
        body = re.sub(r"\n+--\n-- PostgreSQL database dump complete.*", "", body, flags=re.DOTALL)
        out.append((mark["name"], mark["type"], body))
    return out


def baseline(text: str, through: int) -> str:
    kept = [body for name, kind, body in entries(text)
            if (name, kind) not in _RUNNER_OWNED and kind != "SCHEMA"]
    head = (f"-- Baseline: the schema of migrations 0001-{through:04d} in one file (their text "
            "is in the\n-- git history). A database migrated through them is already here; "
            "see bf4ps/db/migrate.py.\n\n")
    return head + PREAMBLE + "\n" + "\n\n".join(kept) + "\n\n" + SEEDS


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--through", type=int, required=True)
    parser.add_argument("--pg-dump", default="pg_dump", help="of the oldest server supported")
    args = parser.parse_args()
    args.out.write_text(baseline(dump(args.url, args.pg_dump), args.through))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
