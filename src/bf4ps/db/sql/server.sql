-- The server itself, below any schema: its databases, a session's time zone, its version.

-- name: database_exists
SELECT 1 FROM pg_database WHERE datname = %(dbname)s

-- name: session_utc
SET TIME ZONE 'UTC'

-- name: server_version
SHOW server_version
