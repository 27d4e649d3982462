"""Rewrite expected_schema.json from a freshly migrated database (run after changing a
migration on purpose, then review the diff): python -m tests.schema.regenerate"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

from bf4ps.db import catalog, embedded, migrate
from bf4ps.db.connect import connection, ensure_database, with_dbname

OUT = Path(__file__).resolve().parent / "expected_schema.json"


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
        OUT.write_text(json.dumps(described, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUT} ({len(described['tables'])} tables)")
    finally:
        embedded.stop(base / "data")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
