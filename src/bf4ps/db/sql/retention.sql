-- Event retention: whole monthly partitions are dropped; the rest is deleted in small batches.
-- Soldiers and statistics are never touched.

-- name: event_partitions
SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'collection_events'::regclass
ORDER BY c.relname

-- name: drop_event_partition
-- An owner-run function (migration 0013): the scheduler's role does not own the partitions.
SELECT bf4ps_drop_event_partition(%(name)s) AS dropped

-- name: events_delete_batch
DELETE FROM collection_events
WHERE (event_id, occurred_at) IN (
    SELECT event_id, occurred_at FROM collection_events
    WHERE occurred_at < %(cutoff)s
    LIMIT %(batch)s)

-- name: ensure_partitions_ahead
SELECT bf4ps_ensure_event_partitions(date_trunc('month', now())::date, %(months)s) AS created

-- name: ledger_delete_batch
-- Old request-ledger rows, in small batches. Rows inside twice the fleet budget window are
-- kept whatever the horizon: the budget arithmetic and the ETA read them.
DELETE FROM request_ledger
WHERE request_id IN (
    SELECT request_id FROM request_ledger
    WHERE slot_at < LEAST(%(cutoff)s::timestamptz,
                          clock_timestamp() - make_interval(
                              secs => 2 * (SELECT window_seconds FROM fleet_budget)))
    LIMIT %(batch)s)
