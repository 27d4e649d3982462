"""Rewrite the committed schema files from a freshly migrated database: the comparable
tests/schema/expected_schema.json and the readable src/bf4ps/db/schema.sql. Run after changing
a migration on purpose, then review the diff: python -m tests.schema.regenerate"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

from bf4ps.db import catalog, embedded, migrate
from bf4ps.db.connect import connection, ensure_database, with_dbname

OUT = Path(__file__).resolve().parent / "expected_schema.json"
SCHEMA_SQL = Path(catalog.__file__).resolve().parent / "schema.sql"


async def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="bf4ps-schema-"))
    base.chmod(0o755)
    try:
        server = embedded.start(base / "data", cleanup_mode="delete")
        await ensure_database(server, "schema")
        url = with_dbname(server, "schema")
        await migrate.upgrade(url)
        async with connection(url) as conn:
            described = await catalog.describe(conn)
            text = await catalog.schema_sql(conn)
        OUT.write_text(json.dumps(described, indent=1, sort_keys=True) + "\n")
        SCHEMA_SQL.write_text(text)
        print(f"wrote {OUT} ({len(described['tables'])} tables) and {SCHEMA_SQL} "
              f"({len(text.splitlines())} lines)")
    finally:
        embedded.stop(base / "data")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
