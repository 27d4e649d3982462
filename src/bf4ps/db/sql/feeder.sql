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
-- pairs that already have a job; created events in the same statement (bf4ps_feed_class
-- in db/schema.sql: the scheduler writes no queue table directly). Final refreshes come first
-- within their class (ix_state_final_refresh): their snapshot closes a session only if it is
-- taken before the soldier plays again, which holds for no other work; class shares (fairness
-- between classes) are untouched. The rank is the feeding pass's time (now(): its
-- transaction's start, one for every resource of the pass) plus its class's aging offset plus
-- its position, keeping FIFO: so a queued bootstrap job waits at most its offset behind later
-- higher-class work, and the resources of one pass interleave (the k-th job of each resource
-- ranks together). A due resource's job carries why it is due (collection_state.due_reason).
-- The job's priority class is its activity class.
SELECT n FROM bf4ps_feed_class(%(activity_class)s, %(resource)s, %(n)s, %(aging_seconds)s)

-- name: feed_retry
-- Retry-due resources whose job is gone (e.g. removed by an operator): back into the queue
-- (bf4ps_feed_retry in db/schema.sql).
SELECT n FROM bf4ps_feed_retry(%(n)s)

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
-- are off the server: a soldier in an open play session is collected after it. Each due time
-- is spread over the sweep period before it (`spread_seconds`, at most the resource's own
-- interval): a row is taken once next_due_at - u * spread has passed, u in [0, 1) a hash of
-- the row and its due time (the same at every sweep of one interval, another the next), and
-- is due from that moment. Without it every soldier's due time kept one phase against the
-- sweep (its write follows a sweep by a nearly constant delay), so its wait for the sweep was
-- the same each interval instead of half a sweep on average; with it the waits are spread
-- over the sweep and, on average, a refresh is marked at its due time.
WITH d AS (
    SELECT soldier_id, resource, next_due_at - make_interval(secs => LEAST(
               %(spread_seconds)s::float8,
               GREATEST(0, COALESCE(extract(epoch FROM next_due_at - last_success_at), 0))
               ::float8)
           * ((hashint8extended(soldier_id,
                                (extract(epoch FROM next_due_at) * 1000000)::bigint
                                # hashtext(resource::text)::bigint)
               & 1048575)::float8 / 1048576)) AS due_at
    FROM collection_state
    WHERE status = 'current' AND activity_class = 'active'
      AND next_due_at <= clock_timestamp() + make_interval(secs => %(spread_seconds)s::float8))
UPDATE collection_state cs
SET status = 'due', due_reason = NULL, eligible_since = d.due_at,
    updated_at = clock_timestamp()
FROM d
WHERE cs.soldier_id = d.soldier_id AND cs.resource = d.resource AND cs.status = 'current'
  AND d.due_at <= clock_timestamp()
  AND NOT EXISTS (SELECT 1 FROM play_sessions p
                  WHERE p.soldier_id = cs.soldier_id AND p.ended_at IS NULL)

-- name: collectors_mark_silent
-- The scheduler's heartbeat detector: healthy collectors silent too long become lost, once,
-- with one heartbeat_lost event each (bf4ps_collectors_mark_silent in db/schema.sql).
SELECT collector_name FROM bf4ps_collectors_mark_silent(%(silence_seconds)s)

-- name: parked_recheck
-- Parked (unavailable) resources of soldiers seen playing get one more try once their last
-- attempt is older than the recheck interval: back to retry_wait, due now (feed_retry queues
-- them under the retry share), with a recheck_scheduled event each (bf4ps_parked_recheck
-- in db/schema.sql). Their failure count is kept: one parked after too many failures is parked
-- again by its next failure, one parked as not found by the next not found. Reads only parked
-- rows of active soldiers (ix_state_parked), in bounded batches.
SELECT n FROM bf4ps_parked_recheck(%(recheck_seconds)s, %(n)s)
