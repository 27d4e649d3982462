-- Rate gates: per-egress pacing, the fleet budget ledger, throttle cool-downs. Every physical
-- Battlelog request gets a request_ledger row committed before it is sent.

-- name: admission_look
-- A look before a claim (admission_look in db/functions/admission.sql): the egress's next slot
-- and the classes the fleet budget allows now; no lock, no write.
SELECT outcome, slot, wait_until, ledger_id, classes
FROM admission_look(%(collector_uuid)s, %(margin)s, %(ahead)s, %(connect_lead)s)

-- name: admission_count
-- A held job's request counted in its slot, fenced by its lease (admission_count).
SELECT outcome, slot, wait_until, ledger_id, classes
FROM admission_count(%(collector_uuid)s, %(job_id)s, %(lease_token)s, %(margin)s, %(ahead)s,
                     %(connect_lead)s)

-- name: admission_count_unattached
-- A request of no queue job (recon: its collector; `bf4ps battlelog fetch`: none), counted in
-- the class and resource it names (admission_count_unattached).
SELECT outcome, slot, wait_until, ledger_id, classes
FROM admission_count_unattached(%(egress_key)s, %(collector_uuid)s, %(budget_class)s,
                                %(resource)s, %(margin)s, %(ahead)s, %(connect_lead)s)

-- name: ledger_unsent
-- Its collector gave the slot up before writing a byte (late at its checks): it stops counting.
-- (bf4ps_ledger_unsent in db/schema.sql: its own row of a job it holds, within 10 s of the slot)
SELECT * FROM bf4ps_ledger_unsent(%(request_id)s, %(collector_uuid)s, %(lease_token)s)

-- name: gate_throttled
SELECT * FROM bf4ps_gate_throttled(%(egress_key)s, %(base_seconds)s, %(max_seconds)s)

-- name: gate_recovered
SELECT * FROM bf4ps_gate_recovered(%(egress_key)s)

-- name: gates_overview
SELECT g.*, COALESCE(g.cooldown_until > clock_timestamp(), false) AS cooling_down,
       (SELECT count(*) FROM counted_requests l WHERE l.egress_key = g.egress_key
          AND l.slot_at > now() - make_interval(secs => %(window_seconds)s)) AS recent_requests
FROM egress_gates g ORDER BY g.egress_key

-- name: fleet_use
SELECT b.requests, b.window_seconds,
       (SELECT count(*) FROM counted_requests l
         WHERE l.slot_at > now() - make_interval(secs => b.window_seconds)) AS used
FROM fleet_budget b WHERE b.budget_id = 1

-- name: restore_check
-- The restore guard (db/schema.sql): when sends are held after a restore,
-- and why. A running process presents its newest ledger receipt and its newest mark (NULLs:
-- none) and is handed a new mark to show next time.
SELECT hold_until, reason, mark, now() AS now
FROM bf4ps_restore_check(%(request_id)s::bigint, %(slot_at)s::timestamptz, %(receipt)s::text,
                         %(mark)s::text)

-- name: ledger_receipt
-- The database's signed receipt of a ledger row (db/schema.sql), taken after its admission.
SELECT request_id, slot_at, receipt FROM bf4ps_ledger_receipt(%(request_id)s)

-- name: gate_cool
-- An outage answer cools the egress for %(seconds)s (its Retry-After, or the outage
-- cool-down); the throttle streak is not touched (an outage is not our rate's fault).
SELECT cooldown_until FROM bf4ps_gate_cool(%(egress_key)s, %(seconds)s)

-- name: restore_hold
-- The hold a reader shows (db/schema.sql): a detected restore's, or the run rule's (a server
-- start no running process vouched for yet). No row: not held.
SELECT hold_until, reason, run_rule FROM bf4ps_restore_hold()

-- name: restore_vouch
-- `bf4ps db vouch` (db/schema.sql): an operator's audited word for this server start.
SELECT * FROM bf4ps_restore_vouch(%(reason)s)

-- name: egress_soft_lock
-- Until the caller's commit, one collector of the egress at a time judges a soft-throttle run
-- (so two do not both cool it for one run); a lock that needs no privilege on the gate.
SELECT pg_advisory_xact_lock(hashtextextended('bf4ps.soft_throttle:' || %(egress_key)s, 0))

-- name: egress_soft_answers
-- gates/throttle.py soft_answer: of the egress's last %(answers)s finished attempts since its
-- last throttle cool-down (and within %(window_seconds)s), how many were soft throttles
-- (an answer with nothing in it: details.soft_throttle), and whether it is cooling down now.
-- The events are read through their collectors' index (ix_events_collector).
WITH g AS (
    SELECT last_throttle_at, cooldown_until FROM egress_gates WHERE egress_key = %(egress_key)s
), last AS (
    SELECT e.details ? 'soft_throttle' AS soft
    FROM collection_events e
    WHERE e.collector_uuid IN (SELECT c.collector_uuid FROM collectors c
                               WHERE c.egress_key = %(egress_key)s)
      AND e.egress_key = %(egress_key)s
      AND e.event_type IN ('succeeded', 'failed')
      AND e.occurred_at > now() - make_interval(secs => %(window_seconds)s)
      AND e.occurred_at > COALESCE((SELECT last_throttle_at FROM g), '-infinity')
    ORDER BY e.occurred_at DESC
    LIMIT %(answers)s
)
SELECT (SELECT count(*) FROM last WHERE soft) AS soft, (SELECT count(*) FROM last) AS answers,
       COALESCE((SELECT cooldown_until > clock_timestamp() FROM g), false) AS cooling
