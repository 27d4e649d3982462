-- Rate gates: per-egress pacing, the fleet budget ledger, throttle cool-downs. Every physical
-- Battlelog request gets a request_ledger row committed before it is sent.

-- name: gate_ensure
INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds)
VALUES (%(egress_key)s, %(min_interval)s, %(window_requests)s, %(window_seconds)s)
ON CONFLICT (egress_key) DO UPDATE
SET min_interval_seconds = excluded.min_interval_seconds,
    window_requests = excluded.window_requests, window_seconds = excluded.window_seconds,
    updated_at = now()

-- name: gate_lock
SELECT *, clock_timestamp() AS now FROM egress_gates WHERE egress_key = %(egress_key)s
FOR UPDATE

-- name: egress_nth_latest
SELECT slot_at FROM counted_requests WHERE egress_key = %(egress_key)s
ORDER BY slot_at DESC LIMIT 1 OFFSET %(offset)s

-- name: gate_advance
UPDATE egress_gates
SET next_slot_at = %(next_slot_at)s, requests_total = requests_total + 1, updated_at = now()
WHERE egress_key = %(egress_key)s

-- name: ledger_unsent
-- Its collector gave the slot up before writing a byte (late at its checks): it stops counting.
UPDATE request_ledger SET unsent_at = clock_timestamp()
WHERE request_id = %(request_id)s AND collector_uuid = %(collector_uuid)s AND unsent_at IS NULL

-- name: ledger_insert
INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, job_id, resource)
VALUES (%(slot_at)s, %(egress_key)s, %(budget_class)s, %(collector_uuid)s, %(job_id)s,
        %(resource)s)
RETURNING request_id

-- name: fleet_lock
SELECT requests, window_seconds, clock_timestamp() AS now FROM fleet_budget
WHERE budget_id = 1 FOR UPDATE

-- name: fleet_configure
UPDATE fleet_budget SET requests = %(requests)s, window_seconds = %(window_seconds)s,
                        updated_at = now()
WHERE budget_id = 1

-- name: fleet_window
SELECT budget_class, count(*) AS n, max(slot_at) AS last_slot
FROM counted_requests WHERE slot_at > %(since)s GROUP BY budget_class

-- name: fleet_nth_latest
SELECT slot_at FROM counted_requests ORDER BY slot_at DESC LIMIT 1 OFFSET %(offset)s

-- name: budget_demand
-- The budget classes with runnable work, in every lane: a background collector must see a
-- waiting interactive request to leave its floor free, but only while an interactive
-- collector is serving (else nothing could use the floor).
SELECT DISTINCT CASE WHEN last_error_at IS NOT NULL THEN 'retry' ELSE priority_class END AS cls
FROM collection_jobs
WHERE status = 'pending' AND eligible_at <= clock_timestamp()
  AND (lane <> 'interactive' OR EXISTS (
      SELECT 1 FROM collectors c
      WHERE c.lane = 'interactive' AND c.enabled AND NOT c.drained AND c.retired_at IS NULL
        AND c.health = 'healthy'))

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

-- name: ledger_has_request
SELECT EXISTS (SELECT 1 FROM request_ledger
               WHERE request_id = %(request_id)s AND slot_at = %(slot_at)s) AS present
