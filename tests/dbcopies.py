"""Per-test databases without a CREATE DATABASE per test.

A copy of the migrated template costs about half a second of server time (the catalogue alone
is some 8 MB), most of a short database test. So a worker keeps the copies its tests are done
with and puts each back as the template left it before the next test takes it: the tables the
test filled are truncated (and their planner statistics forgotten), the template's own rows
are loaded again and every sequence is set back. A copy whose schema the test changed (the
catalogue's rows differ), that still has a session, or a prepared transaction, is dropped
instead, and the next test gets a fresh copy: the reset never has to guess.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from bf4ps.db.connect import with_dbname

USER_TABLES = (
    "SELECT c.oid::regclass::text AS name, c.oid FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' "
    "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname NOT LIKE 'pg_toast%' ORDER BY 1")
COLUMNS = ("SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 "
           "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum")
SEQUENCES = ("SELECT format('%I.%I', schemaname, sequencename) AS name, start_value, "
             "last_value FROM pg_sequences")
# what DDL, a grant or a database setting changes (a test's own schema): row counts and the
# newest row of the catalogues that describe the schema
CATALOGUES = ("pg_class", "pg_attribute", "pg_proc", "pg_trigger", "pg_constraint", "pg_type",
              "pg_namespace", "pg_index", "pg_rewrite", "pg_policy", "pg_sequence",
              "pg_description", "pg_extension", "pg_db_role_setting")
FINGERPRINT = sql.SQL(" || '|' || ").join(
    sql.SQL("(SELECT count(*) || ':' || coalesce(max(xmin::text::bigint), 0) FROM {})").format(
        sql.Identifier(c)) for c in CATALOGUES)
OTHERS = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
          "AND pid <> pg_backend_pid()")
FILLED = sql.SQL("SELECT * FROM ({}) filled")
PREPARED = "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()"


def _one(conn: psycopg.Connection[tuple[object, ...]], query: str | sql.Composable) -> object:
    row = conn.execute(query).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


@dataclass
class Copies:
    """The copies of one template on one server, for one worker."""

    server_url: str
    template: str
    spare: list[str] = field(default_factory=list)
    seeds: dict[str, tuple[list[str], bytes]] = field(default_factory=dict)
    sequences: list[tuple[str, int, int | None]] = field(default_factory=list)
    tables: list[tuple[str, int]] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    made: int = 0
    reused: int = 0

    def learn(self) -> None:
        """What a fresh copy holds: the template's rows and sequences (read once)."""
        with psycopg.connect(with_dbname(self.server_url, self.template)) as conn:
            for name, oid in conn.execute(USER_TABLES).fetchall():
                self.tables.append((str(name), int(oid)))  # type: ignore[call-overload]
                if not _one(conn, sql.SQL("SELECT EXISTS (SELECT FROM {})").format(
                        sql.SQL(str(name)))):
                    continue
                cols = [str(r[0]) for r in conn.execute(COLUMNS, [oid]).fetchall()]
                copy = sql.SQL("COPY {} ({}) TO STDOUT").format(
                    sql.SQL(str(name)), sql.SQL(", ").join(map(sql.Identifier, cols)))
                with conn.cursor().copy(copy) as out:
                    self.seeds[str(name)] = (cols, b"".join(bytes(b) for b in out))
            self.sequences = [(str(n), int(s), None if v is None else int(v))  # type: ignore[call-overload]
                              for n, s, v in conn.execute(SEQUENCES).fetchall()]

    def take(self) -> str:
        """A database as the template left it: a spare one, else a new copy."""
        if self.spare:
            self.reused += 1
            return self.spare.pop()
        name = f"bf4ps_t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.server_url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self.template)))
        with psycopg.connect(with_dbname(self.server_url, name), autocommit=True) as conn:
            conn.execute("SELECT bf4ps_no_temporary()")  # what `bf4ps db upgrade` does on it
            self.fingerprints[name] = str(_one(conn, sql.SQL("SELECT ") + FINGERPRINT))
        self.made += 1
        return name

    def give_back(self, name: str) -> None:
        """Reset it for the next test, or drop it when a reset could not be exact."""
        try:
            if self._reset(name):
                self.spare.append(name)
                return
        except psycopg.Error:
            pass
        self.drop(name)

    def drop(self, name: str) -> None:
        self.fingerprints.pop(name, None)
        with psycopg.connect(self.server_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))

    def drop_all(self) -> None:
        while self.spare:
            self.drop(self.spare.pop())

    def _reset(self, name: str) -> bool:
        with psycopg.connect(with_dbname(self.server_url, name), autocommit=True) as conn:
            deadline = time.monotonic() + 2
            while _one(conn, OTHERS):  # a closed connection's server process takes a moment
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
            if _one(conn, PREPARED) or str(_one(conn, sql.SQL("SELECT ") + FINGERPRINT)) \
                    != self.fingerprints.get(name):
                return False
            conn.execute("SET lock_timeout = '2s'")
            filled = {str(r[0]) for r in conn.execute(FILLED.format(sql.SQL(" UNION ALL ").join(
                sql.SQL("SELECT {} WHERE EXISTS (SELECT FROM {})").format(sql.Literal(t),
                                                                       sql.SQL(t))
                for t, _ in self.tables))).fetchall()} | set(self.seeds)
            with conn.transaction():
                # no triggers, no foreign-key checks: rows go in any order, and so do the
                # template's own back in (a DELETE is far cheaper than a TRUNCATE here: a
                # test leaves a few rows in a few tables, a TRUNCATE makes every file anew)
                conn.execute("SET LOCAL session_replication_role = replica")
                for table in sorted(filled):
                    conn.execute(sql.SQL("DELETE FROM {}").format(sql.SQL(table)))
                oids = [oid for t, oid in self.tables if t in filled]
                conn.execute("DELETE FROM pg_statistic WHERE starelid = ANY(%s)", [oids])
                for table, (cols, data) in self.seeds.items():
                    copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
                        sql.SQL(table), sql.SQL(", ").join(map(sql.Identifier, cols)))
                    with conn.cursor().copy(copy) as into:
                        into.write(data)
                for seq, start, last in self.sequences:
                    conn.execute("SELECT setval(%s::regclass, %s, %s)",
                                 [seq, start if last is None else last, last is not None])
            self.fingerprints[name] = str(_one(conn, sql.SQL("SELECT ") + FINGERPRINT))
        return True
