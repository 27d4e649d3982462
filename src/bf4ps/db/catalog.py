"""A normalized description of the schema a database really has, read from pg_catalog.

The test suite compares a freshly migrated database with the committed description of the
intended schema (tests/schema/expected_schema.json); `python -m bf4ps.db.catalog URL` prints it.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

from bf4ps.db.connect import Conn, connection
from bf4ps.db.queries import all_rows

Schema = dict[str, Any]
_QUALIFIER = re.compile(r"\b[a-z_][a-z0-9_]*\.(?=[a-z_])")


async def describe(conn: Conn) -> Schema:
    tables: dict[str, Any] = {}
    for row in await all_rows(conn, "catalog_columns"):
        table = tables.setdefault(row["table_name"], {"columns": {}, "constraints": {},
                                                      "indexes": {}, "triggers": {}})
        table["columns"][row["column_name"]] = {
            "type": row["data_type"], "nullable": row["nullable"], "default": row["default"],
            "identity": row["identity"]}
    for row in await all_rows(conn, "catalog_constraints"):
        tables[row["table_name"]]["constraints"][row["name"]] = row["definition"]
    for row in await all_rows(conn, "catalog_indexes"):
        tables[row["table_name"]]["indexes"][row["name"]] = row["definition"]
    for row in await all_rows(conn, "catalog_triggers"):
        tables[row["table_name"]]["triggers"][row["name"]] = row["definition"]
    functions = {r["name"]: r["definition"] for r in await all_rows(conn, "catalog_functions")}
    domains = {r["name"]: r["definition"] for r in await all_rows(conn, "catalog_domains")}
    views = {r["name"]: _view_text(str(r["definition"]))
             for r in await all_rows(conn, "catalog_views")}
    return {"tables": tables, "functions": functions, "domains": domains, "views": views}


def _view_text(definition: str) -> str:
    """A view's definition without layout and column qualifiers (PostgreSQL 15 writes
    `t.col`, 16 and later `col` where that is unambiguous)."""
    return _QUALIFIER.sub("", " ".join(definition.split()))


def diff(expected: Schema, actual: Schema, path: str = "") -> list[str]:
    """Human-readable differences, one line each (empty when equal)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[str] = []
        for key in sorted(set(expected) | set(actual)):
            where = f"{path}.{key}" if path else key
            if key not in actual:
                out.append(f"missing in database: {where}")
            elif key not in expected:
                out.append(f"not in the intended schema: {where}")
            else:
                out.extend(diff(expected[key], actual[key], where))
        return out
    return [] if expected == actual else [f"{path}: intended {expected!r}, got {actual!r}"]


async def _main(url: str) -> None:
    async with connection(url) as conn:
        print(json.dumps(await describe(conn), indent=1, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1]))
