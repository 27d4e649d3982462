-- Fleet settings, the database's (gates/fleetconf.py, gates/seed.py): egress pacing, the fleet
-- budget, and the audit of every change (fleet_settings_changes, never pruned).

-- name: gate_seed
-- A collector's first start on an egress never configured: its environment's pacing.
INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds,
                          updated_by)
VALUES (%(egress_key)s, %(min_interval)s, %(window_requests)s, %(window_seconds)s, %(by)s)
ON CONFLICT (egress_key) DO NOTHING
RETURNING *

-- name: gate_get
SELECT * FROM egress_gates WHERE egress_key = %(egress_key)s

-- name: gate_get_locked
SELECT * FROM egress_gates WHERE egress_key = %(egress_key)s FOR UPDATE

-- name: gate_create
INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds,
                          updated_by)
VALUES (%(egress_key)s, %(min_interval)s, %(window_requests)s, %(window_seconds)s, %(by)s)
RETURNING *

-- name: gate_update
-- A longer interval also holds the next slot back to the egress's last counted request plus
-- the new interval (a slot reserved under the old one would come too soon after it).
UPDATE egress_gates g
SET min_interval_seconds = %(min_interval)s, window_requests = %(window_requests)s,
    window_seconds = %(window_seconds)s,
    cooldown_until = CASE WHEN %(end_cooldown)s THEN NULL
                          WHEN %(cooldown_seconds)s::float8 IS NOT NULL
                          THEN clock_timestamp() + make_interval(secs => %(cooldown_seconds)s)
                          ELSE g.cooldown_until END,
    throttle_streak = CASE WHEN %(end_cooldown)s THEN 0 ELSE g.throttle_streak END,
    updated_by = %(by)s, updated_at = now(),
    next_slot_at = GREATEST(g.next_slot_at, COALESCE(
        (SELECT max(slot_at) FROM counted_requests l WHERE l.egress_key = g.egress_key)
        + make_interval(secs => %(min_interval)s), g.next_slot_at))
WHERE g.egress_key = %(egress_key)s
RETURNING *

-- name: gate_list
SELECT g.*, COALESCE(g.cooldown_until > clock_timestamp(), false) AS cooling_down,
       (SELECT array_agg(c.collector_name ORDER BY lower(c.collector_name)) FROM collectors c
         WHERE c.egress_key = g.egress_key AND c.retired_at IS NULL) AS collectors
FROM egress_gates g ORDER BY g.egress_key

-- name: budget_get_locked
SELECT * FROM fleet_budget WHERE budget_id = 1 FOR UPDATE

-- name: budget_get
SELECT * FROM fleet_budget WHERE budget_id = 1

-- name: budget_seed
-- Only a budget never configured (a removed one stays removed).
UPDATE fleet_budget
SET requests = %(requests)s, window_seconds = %(window_seconds)s, configured_at = now(),
    updated_by = %(by)s, updated_at = now()
WHERE budget_id = 1 AND configured_at IS NULL
RETURNING *

-- name: budget_store
-- configured: a budget set or removed (a window alone, with no budget, configures nothing).
UPDATE fleet_budget
SET requests = %(requests)s, window_seconds = %(window_seconds)s,
    configured_at = CASE WHEN %(configured)s THEN now() ELSE configured_at END,
    updated_by = %(by)s, updated_at = now()
WHERE budget_id = 1
RETURNING *

-- name: settings_change_insert
INSERT INTO fleet_settings_changes (setting, subject, old_value, new_value, changed_by, reason)
VALUES (%(setting)s, %(subject)s, %(old)s, %(new)s, %(by)s, %(reason)s)
RETURNING change_id, changed_at

-- name: settings_changes_recent
SELECT * FROM fleet_settings_changes
WHERE setting = ANY(%(settings)s) AND (%(subject)s::text IS NULL OR subject = %(subject)s)
ORDER BY change_id DESC LIMIT %(limit)s

-- name: ledger_unsent_operator
-- An operator's request given up before a byte was written (gates/admission.py operator_slot).
UPDATE request_ledger SET unsent_at = clock_timestamp()
WHERE request_id = %(request_id)s AND collector_uuid IS NULL AND job_id IS NULL
  AND unsent_at IS NULL
