-- Durable per soldier+resource collection state (the backlog), written by the queue engine in
-- the same transaction as the job change and its events.

-- name: state_retry
UPDATE collection_state
SET status = 'retry_wait', last_attempt_at = %(now)s, next_attempt_at = %(next_attempt_at)s,
    consecutive_failures = consecutive_failures + 1, attempts_total = attempts_total + 1,
    last_error_class = %(error_class)s, last_error_message = %(error_message)s,
    last_error_at = %(now)s, updated_at = %(now)s
WHERE soldier_id = %(soldier_id)s AND resource = %(resource)s
RETURNING consecutive_failures

-- name: state_unavailable
UPDATE collection_state
SET status = 'unavailable', last_attempt_at = %(now)s, next_attempt_at = NULL,
    consecutive_failures = consecutive_failures + 1, attempts_total = attempts_total + 1,
    last_error_class = %(error_class)s, last_error_message = %(error_message)s,
    last_error_at = %(now)s, updated_at = %(now)s
WHERE soldier_id = %(soldier_id)s AND resource = %(resource)s
RETURNING consecutive_failures

-- name: state_failures
SELECT consecutive_failures FROM collection_state
WHERE soldier_id = %(soldier_id)s AND resource = %(resource)s
FOR UPDATE

-- name: state_init
INSERT INTO collection_state (soldier_id, resource, eligible_since)
SELECT %(soldier_id)s, r, %(eligible_since)s
FROM unnest(%(resources)s::text[]) AS r
ON CONFLICT DO NOTHING

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
