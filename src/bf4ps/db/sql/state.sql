-- Durable per soldier+resource collection state (the backlog), written by the queue engine in
-- the same transaction as the job change and its events.

-- name: state_retry
-- The failed job's own soldier and resource, fenced by its lease (db/functions/state.sql).
SELECT * FROM bf4ps_state_failed(%(job_id)s, %(lease_token)s, false, %(now)s,
                                 %(next_attempt_at)s, %(error_class)s, %(error_message)s)

-- name: state_unavailable
SELECT * FROM bf4ps_state_failed(%(job_id)s, %(lease_token)s, true, %(now)s, NULL,
                                 %(error_class)s, %(error_message)s)

-- name: state_failures
-- Read under the failing job's row lock (lock_owned_job): one job per soldier and resource,
-- so no other failure of it runs meanwhile (the collector holds no UPDATE on the table, which
-- a FOR UPDATE would need; the count is raised by bf4ps_state_failed itself).
SELECT consecutive_failures FROM collection_state
WHERE soldier_id = %(soldier_id)s AND resource = %(resource)s

-- name: state_init
-- A known soldier's missing state rows, every resource (db/functions/state.sql).
SELECT bf4ps_state_init(%(soldier_id)s, %(eligible_since)s)

-- name: parking_streak
-- Of the soldier+resource's last %(n)s finished attempts, how many are failures of a parking
-- class (ErrorClass.parks; soft throttles excluded): parking after consecutive failures
-- requires all of them to be.
SELECT count(*) FILTER (
           WHERE event_type = 'failed' AND error_class = ANY(%(classes)s::text[])
             AND COALESCE(details->>'soft_throttle', '0') <> '1') AS parking
FROM (SELECT event_type, error_class, details FROM collection_events
      WHERE soldier_id = %(soldier_id)s AND resource = %(resource)s
        AND event_type IN ('succeeded', 'failed')
      ORDER BY occurred_at DESC LIMIT %(n)s) last_ones
