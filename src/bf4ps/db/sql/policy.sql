-- name: policy_overrides
SELECT key, value FROM scheduler_policy ORDER BY key

-- name: policy_set
INSERT INTO scheduler_policy (key, value, updated_by)
VALUES (%(key)s, %(value)s::jsonb, %(by)s)
ON CONFLICT (key) DO UPDATE
SET value = excluded.value, updated_at = now(), updated_by = excluded.updated_by

-- name: policy_unset
DELETE FROM scheduler_policy WHERE key = %(key)s
