-- Fleet settings, the database's (fleet/conf.py, fleet/seed.py): egress pacing, the fleet
-- budget, and the audit of every change (fleet_settings_changes, never pruned).

-- name: gate_seed
-- A collector's first start on an egress never configured: its environment's pacing.
SELECT * FROM bf4ps_gate_seed(%(egress_key)s, %(min_interval)s, %(window_requests)s,
                              %(window_seconds)s, %(reason)s)

-- name: gate_get
SELECT * FROM egress_gates WHERE egress_key = %(egress_key)s

-- name: gate_get_locked
SELECT * FROM egress_gates WHERE egress_key = %(egress_key)s FOR UPDATE

-- name: gate_create
SELECT * FROM bf4ps_gate_set(%(egress_key)s, %(min_interval)s, %(window_requests)s,
                             %(window_seconds)s, NULL, false, true, %(reason)s)

-- name: gate_update
-- A longer interval also holds the next slot back to the egress's last counted request plus
-- the new interval (a slot reserved under the old one would come too soon after it).
SELECT * FROM bf4ps_gate_set(%(egress_key)s, %(min_interval)s, %(window_requests)s,
                             %(window_seconds)s, %(cooldown_seconds)s, %(end_cooldown)s, false,
                             %(reason)s)

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
SELECT * FROM bf4ps_budget_seed(%(requests)s, %(window_seconds)s, %(reason)s)

-- name: budget_store
-- configured: a budget set or removed (a window alone, with no budget, configures nothing).
SELECT * FROM bf4ps_budget_set(%(requests)s, %(window_seconds)s, %(configured)s,
                               %(reason)s)

-- name: settings_reason
-- The reason the audit trigger (db/schema.sql) records for this transaction's changes.
SELECT set_config('bf4ps.change_reason', %(reason)s, true)

-- name: settings_changes_recent
SELECT * FROM fleet_settings_changes
WHERE setting = ANY(%(settings)s) AND (%(subject)s::text IS NULL OR subject = %(subject)s)
ORDER BY change_id DESC LIMIT %(limit)s

-- name: ledger_unsent_operator
-- An operator's request given up before a byte was written (gates/admission.py operator_slot).
SELECT * FROM bf4ps_ledger_unsent_operator(%(request_id)s)
