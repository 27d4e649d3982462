-- Event retention: whole monthly partitions are dropped; the rest is deleted in small batches.
-- Soldiers and statistics are never touched.

-- name: event_partitions
SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'collection_events'::regclass
ORDER BY c.relname

-- name: drop_event_partition
-- An owner-run function (db/schema.sql): the scheduler's role does not own the partitions.
SELECT bf4ps_drop_event_partition(%(name)s) AS dropped

-- name: events_delete_batch
-- Events past the horizon (never younger than the policy's event_retention_days:
-- bf4ps_events_prune, db/functions/events.sql); one
-- row per event deleted.
SELECT * FROM bf4ps_events_prune(%(cutoff)s::timestamptz, %(batch)s::integer)

-- name: ensure_partitions_ahead
SELECT bf4ps_ensure_event_partitions(date_trunc('month', now())::date, %(months)s) AS created

-- name: ledger_delete_batch
-- Old request-ledger rows, in small batches (bf4ps_ledger_prune in db/schema.sql). Rows inside
-- twice the longest budget window are kept whatever the horizon: the budget arithmetic, the
-- ETA and the restore guard read them. One row per ledger row deleted.
SELECT * FROM bf4ps_ledger_prune(%(cutoff)s::timestamptz, %(batch)s::integer)
