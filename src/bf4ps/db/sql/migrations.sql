-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: migrations_table_exists
SELECT to_regclass('schema_migrations') IS NOT NULL AS present

-- name: migration_session
-- A migration waits for the locks it needs and may run long: the session bounds that every
-- other session has (lock and statement timeouts) are lifted for this one.
SELECT set_config('lock_timeout', '0', false), set_config('statement_timeout', '0', false)

-- name: list_migrations
SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version

-- name: record_migration
INSERT INTO schema_migrations (version, name, checksum) VALUES (%(version)s, %(name)s, %(checksum)s)

-- name: ensure_event_partitions
SELECT bf4ps_ensure_event_partitions((now() - interval '1 month')::date, %(months)s + 1) AS created

-- name: no_temporary
-- No runtime role may create temporary objects (db/schema.sql): re-applied on every upgrade,
-- since a database's own rights are not copied with it.
SELECT bf4ps_no_temporary()

-- name: grant_role
-- `bf4ps db grant`: a migration-defined function checks the names and grants (db/schema.sql).
SELECT bf4ps_grant_role(%(role)s, %(login)s)

-- name: record_compat
INSERT INTO schema_compat (version, compatible_from) VALUES (%(version)s, %(compatible_from)s)
ON CONFLICT (version) DO UPDATE SET compatible_from = excluded.compatible_from

-- name: schema_compat_state
SELECT m.version, c.compatible_from
FROM schema_migrations m LEFT JOIN schema_compat c USING (version)
ORDER BY m.version

-- name: connected_processes
-- BF4PS sessions on this database (their application_name names build and schema).
SELECT application_name, client_addr::text AS client_addr, usename::text AS login,
       backend_start, count(*) OVER (PARTITION BY application_name, client_addr) AS sessions
FROM pg_stat_activity
WHERE datname = current_database() AND application_name LIKE 'bf4ps/%%'
ORDER BY application_name, client_addr, backend_start

-- name: migration_lock
-- One migrating process at a time (a session lock: held across the migrations' transactions).
SELECT pg_advisory_lock(%(lock)s)

-- name: migration_unlock
SELECT pg_advisory_unlock(%(lock)s)

-- name: code_table_exists
SELECT to_regclass('schema_code') IS NOT NULL AS present

-- name: list_code
SELECT file, checksum, applied_at FROM schema_code ORDER BY file

-- name: code_session
-- A code file is checked when it runs, not when it is made: a function may name one that a
-- later file makes (as pg_dump's own output does)
SELECT set_config('check_function_bodies', 'off', true)

-- name: record_code
INSERT INTO schema_code (file, checksum) VALUES (%(file)s, %(checksum)s)
ON CONFLICT (file) DO UPDATE SET checksum = excluded.checksum, applied_at = now()

-- name: forget_code
DELETE FROM schema_code WHERE NOT (file = ANY (%(files)s))
