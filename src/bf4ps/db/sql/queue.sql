-- The queue engine's statements. Every write that depends on ownership is fenced by
-- job_id + collector_uuid + lease_token and an unexpired lease.

-- name: enqueue_insert
INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason,
                             eligible_at, request_id, lookup_name, lookup_platform)
VALUES (%(soldier_id)s, %(resource)s, %(lane)s, %(priority_class)s, %(rank)s, %(reason)s,
        %(eligible_at)s, %(request_id)s, %(lookup_name)s, %(lookup_platform)s)
ON CONFLICT DO NOTHING
RETURNING job_id, lane, priority_class, status, attempt_count

-- name: enqueue_lock_existing
SELECT job_id, lane, priority_class, status, rank, request_id, attempt_count
FROM collection_jobs
WHERE soldier_id = %(soldier_id)s AND resource = %(resource)s
FOR UPDATE

-- name: enqueue_promote
UPDATE collection_jobs
SET lane = %(lane)s, priority_class = %(priority_class)s, rank = LEAST(rank, %(rank)s),
    reason = %(reason)s, request_id = COALESCE(%(request_id)s, request_id),
    eligible_at = LEAST(eligible_at, %(eligible_at)s), updated_at = now()
WHERE job_id = %(job_id)s AND status = 'pending'
RETURNING job_id, lane, priority_class, status, attempt_count

-- name: attach_request
UPDATE collection_jobs SET request_id = %(request_id)s, updated_at = now()
WHERE job_id = %(job_id)s AND request_id IS NULL

-- name: claim_job
-- One call (queue_claim, migration 0014): the lane's first expired lease by rank if any
-- (reclaimed at once: lease_expired + reclaimed), else its first pending job by rank, locked
-- with SKIP LOCKED and handed a fresh lease token; with `start` (a slot open now) straight to
-- running. The claim writes no event: its instant travels on the row that ends the lease.
SELECT * FROM queue_claim(%(collector_uuid)s, %(lane)s, %(lease_seconds)s, %(soldier_id)s,
                          %(classes)s, %(start)s)

-- name: start_job
-- claimed → running at the slot, a heap-only update (no index names status or the times):
-- written alone because the slot is later than the claim. No event: the start's instant and
-- the claim→start wait travel on the row that ends the lease.
UPDATE collection_jobs
SET status = 'running', started_at = GREATEST(%(started_at)s, claimed_at),
    lease_expires_at = GREATEST(%(started_at)s, clock_timestamp())
                       + make_interval(secs => %(lease_seconds)s),
    updated_at = clock_timestamp()
WHERE job_id = %(job_id)s AND collector_uuid = %(collector_uuid)s
  AND lease_token = %(lease_token)s AND status = 'claimed'
  AND lease_expires_at > clock_timestamp()
RETURNING started_at, claimed_at, lease_expires_at

-- name: reslot_job
-- The request went out in a later slot than the one its start recorded (that slot was given
-- up as late): the running job's start moves to the slot it was sent in (fenced by the lease),
-- and so do the claimed/started instants its final event carries.
UPDATE collection_jobs
SET started_at = %(sent_at)s,
    lease_expires_at = GREATEST(lease_expires_at,
                                %(sent_at)s + make_interval(secs => %(lease_seconds)s)),
    updated_at = clock_timestamp()
WHERE job_id = %(job_id)s AND collector_uuid = %(collector_uuid)s
  AND lease_token = %(lease_token)s AND status = 'running'
  AND lease_expires_at > clock_timestamp()

-- name: renew_lease
UPDATE collection_jobs
SET lease_expires_at = GREATEST(lease_expires_at,
                                clock_timestamp() + make_interval(secs => %(lease_seconds)s))
WHERE job_id = %(job_id)s AND collector_uuid = %(collector_uuid)s
  AND lease_token = %(lease_token)s AND status IN ('claimed', 'running')
  AND lease_expires_at > clock_timestamp()
RETURNING lease_expires_at

-- name: expire_abandoned
-- A restarted collector's jobs from its previous process (dead: registration refuses to start
-- beside a live one): their leases end now, so the next claim reclaims them at once (with
-- lease_expired + reclaimed) instead of after the whole lease. Should the old process still
-- live somewhere, the new lease token fences it out.
UPDATE collection_jobs
SET lease_expires_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE collector_uuid = %(collector_uuid)s AND lease_token IS NOT NULL
  AND lease_expires_at > clock_timestamp()
RETURNING job_id

-- name: lock_owned_job
-- The fence of finalize and fail: the caller must still own an unexpired lease. The row lock
-- keeps any reclaim out until this transaction ends.
SELECT j.job_id, j.soldier_id, j.resource, j.lane, j.priority_class, j.status, j.attempt_count,
       j.lease_token, j.claimed_at, j.started_at, j.request_id, j.lookup_name, j.lookup_platform,
       s.persona_id, s.platform,
       c.collector_name, c.hostname, c.egress_key
FROM collection_jobs j
LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
JOIN collectors c ON c.collector_uuid = j.collector_uuid
WHERE j.job_id = %(job_id)s AND j.collector_uuid = %(collector_uuid)s
  AND j.lease_token = %(lease_token)s AND j.status = ANY(%(statuses)s)
  AND j.lease_expires_at > clock_timestamp()
FOR UPDATE OF j

-- name: job_snapshot
SELECT j.job_id, j.soldier_id, j.resource, j.lane, j.priority_class, j.status, j.attempt_count,
       j.collector_uuid, j.lease_token, j.lease_expires_at, s.persona_id, s.platform
FROM collection_jobs j LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
WHERE j.job_id = %(job_id)s

-- name: job_own_outcome
-- The outcome this lease already wrote for its job, if any: a finalize whose commit landed
-- while its answer was lost with the connection, so the retry finds the job no longer ours.
SELECT event_type FROM collection_events
WHERE job_id = %(job_id)s AND lease_token = %(lease_token)s
  AND event_type IN ('succeeded', 'failed')
ORDER BY event_id DESC
LIMIT 1

-- name: job_note_error
-- A job about to be parked keeps its last error on the row its removal leaves behind (the
-- triggers of interactive requests read it: a look-up that found no soldier).
UPDATE collection_jobs
SET last_error_class = %(error_class)s, last_error_message = %(error_message)s,
    last_error_at = clock_timestamp()
WHERE job_id = %(job_id)s AND lease_token = %(lease_token)s

-- name: delete_job
DELETE FROM collection_jobs
WHERE job_id = %(job_id)s AND lease_token = %(lease_token)s
RETURNING job_id

-- name: job_retry
UPDATE collection_jobs
SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
    started_at = NULL, lease_expires_at = NULL, eligible_at = %(eligible_at)s,
    last_error_class = %(error_class)s, last_error_message = %(error_message)s,
    last_error_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE job_id = %(job_id)s AND lease_token = %(lease_token)s
RETURNING job_id

-- name: release_job
-- A claimed (never sent) job back to pending with its released event (carrying the claim's
-- instant), in one statement; fenced by the token (a release needs no unexpired lease).
WITH held AS (
    SELECT j.* FROM collection_jobs j
    WHERE j.job_id = %(job_id)s AND j.collector_uuid = %(collector_uuid)s
      AND j.lease_token = %(lease_token)s AND j.status = 'claimed'
    FOR UPDATE
), back AS (
    UPDATE collection_jobs j
    SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
        started_at = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
    FROM held WHERE j.job_id = held.job_id
    RETURNING j.job_id
), ev AS (
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, result, claimed_at)
    SELECT 'released', h.collector_uuid, c.collector_name, c.hostname, c.egress_key, h.lane,
           h.job_id, h.lease_token, h.soldier_id, s.persona_id,
           COALESCE(s.platform, h.lookup_platform), h.resource, h.priority_class,
           h.attempt_count, %(why)s, h.claimed_at
    FROM held h
    JOIN back b ON b.job_id = h.job_id
    LEFT JOIN collectors c ON c.collector_uuid = h.collector_uuid
    LEFT JOIN soldiers s ON s.soldier_id = h.soldier_id
)
SELECT job_id FROM back

-- name: reap_expired
-- The scheduler's reaper: expired leases go back to pending, with lease_expired (carrying the
-- lost lease's claimed/started instants) + reclaimed.
WITH expired AS (
    SELECT job_id, collector_uuid, lease_token, claimed_at, started_at
    FROM collection_jobs
    WHERE lease_token IS NOT NULL AND lease_expires_at <= clock_timestamp()
    ORDER BY lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), reset AS (
    UPDATE collection_jobs j
    SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
        started_at = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
    FROM expired e WHERE j.job_id = e.job_id
    RETURNING j.*, e.collector_uuid AS old_collector, e.lease_token AS old_token,
              e.claimed_at AS old_claimed_at, e.started_at AS old_started_at
), ev AS (
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, details, claimed_at, started_at)
    SELECT kind.event_type, r.old_collector, c.collector_name, c.hostname, c.egress_key,
           r.lane, r.job_id, r.old_token, r.soldier_id, s.persona_id,
           COALESCE(s.platform, r.lookup_platform), r.resource, r.priority_class,
           r.attempt_count, jsonb_build_object('by', 'reaper'),
           CASE WHEN kind.ord = 1 THEN r.old_claimed_at END,
           CASE WHEN kind.ord = 1 THEN r.old_started_at END
    FROM reset r
    LEFT JOIN soldiers s ON s.soldier_id = r.soldier_id
    LEFT JOIN collectors c ON c.collector_uuid = r.old_collector
    CROSS JOIN (VALUES ('lease_expired', 1), ('reclaimed', 2)) AS kind(event_type, ord)
    ORDER BY r.job_id, kind.ord
)
SELECT job_id, old_collector, old_token FROM reset

-- name: finalize_success
-- The fenced success and, with `next`, the collector's next claim: one call (queue_succeed,
-- migration 0014). `finished` is NULL when the lease was not ours: nothing was written (callers
-- that wrote statistics earlier in the transaction roll back).
SELECT * FROM queue_succeed(%(job_id)s, %(collector_uuid)s, %(lease_token)s,
                            %(freshness_seconds)s, %(http_status)s, %(duration_ms)s,
                            %(details)s::jsonb, %(next)s, %(lane)s, %(lease_seconds)s,
                            %(soldier_id)s, %(start)s, %(gate)s::jsonb)

-- name: lock_owned_job_now
-- Before a success's statistics: the lease is still ours (else nothing is written), and the
-- database's time. No row lock: queue_succeed's fenced DELETE is the fence that counts (a
-- lease lost meanwhile deletes nothing and the statistics roll back with it).
SELECT j.job_id, clock_timestamp() AS now
FROM collection_jobs j
WHERE j.job_id = %(job_id)s AND j.collector_uuid = %(collector_uuid)s
  AND j.lease_token = %(lease_token)s AND j.status = 'running'
  AND j.lease_expires_at > clock_timestamp()

-- name: coverage_fold
-- The scheduler, every tick: the coverage deltas the state triggers appended move into the
-- counters (bf4ps_coverage_fold, migration 0014); readers add any not folded yet.
SELECT bf4ps_coverage_fold() AS folded
