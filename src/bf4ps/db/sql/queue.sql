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
-- One statement: take the lane's oldest expired lease if any (reclaim), else the first pending
-- job by rank; lock it with SKIP LOCKED, hand it a fresh lease token and write the claimed
-- (+ lease_expired, reclaimed) events. The optional filters (one soldier, for chaining; the
-- budget's classes) are CASE expressions, not `$n IS NULL OR ...`: the planner then keeps
-- estimating many candidates and the cached generic plan walks ix_jobs_claim in rank order
-- (with the OR form it chose a sequential scan and a sort, or re-planned every call).
WITH me AS (
    SELECT collector_uuid, collector_name, hostname, egress_key
    FROM collectors
    WHERE collector_uuid = %(collector_uuid)s AND enabled AND NOT drained AND retired_at IS NULL
), expired AS MATERIALIZED (
    SELECT job_id, collector_uuid AS old_collector, lease_token AS old_token
    FROM collection_jobs
    WHERE lane = %(lane)s AND status IN ('claimed', 'running')
      AND lease_expires_at <= clock_timestamp()
      AND CASE WHEN %(soldier_id)s::bigint IS NULL THEN true ELSE soldier_id = %(soldier_id)s END
      AND CASE WHEN %(classes)s::text[] IS NULL THEN true
               ELSE (CASE WHEN last_error_at IS NOT NULL THEN 'retry'
                          ELSE priority_class END) = ANY(%(classes)s) END
    ORDER BY rank, job_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), fresh AS MATERIALIZED (
    SELECT job_id, NULL::uuid AS old_collector, NULL::uuid AS old_token
    FROM collection_jobs
    WHERE lane = %(lane)s AND status = 'pending' AND eligible_at <= clock_timestamp()
      AND CASE WHEN %(soldier_id)s::bigint IS NULL THEN true ELSE soldier_id = %(soldier_id)s END
      AND CASE WHEN %(classes)s::text[] IS NULL THEN true
               ELSE (CASE WHEN last_error_at IS NOT NULL THEN 'retry'
                          ELSE priority_class END) = ANY(%(classes)s) END
      AND NOT EXISTS (SELECT 1 FROM expired)
    ORDER BY rank, job_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), pick AS (
    SELECT * FROM expired UNION ALL SELECT * FROM fresh
), claimed AS (
    UPDATE collection_jobs j
    SET status = 'claimed', collector_uuid = me.collector_uuid, lease_token = gen_random_uuid(),
        claimed_at = clock_timestamp(), started_at = NULL,
        lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s),
        attempt_count = j.attempt_count + 1, updated_at = clock_timestamp()
    FROM pick, me
    WHERE j.job_id = pick.job_id
    RETURNING j.*, pick.old_collector, pick.old_token
), ev AS (
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, details)
    SELECT kind.event_type,
           CASE WHEN kind.event_type = 'lease_expired' THEN c.old_collector ELSE me.collector_uuid END,
           CASE WHEN kind.event_type = 'lease_expired' THEN old.collector_name ELSE me.collector_name END,
           CASE WHEN kind.event_type = 'lease_expired' THEN old.hostname ELSE me.hostname END,
           CASE WHEN kind.event_type = 'lease_expired' THEN old.egress_key ELSE me.egress_key END,
           c.lane, c.job_id,
           CASE WHEN kind.event_type = 'lease_expired' THEN c.old_token ELSE c.lease_token END,
           c.soldier_id, s.persona_id, COALESCE(s.platform, c.lookup_platform), c.resource,
           c.priority_class, c.attempt_count, NULL::jsonb
    FROM claimed c
    CROSS JOIN me
    LEFT JOIN soldiers s ON s.soldier_id = c.soldier_id
    LEFT JOIN collectors old ON old.collector_uuid = c.old_collector
    CROSS JOIN (VALUES ('lease_expired', 1), ('reclaimed', 2), ('claimed', 3))
        AS kind(event_type, ord)
    WHERE kind.event_type = 'claimed' OR c.old_token IS NOT NULL
)
SELECT c.job_id, c.soldier_id, c.resource, c.lane, c.priority_class, c.rank, c.reason,
       c.attempt_count, c.last_error_at IS NOT NULL AS is_retry, c.lease_token, c.claimed_at, c.lease_expires_at, c.request_id,
       c.lookup_name, c.lookup_platform, c.old_token IS NOT NULL AS reclaimed,
       s.persona_id, s.platform, s.current_name
FROM claimed c LEFT JOIN soldiers s ON s.soldier_id = c.soldier_id

-- name: start_job
-- claimed → running at the moment the request is sent, with the started event (recording the
-- claim→start wait) and the interactive request's first-request time, in one statement.
WITH started AS (
    UPDATE collection_jobs
    SET status = 'running', started_at = GREATEST(%(started_at)s, claimed_at),
        lease_expires_at = GREATEST(%(started_at)s, clock_timestamp())
                           + make_interval(secs => %(lease_seconds)s),
        updated_at = clock_timestamp()
    WHERE job_id = %(job_id)s AND collector_uuid = %(collector_uuid)s
      AND lease_token = %(lease_token)s AND status = 'claimed'
      AND lease_expires_at > clock_timestamp()
    RETURNING *
), ev AS (
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, wait_ms, details)
    SELECT 'started', c.collector_uuid, c.collector_name, c.hostname, c.egress_key, j.lane,
           j.job_id, j.lease_token, j.soldier_id, s.persona_id,
           COALESCE(s.platform, j.lookup_platform), j.resource, j.priority_class,
           j.attempt_count,
           (extract(epoch FROM j.started_at - j.claimed_at) * 1000)::integer,
           %(details)s::jsonb
    FROM started j
    JOIN collectors c ON c.collector_uuid = j.collector_uuid
    LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
), req AS (
    UPDATE interactive_requests r
    SET status = 'collecting', first_request_at = COALESCE(r.first_request_at, j.started_at),
        updated_at = now()
    FROM started j
    WHERE r.request_id = j.request_id AND r.status IN ('queued', 'collecting')
)
SELECT started_at, claimed_at, lease_expires_at FROM started

-- name: reslot_job
-- The request went out in a later slot than the one its start recorded (that slot was given
-- up as late): the running job's start, and its request's first request if this start set
-- it, move to the slot it was sent in (fenced by the lease). The started event keeps the
-- admitted slot (the log is append-only); the job's final event names the slot it was sent in.
WITH moved AS (
    UPDATE collection_jobs
    SET started_at = %(sent_at)s,
        lease_expires_at = GREATEST(lease_expires_at,
                                    %(sent_at)s + make_interval(secs => %(lease_seconds)s)),
        updated_at = clock_timestamp()
    WHERE job_id = %(job_id)s AND collector_uuid = %(collector_uuid)s
      AND lease_token = %(lease_token)s AND status = 'running'
      AND lease_expires_at > clock_timestamp()
    RETURNING request_id, started_at
)
UPDATE interactive_requests r
SET first_request_at = m.started_at, updated_at = clock_timestamp()
FROM moved m
WHERE r.request_id = m.request_id AND r.first_request_at = %(started_at)s
  AND r.status IN ('queued', 'collecting')

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
WHERE collector_uuid = %(collector_uuid)s AND status IN ('claimed', 'running')
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
UPDATE collection_jobs
SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
    started_at = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
WHERE job_id = %(job_id)s AND collector_uuid = %(collector_uuid)s
  AND lease_token = %(lease_token)s AND status = 'claimed'
RETURNING job_id, soldier_id, resource, lane, priority_class, attempt_count

-- name: reap_expired
-- The scheduler's reaper: expired leases go back to pending, with lease_expired + reclaimed.
WITH expired AS (
    SELECT job_id, collector_uuid, lease_token
    FROM collection_jobs
    WHERE status IN ('claimed', 'running') AND lease_expires_at <= clock_timestamp()
    ORDER BY lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), reset AS (
    UPDATE collection_jobs j
    SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
        started_at = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
    FROM expired e WHERE j.job_id = e.job_id
    RETURNING j.*, e.collector_uuid AS old_collector, e.lease_token AS old_token
), ev AS (
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, details)
    SELECT kind.event_type, r.old_collector, c.collector_name, c.hostname, c.egress_key,
           r.lane, r.job_id, r.old_token, r.soldier_id, s.persona_id,
           COALESCE(s.platform, r.lookup_platform), r.resource, r.priority_class,
           r.attempt_count, jsonb_build_object('by', 'reaper')
    FROM reset r
    LEFT JOIN soldiers s ON s.soldier_id = r.soldier_id
    LEFT JOIN collectors c ON c.collector_uuid = r.old_collector
    CROSS JOIN (VALUES ('lease_expired'), ('reclaimed')) AS kind(event_type)
)
SELECT job_id, old_collector, old_token FROM reset

-- name: request_progress
-- After one of a request's jobs left the queue: done when none remains.
UPDATE interactive_requests r
SET status = CASE WHEN remaining.n = 0 THEN %(final_status)s ELSE 'collecting' END,
    finished_at = CASE WHEN remaining.n = 0 THEN clock_timestamp() END,
    message = COALESCE(%(message)s, r.message), updated_at = clock_timestamp()
FROM (SELECT count(*) AS n FROM collection_jobs WHERE request_id = %(request_id)s) AS remaining
WHERE r.request_id = %(request_id)s AND r.status IN ('queued', 'collecting')
RETURNING r.status

-- name: finalize_success
-- The fenced success: state current, succeeded event, job removed, request progress: one
-- statement, effective only while the caller owns an unexpired lease (callers that write
-- statistics run them earlier in the same transaction and roll back when this returns nothing).
WITH job AS (
    SELECT j.*, s.persona_id, s.platform, c.collector_name, c.hostname, c.egress_key
    FROM collection_jobs j
    LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
    JOIN collectors c ON c.collector_uuid = j.collector_uuid
    WHERE j.job_id = %(job_id)s AND j.collector_uuid = %(collector_uuid)s
      AND j.lease_token = %(lease_token)s AND j.status = 'running'
      AND j.lease_expires_at > clock_timestamp()
    FOR UPDATE OF j
), state AS (
    UPDATE collection_state cs
    SET status = 'current', last_attempt_at = clock_timestamp(),
        last_success_at = clock_timestamp(),
        next_due_at = clock_timestamp() + make_interval(secs => %(freshness_seconds)s),
        next_attempt_at = NULL, consecutive_failures = 0,
        attempts_total = cs.attempts_total + 1, updated_at = clock_timestamp()
    FROM job
    WHERE cs.soldier_id = job.soldier_id AND cs.resource = job.resource
), ev AS (
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, result, http_status, duration_ms, details)
    SELECT 'succeeded', job.collector_uuid, job.collector_name, job.hostname, job.egress_key,
           job.lane, job.job_id, job.lease_token, job.soldier_id, job.persona_id,
           COALESCE(job.platform, job.lookup_platform), job.resource, job.priority_class,
           job.attempt_count, 'ok', %(http_status)s, %(duration_ms)s, %(details)s::jsonb
    FROM job
), gone AS (
    DELETE FROM collection_jobs d USING job WHERE d.job_id = job.job_id
    RETURNING d.job_id, d.request_id
), req AS (
    UPDATE interactive_requests r
    SET status = CASE WHEN remaining.n = 0 THEN 'done' ELSE 'collecting' END,
        finished_at = CASE WHEN remaining.n = 0 THEN clock_timestamp() END,
        updated_at = clock_timestamp()
    FROM gone,
         LATERAL (SELECT count(*) AS n FROM collection_jobs o
                  WHERE o.request_id = gone.request_id AND o.job_id <> gone.job_id) AS remaining
    WHERE r.request_id = gone.request_id AND r.status IN ('queued', 'collecting')
)
SELECT job_id FROM gone

-- name: lock_owned_job_now
SELECT j.job_id, clock_timestamp() AS now
FROM collection_jobs j
WHERE j.job_id = %(job_id)s AND j.collector_uuid = %(collector_uuid)s
  AND j.lease_token = %(lease_token)s AND j.status = 'running'
  AND j.lease_expires_at > clock_timestamp()
FOR UPDATE
