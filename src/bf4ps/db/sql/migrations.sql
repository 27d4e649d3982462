-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

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
