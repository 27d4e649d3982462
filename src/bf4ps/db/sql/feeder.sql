-- The scheduler's bounded feeder and sweeps. Candidates come from collection_state through
-- partial indexes; the live queue only ever holds the deficit.

-- name: feeder_lock
SELECT pg_try_advisory_xact_lock(4849502020) AS locked

-- name: runnable_depth
-- Work that is capacity now: claimed, running, or pending and eligible (a job waiting out a
-- retry is not capacity).
SELECT count(*) AS n FROM collection_jobs
WHERE lane = %(lane)s AND (status <> 'pending' OR eligible_at <= clock_timestamp())

-- name: queued_by_resource
-- A class's background jobs per resource (the live queue is bounded: the working set).
SELECT resource, count(*) AS n FROM collection_jobs
WHERE lane = 'background' AND priority_class = %(priority_class)s
GROUP BY resource

-- name: feed_class
-- Materialize up to n jobs of one activity class and resource, FIFO by eligible_since, skipping
-- pairs that already have a job; created events in the same statement. Final refreshes come
-- first within their class (ix_state_final_refresh): their snapshot closes a session only if
-- it is taken before the soldier plays again, which holds for no other work; class shares
-- (fairness between classes) are untouched. The rank is the feeding pass's time (now(): its
-- transaction's start, one for every resource of the pass) plus its class's aging offset plus
-- its position, keeping FIFO: so a queued bootstrap job waits at most its offset behind later
-- higher-class work, and the resources of one pass interleave (the k-th job of each resource
-- ranks together). A due resource's job carries why it is due (collection_state.due_reason).
WITH candidates AS (
    (SELECT cs.soldier_id, cs.resource, cs.eligible_since, cs.status, cs.due_reason, 0 AS tier
     FROM collection_state cs
     WHERE cs.activity_class = %(activity_class)s AND cs.resource = %(resource)s
       AND cs.status = 'due' AND cs.due_reason = 'final_refresh'
       AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                       WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
     ORDER BY cs.eligible_since, cs.soldier_id
     LIMIT %(n)s)
    UNION ALL
    (SELECT cs.soldier_id, cs.resource, cs.eligible_since, cs.status, cs.due_reason, 1
     FROM collection_state cs
     WHERE cs.activity_class = %(activity_class)s AND cs.resource = %(resource)s
       AND cs.status IN ('never_attempted', 'due')
       AND cs.due_reason IS DISTINCT FROM 'final_refresh'
       AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                       WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
     ORDER BY cs.eligible_since, cs.soldier_id
     LIMIT %(n)s)
), picked AS (
    SELECT c.*, row_number() OVER (ORDER BY c.tier, c.eligible_since, c.soldier_id) AS pos
    FROM candidates c
    ORDER BY c.tier, c.eligible_since, c.soldier_id
    LIMIT %(n)s
), made AS (
    INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason)
    SELECT soldier_id, resource, 'background', %(priority_class)s,
           now() + make_interval(secs => %(aging_seconds)s + pos * 1e-6),
           CASE WHEN status = 'due' THEN coalesce(due_reason, 'active_refresh')
                ELSE 'bootstrap' END
    FROM picked
    ORDER BY soldier_id
    ON CONFLICT DO NOTHING
    RETURNING job_id, soldier_id, resource, priority_class, reason
), ev AS (
    INSERT INTO collection_events (event_type, lane, job_id, soldier_id, persona_id, platform,
                                   resource, priority_class, result)
    SELECT 'created', 'background', m.job_id, m.soldier_id, s.persona_id, s.platform,
           m.resource, m.priority_class, m.reason
    FROM made m JOIN soldiers s ON s.soldier_id = m.soldier_id
)
SELECT count(*) AS n FROM made

-- name: feed_retry
-- Retry-due resources whose job is gone (e.g. removed by an operator): back into the queue.
WITH picked AS (
    SELECT cs.soldier_id, cs.resource, cs.next_attempt_at, cs.activity_class
    FROM collection_state cs
    WHERE cs.status = 'retry_wait' AND cs.next_attempt_at <= clock_timestamp()
      AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                      WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
    ORDER BY cs.next_attempt_at
    LIMIT %(n)s
), made AS (
    INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason)
    SELECT soldier_id, resource, 'background', activity_class, clock_timestamp(), 'retry'
    FROM picked ORDER BY soldier_id
    ON CONFLICT DO NOTHING
    RETURNING job_id, soldier_id, resource, priority_class
), ev AS (
    INSERT INTO collection_events (event_type, lane, job_id, soldier_id, persona_id, platform,
                                   resource, priority_class, result)
    SELECT 'created', 'background', m.job_id, m.soldier_id, s.persona_id, s.platform,
           m.resource, m.priority_class, 'retry'
    FROM made m JOIN soldiers s ON s.soldier_id = m.soldier_id
)
SELECT count(*) AS n FROM made

-- name: activity_refresh
-- Copy the soldiers' last_seen into their collection state and classify it (intake calls this
-- for the soldiers it imported or saw again).
UPDATE collection_state cs
SET activity_at = s.last_seen_at,
    activity_class = CASE
        WHEN s.last_seen_at >= clock_timestamp() - make_interval(secs => %(active_seconds)s)
            THEN 'active'
        WHEN s.last_seen_at >= clock_timestamp() - make_interval(secs => %(recent_seconds)s)
            THEN 'recent'
        ELSE 'bootstrap' END,
    updated_at = clock_timestamp()
FROM soldiers s
WHERE s.soldier_id = cs.soldier_id AND cs.soldier_id = ANY(%(soldier_ids)s)
  AND s.last_seen_at IS NOT NULL
  AND cs.activity_at IS DISTINCT FROM s.last_seen_at

-- name: activity_decay
-- Rows whose activity fell out of their window move down one class (only the crossing rows
-- are read, through ix_state_activity).
UPDATE collection_state
SET activity_class = CASE
        WHEN activity_at >= clock_timestamp() - make_interval(secs => %(recent_seconds)s)
            THEN 'recent' ELSE 'bootstrap' END,
    updated_at = clock_timestamp()
WHERE (activity_class = 'active'
       AND activity_at < clock_timestamp() - make_interval(secs => %(active_seconds)s))
   OR (activity_class = 'recent'
       AND activity_at < clock_timestamp() - make_interval(secs => %(recent_seconds)s))

-- name: due_sweep
-- Active soldiers whose collected resources went stale become due (eligible again), once they
-- are off the server: a soldier in an open play session is collected after it.
UPDATE collection_state cs
SET status = 'due', due_reason = NULL, eligible_since = next_due_at,
    updated_at = clock_timestamp()
WHERE status = 'current' AND activity_class = 'active' AND next_due_at <= clock_timestamp()
  AND NOT EXISTS (SELECT 1 FROM play_sessions p
                  WHERE p.soldier_id = cs.soldier_id AND p.ended_at IS NULL)

-- name: collectors_mark_silent
-- The scheduler's heartbeat detector: healthy collectors silent too long become lost, once,
-- with one heartbeat_lost event each.
WITH lost AS (
    UPDATE collectors
    SET health = 'lost', heartbeat_lost_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE health = 'healthy' AND retired_at IS NULL
      AND last_heartbeat_at < clock_timestamp() - make_interval(secs => %(silence_seconds)s)
    RETURNING collector_uuid, collector_name, hostname, egress_key, lane, last_heartbeat_at
), ev AS (
    INSERT INTO collection_events (event_type, collector_uuid, collector_name, hostname,
                                   egress_key, lane, details)
    SELECT 'heartbeat_lost', collector_uuid, collector_name, hostname, egress_key, lane,
           jsonb_build_object('detected_by', 'scheduler',
                              'last_heartbeat_at', last_heartbeat_at)
    FROM lost
)
SELECT collector_name FROM lost

-- name: parked_recheck
-- Parked (unavailable) resources of soldiers seen playing get one more try once their last
-- attempt is older than the recheck interval: back to retry_wait, due now (feed_retry queues
-- them under the retry share), with a recheck_scheduled event each. Their failure count is
-- kept: one parked after too many failures is parked again by its next failure, one parked as
-- not found by the next not found. Reads only parked rows of active soldiers
-- (ix_state_parked), in bounded batches.
WITH picked AS (
    SELECT soldier_id, resource
    FROM collection_state
    WHERE status = 'unavailable' AND activity_class = 'active'
      AND last_attempt_at <= clock_timestamp() - make_interval(secs => %(recheck_seconds)s)
    ORDER BY last_attempt_at
    LIMIT %(n)s
    FOR UPDATE SKIP LOCKED
), revived AS (
    UPDATE collection_state cs
    SET status = 'retry_wait', next_attempt_at = clock_timestamp(),
        updated_at = clock_timestamp()
    FROM picked p
    WHERE cs.soldier_id = p.soldier_id AND cs.resource = p.resource
    RETURNING cs.soldier_id, cs.resource, cs.last_attempt_at, cs.last_error_class,
              cs.consecutive_failures
), ev AS (
    INSERT INTO collection_events (event_type, soldier_id, persona_id, platform, resource,
                                   priority_class, result, error_class, details)
    SELECT 'recheck_scheduled', r.soldier_id, s.persona_id, s.platform, r.resource, 'active',
           'retry', r.last_error_class,
           jsonb_build_object('parked_at', r.last_attempt_at,
                              'consecutive_failures', r.consecutive_failures)
    FROM revived r JOIN soldiers s ON s.soldier_id = r.soldier_id
)
SELECT count(*) AS n FROM revived
