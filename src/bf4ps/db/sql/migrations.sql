-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: list_migrations
SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version

-- name: record_migration
INSERT INTO schema_migrations (version, name, checksum) VALUES (%(version)s, %(name)s, %(checksum)s)

-- name: ensure_event_partitions
SELECT bf4ps_ensure_event_partitions((now() - interval '1 month')::date, %(months)s + 1) AS created

-- name: grant_role
-- `bf4ps db grant`: a migration-defined function checks the names and grants (migration 0013).
SELECT bf4ps_grant_role(%(role)s, %(login)s)
