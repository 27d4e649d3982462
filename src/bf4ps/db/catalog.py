"""The schema a database really has, read back from pg_catalog in two normalised forms.

`describe` gives a comparable structure (tests/schema/expected_schema.json); `schema_sql` gives
the readable schema, every table, index, function, trigger and grant (bf4ps/db/schema.sql).
Both committed files are rewritten from a freshly migrated database by one command,
`python -m tests.schema.regenerate`; tests/db/test_schema.py fails while either disagrees
with the migrations. `python -m bf4ps.db.catalog URL` prints a database's schema.sql.
"""

from __future__ import annotations

import asyncio
import re
import sys
from typing import Any, NamedTuple

from bf4ps.db.connect import connection
from bf4ps.db.queries import Conn, all_rows

Schema = dict[str, Any]
_QUALIFIER = re.compile(r"\b[a-z_][a-z0-9_]*\.(?=[a-z_])")


class _Column(NamedTuple):
    table_name: str
    column_name: str
    data_type: str
    nullable: bool
    default: str | None
    identity: str


class _Named(NamedTuple):
    """An object's name and its definition (or a checksum of it)."""

    name: str
    definition: str


class _Name(NamedTuple):
    name: str


class _Part(NamedTuple):
    """A table's constraint, index or trigger."""

    table_name: str
    name: str
    definition: str


class _Storage(NamedTuple):
    """A table's storage where it is not the default (UNLOGGED, WITH (...))."""

    table_name: str
    definition: str


class _PartitionKey(NamedTuple):
    table_name: str
    definition: str


class _Function(NamedTuple):
    signature: str
    definition: str


class _Grant(NamedTuple):
    kind: str
    object: str
    grantee: str
    columns: str | None
    privilege: str


async def describe(conn: Conn) -> Schema:
    tables: dict[str, Any] = {}
    for col in await all_rows(conn, _Column, "catalog_columns"):
        table = tables.setdefault(col.table_name, {"columns": {}, "constraints": {},
                                                   "indexes": {}, "triggers": {}})
        table["columns"][col.column_name] = {
            "type": col.data_type, "nullable": col.nullable, "default": col.default,
            "identity": col.identity}
    for part, query in (("constraints", "catalog_constraints"), ("indexes", "catalog_indexes"),
                        ("triggers", "catalog_triggers")):
        for row in await all_rows(conn, _Part, query):
            tables[row.table_name][part][row.name] = row.definition
    for kept in await all_rows(conn, _Storage, "catalog_storage"):
        tables[kept.table_name]["storage"] = kept.definition
    functions = dict(await all_rows(conn, _Named, "catalog_functions"))
    domains = dict(await all_rows(conn, _Named, "catalog_domains"))
    views = {r.name: _view_text(r.definition)
             for r in await all_rows(conn, _Named, "catalog_views")}
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


HEADER = """\
-- The BF4PS schema as the migrations and the code files (db/functions/) leave it, read back
-- from an upgraded database.
-- GENERATED, do not edit: after changing a migration or a code file run
--     python -m tests.schema.regenerate
-- (tests/db/test_schema.py fails while this file and the migrations disagree).
-- Grants name every role but the owner; a function is executable by the roles granted here.
"""


async def schema_sql(conn: Conn) -> str:
    """The whole schema as SQL text: domains, types, then each table with its indexes,
    triggers and grants, views, and each function with its grants (names sorted)."""
    described = await describe(conn)
    grants = _grants(await all_rows(conn, _Grant, "schema_grants"))
    keys = dict(await all_rows(conn, _PartitionKey, "schema_partition_keys"))
    backing = {r.name for r in await all_rows(conn, _Name, "schema_constraint_indexes")}
    out = [HEADER, "\n-- Domains and types\n\n"]
    out += [f"CREATE DOMAIN {name} AS {d};\n" for name, d in sorted(described["domains"].items())]
    out += [f"CREATE TYPE {r.name} AS ({r.definition});\n"
            for r in await all_rows(conn, _Named, "schema_composite_types")]
    out.append("\n-- Tables\n")
    for name, table in sorted(described["tables"].items()):
        out.append("\n" + _table(name, table, keys.get(name)))
        out += [f"{d};\n" for i, d in sorted(table["indexes"].items()) if i not in backing]
        out += [f"{d};\n" for _, d in sorted(table["triggers"].items())]
        out += grants.get(("TABLE", name), [])
    out.append("\n-- Views\n")
    for name, text in sorted((await _views(conn)).items()):
        out.append(f"\nCREATE VIEW {name} AS\n{text};\n")
        out += grants.get(("TABLE", name), [])
    out.append("\n-- Functions\n")
    for row in await all_rows(conn, _Function, "schema_function_texts"):
        out.append("\n" + "\n".join(line.rstrip() for line in
                                    row.definition.strip().splitlines()) + ";\n")
        out += grants.get(("FUNCTION", row.signature), [])
    out.append("\n-- Sequences and the schema itself\n\n")
    out += [line for (kind, _), lines in sorted(grants.items())
            if kind in ("SEQUENCE", "SCHEMA") for line in lines]
    return "".join(out)


def _table(name: str, table: dict[str, Any], partition_key: str | None) -> str:
    lines = [_column(col, spec) for col, spec in table["columns"].items()]
    lines += [f"CONSTRAINT {c} {d}" for c, d in sorted(table["constraints"].items())]
    storage = table.get("storage", "")
    unlogged = "UNLOGGED " if storage.startswith("UNLOGGED") else ""
    options = storage.removeprefix("UNLOGGED").strip()
    tail = (f" PARTITION BY {partition_key}" if partition_key else "") + (
        f" {options}" if options else "")
    return (f"CREATE {unlogged}TABLE {name} (\n    " + ",\n    ".join(lines)
            + f"\n){tail};\n")


def _column(name: str, spec: dict[str, Any]) -> str:
    text = f"{name} {spec['type']}"
    if spec["identity"]:
        text += {"a": " GENERATED ALWAYS", "d": " GENERATED BY DEFAULT"}[spec["identity"]]
        text += " AS IDENTITY"
    if not spec["nullable"]:
        text += " NOT NULL"
    if spec["default"] is not None:
        text += f" DEFAULT {spec['default']}"
    return text


async def _views(conn: Conn) -> dict[str, str]:
    """Each view's text as PostgreSQL lays it out, without column qualifiers (_view_text)."""
    return {r.name: "\n".join(_QUALIFIER.sub("", line).rstrip() for line in
                               r.definition.strip().rstrip(";").splitlines())
            for r in await all_rows(conn, _Named, "catalog_views")}


def _grants(rows: list[_Grant]) -> dict[tuple[str, str], list[str]]:
    """GRANT statements by object: one per grantee (and set of columns)."""
    privileges: dict[tuple[str, str, str, str | None], list[str]] = {}
    for r in rows:
        privileges.setdefault((r.kind, r.object, r.grantee, r.columns), []).append(r.privilege)
    by_object: dict[tuple[str, str], list[str]] = {}
    for (kind, name, grantee, columns), privs in privileges.items():
        what = ", ".join(f"{p} ({columns})" if columns else p for p in privs)
        by_object.setdefault((kind, name), []).append(
            f"GRANT {what} ON {kind} {name} TO {grantee};\n")
    return by_object


async def _main(url: str) -> None:
    async with connection(url) as conn:
        sys.stdout.write(await schema_sql(conn))


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1]))
