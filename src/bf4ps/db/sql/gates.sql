-- Rate gates: per-egress pacing, the fleet budget ledger, throttle cool-downs. Every physical
-- Battlelog request gets a request_ledger row committed before it is sent.

-- name: admission_slot
-- Admission in one call (migration 0008): the gate, the fleet budget and the ledger row; a
-- look without a job, the count with it (fenced by its lease).
SELECT outcome, slot, wait_until, ledger_id, classes
FROM admission_slot(%(egress_key)s, %(collector_uuid)s, %(job_id)s::bigint,
                    %(lease_token)s::uuid, %(interactive)s, %(margin)s, %(ahead)s,
                    %(connect_lead)s, %(policy)s, %(budget_class)s, %(resource)s)

-- name: ledger_unsent
-- Its collector gave the slot up before writing a byte (late at its checks): it stops counting.
UPDATE request_ledger SET unsent_at = clock_timestamp()
WHERE request_id = %(request_id)s AND collector_uuid = %(collector_uuid)s AND unsent_at IS NULL

-- name: gate_throttled
UPDATE egress_gates
SET throttle_streak = throttle_streak + 1, last_throttle_at = clock_timestamp(),
    cooldown_until = GREATEST(COALESCE(cooldown_until, '-infinity'), clock_timestamp()
        + make_interval(secs => LEAST(%(max_seconds)s,
                                      %(base_seconds)s * power(2, throttle_streak)))),
    updated_at = now()
WHERE egress_key = %(egress_key)s
RETURNING throttle_streak, cooldown_until

-- name: gate_recovered
UPDATE egress_gates
SET throttle_streak = throttle_streak - 1, updated_at = now()
WHERE egress_key = %(egress_key)s AND throttle_streak > 0
  AND (cooldown_until IS NULL OR cooldown_until <= clock_timestamp())
RETURNING throttle_streak

-- name: gates_overview
SELECT g.egress_key, g.min_interval_seconds, g.window_requests, g.window_seconds,
       g.next_slot_at, g.cooldown_until, g.throttle_streak, g.last_throttle_at, g.requests_total,
       COALESCE(g.cooldown_until > clock_timestamp(), false) AS cooling_down,
       (SELECT count(*) FROM counted_requests l WHERE l.egress_key = g.egress_key
          AND l.slot_at > now() - make_interval(secs => %(window_seconds)s)) AS recent_requests
FROM egress_gates g ORDER BY g.egress_key

-- name: fleet_use
SELECT b.requests, b.window_seconds,
       (SELECT count(*) FROM counted_requests l
         WHERE l.slot_at > now() - make_interval(secs => b.window_seconds)) AS used
FROM fleet_budget b WHERE b.budget_id = 1

-- name: restore_check
-- The restore guard (migration 0013): when sends are held after a restore, and why.
SELECT hold_until, reason, now() AS now FROM bf4ps_restore_check(%(missing)s)

-- name: restore_instance
-- The database's own id (migration 0013): a collector's mark counts only in the database it
-- was made in.
SELECT instance_id FROM restore_guard

-- name: ledger_has_request
SELECT EXISTS (SELECT 1 FROM request_ledger
               WHERE request_id = %(request_id)s AND slot_at = %(slot_at)s) AS present

-- name: gate_cool
-- An outage answer cools the egress for %(seconds)s (its Retry-After, or the outage
-- cool-down); the throttle streak is not touched (an outage is not our rate's fault).
UPDATE egress_gates
SET cooldown_until = GREATEST(COALESCE(cooldown_until, '-infinity'),
                              clock_timestamp() + make_interval(secs => %(seconds)s)),
    updated_at = now()
WHERE egress_key = %(egress_key)s
RETURNING cooldown_until
