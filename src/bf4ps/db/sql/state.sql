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
