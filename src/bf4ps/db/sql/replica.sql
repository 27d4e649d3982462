-- The website's read replica (web/replica.py): how far the primary's WAL has gone and how far
-- the replica has replayed it, both as byte positions.

-- name: replica_primary_lsn
SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS lsn

-- name: replica_replay_lsn
-- A server not in recovery (the URL names a primary, or a promoted replica) replays nothing:
-- lsn is null and its reads are not used.
SELECT pg_is_in_recovery() AS standby,
       CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() - '0/0'::pg_lsn END AS lsn
