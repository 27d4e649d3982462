-- Interactive requests: submission, lookups, queue position and ETA inputs, request status.

-- name: interactive_lock
-- Serializes submissions for one key (a client's rate count, one soldier, one looked-up name).
SELECT pg_advisory_xact_lock(hashtextextended(%(key)s, 0))

-- name: interactive_rate_count
SELECT count(*) AS n, min(created_at) AS oldest, now() AS now
FROM interactive_requests
WHERE client_key = %(client_key)s
  AND created_at > now() - make_interval(secs => %(window_seconds)s)

-- name: interactive_soldier_by_persona
SELECT soldier_id, persona_id, platform, current_name
FROM soldiers WHERE persona_id = %(persona_id)s AND platform = %(platform)s

-- name: interactive_soldier_by_name
-- A confirmed name (a soldier BF4SW saw playing, or one Battlelog's name search found) wins
-- over one only typed into a submitted Battlelog URL, which nobody has confirmed: a URL with a
-- made-up persona id cannot take a real soldier's name over. Then the current name before the
-- name history, then the most recently seen soldier.
SELECT found.soldier_id, found.persona_id, found.platform, found.current_name FROM (
    SELECT soldier_id, persona_id, platform, current_name, 0 AS pref, last_seen_at AS seen
    FROM soldiers
    WHERE lower(current_name) = lower(%(name)s) AND platform = %(platform)s
    UNION ALL
    SELECT s.soldier_id, s.persona_id, s.platform, s.current_name, 1, n.last_seen_at
    FROM soldier_names n JOIN soldiers s ON s.soldier_id = n.soldier_id
    WHERE lower(n.name) = lower(%(name)s) AND s.platform = %(platform)s
) AS found
ORDER BY EXISTS (SELECT 1 FROM soldier_sources ss
                 WHERE ss.soldier_id = found.soldier_id
                   AND ss.source_type IN ('bf4sw', 'battlelog')) DESC,
         pref, seen DESC NULLS LAST
LIMIT 1

-- name: interactive_open_for_soldier
SELECT request_id, soldier_id, status, resources, eta_at, created_at
FROM interactive_requests
WHERE status IN ('queued', 'collecting') AND soldier_id = %(soldier_id)s
ORDER BY created_at DESC LIMIT 1

-- name: interactive_open_for_name
SELECT request_id, soldier_id, status, resources, eta_at, created_at
FROM interactive_requests
WHERE status IN ('queued', 'collecting') AND soldier_id IS NULL
  AND lower(lookup_name) = lower(%(name)s) AND platform = %(platform)s
ORDER BY created_at DESC LIMIT 1

-- name: interactive_stale_resources
-- The resources a manual request re-collects: never collected, not current, or older than the
-- policy's minimum age (a missing state row counts as never collected).
SELECT r.resource
FROM unnest(%(resources)s::text[]) WITH ORDINALITY AS r(resource, ord)
LEFT JOIN collection_state cs ON cs.soldier_id = %(soldier_id)s AND cs.resource = r.resource
WHERE cs.status IS DISTINCT FROM 'current' OR cs.last_success_at IS NULL
   OR cs.last_success_at < now() - make_interval(secs => %(min_age_seconds)s)
ORDER BY r.ord

-- name: interactive_request_insert
-- (db/functions/requests.sql: queued, made in this transaction)
SELECT * FROM bf4ps_request_insert(%(request_id)s, %(soldier_id)s, %(lookup_name)s,
                                   %(platform)s, %(client_key)s, %(resources)s)

-- name: interactive_request_planned
-- After its jobs were enqueued: the resources asked for, and the ETA made at submission
-- (done at once when nothing needed collecting).
-- Only a queued request made in this transaction (db/functions/requests.sql).
SELECT * FROM bf4ps_request_planned(%(request_id)s, %(resources)s, %(eta_at)s, %(done)s,
                                    %(message)s)

-- name: lookup_request_resolved
-- A look-up's answer: the soldier and the resources planned, on the request of the look-up job
-- whose lease the collector holds (db/functions/requests.sql).
SELECT * FROM bf4ps_lookup_request_resolved(%(job_id)s, %(lease_token)s, %(soldier_id)s,
                                            %(resources)s::text[])

-- name: interactive_request_jobs
SELECT count(*) AS n FROM collection_jobs WHERE request_id = %(request_id)s

-- name: interactive_jobs_in_order
-- The request's live jobs in claim order (rank, then job id): the first is served first.
SELECT job_id, rank, status, resource, claimed_at, started_at
FROM collection_jobs
WHERE request_id = %(request_id)s
ORDER BY rank, job_id

-- name: interactive_pending_ahead
-- Interactive jobs waiting to be claimed before (rank, job_id), per resource.
SELECT resource, count(*) AS n
FROM collection_jobs
WHERE lane = 'interactive' AND status = 'pending'
  AND eligible_at <= clock_timestamp() + make_interval(secs => %(horizon_seconds)s)
  AND (rank, job_id) < (%(rank)s, %(job_id)s)
GROUP BY resource

-- name: interactive_leased_ahead
-- Interactive jobs held by collectors now, with the physical requests already counted for them.
SELECT j.job_id, j.resource, j.status, j.claimed_at, j.started_at,
       (SELECT count(*) FROM counted_requests l
        WHERE l.egress_key = c.egress_key AND l.slot_at >= j.claimed_at - interval '1 second'
          AND l.job_id = j.job_id) AS requests_counted
FROM collection_jobs j
JOIN collectors c ON c.collector_uuid = j.collector_uuid
WHERE j.lane = 'interactive' AND j.status IN ('claimed', 'running')
  AND (j.rank, j.job_id) < (%(rank)s, %(job_id)s)

-- name: interactive_pacing
-- The interactive lane's pacing by the admission's own rule (bf4ps_paced_interval and
-- bf4ps_paced_slot, db/schema.sql): the egresses its collectors use, their combined interval
-- (rates add up), their earliest slot, and whether one serves them now. A lane of no egress:
-- the interval a new one would be seeded with, at no throttle streak, and its slot now.
WITH t AS (SELECT clock_timestamp() AS now),
lane AS (
    SELECT g.egress_key,
           bf4ps_paced_interval(g.min_interval_seconds, g.throttle_streak, %(margin)s)
               AS interval_seconds,
           bf4ps_paced_slot(g.next_slot_at, g.cooldown_until, t.now, %(connect_lead)s)
               AS slot_at,
           bool_or(c.enabled AND NOT c.drained AND c.health = 'healthy') AS serving
    FROM collectors c
    JOIN egress_gates g ON g.egress_key = c.egress_key
    CROSS JOIN t
    WHERE c.lane = 'interactive' AND c.retired_at IS NULL
    GROUP BY g.egress_key, t.now
)
SELECT COALESCE(1 / sum(1 / l.interval_seconds),
                bf4ps_paced_interval(%(seed_interval)s, 0, %(margin)s)) AS interval_seconds,
       COALESCE(min(l.slot_at), t.now) AS next_free, t.now,
       COALESCE(bool_or(l.serving), false) AS serving,
       COALESCE(array_agg(l.egress_key ORDER BY l.egress_key)
                FILTER (WHERE l.egress_key IS NOT NULL), '{}') AS egresses
FROM t LEFT JOIN lane l ON true
GROUP BY t.now

-- name: interactive_measured_durations
-- Per resource, the lane's recent successes: mean time from the start to the success (the
-- succeeded row carries its lease's start).
WITH recent AS (
    SELECT resource, occurred_at, started_at
    FROM collection_events
    WHERE event_type = 'succeeded' AND lane = 'interactive'
      AND occurred_at > now() - make_interval(secs => %(window_seconds)s)
    ORDER BY occurred_at DESC
    LIMIT %(limit)s
)
SELECT resource, count(*) AS n,
       avg(extract(epoch FROM occurred_at - started_at)) AS mean_seconds
FROM recent
WHERE started_at IS NOT NULL AND started_at <= occurred_at
GROUP BY resource

-- name: interactive_measured_requests
-- Per resource, physical requests per job on the interactive egresses (a profile job also
-- asks for the owning account's soldiers).
SELECT resource, count(*) AS requests, count(DISTINCT job_id) AS jobs
FROM counted_requests
WHERE egress_key = ANY(%(egresses)s)
  AND slot_at > now() - make_interval(secs => %(window_seconds)s)
  AND job_id IS NOT NULL
GROUP BY resource

-- name: interactive_request_get
SELECT r.request_id, r.soldier_id, r.lookup_name, r.platform, r.status, r.resources,
       r.eta_at, r.first_request_at, r.finished_at, r.message, r.created_at, r.updated_at,
       s.persona_id, s.current_name, clock_timestamp() AS now
FROM interactive_requests r
LEFT JOIN soldiers s ON s.soldier_id = r.soldier_id
WHERE r.request_id = %(request_id)s

-- name: interactive_request_resources
-- Per resource of the request's soldier: the live job (if any) and the collection state.
SELECT r.resource, j.job_id, j.status AS job_status, j.lane, j.attempt_count,
       j.request_id = %(request_id)s AS own_job, j.last_error_class AS job_error_class,
       j.eligible_at, cs.status AS state_status, cs.last_success_at, cs.last_attempt_at,
       cs.last_error_class
FROM unnest(%(resources)s::text[]) WITH ORDINALITY AS r(resource, ord)
LEFT JOIN collection_jobs j ON j.soldier_id = %(soldier_id)s AND j.resource = r.resource
LEFT JOIN collection_state cs ON cs.soldier_id = %(soldier_id)s AND cs.resource = r.resource
ORDER BY r.ord

-- name: interactive_lookup_job
SELECT job_id, status, attempt_count, last_error_class, eligible_at
FROM collection_jobs
WHERE request_id = %(request_id)s AND resource = 'lookup'

-- name: search_canary
-- A soldier known to exist for checking an empty search answer (collector/search.py): the one
-- Battlelog's search found most recently, else the one BF4SW saw playing most recently; never
-- the name being looked up. Both are index scans (ix_soldier_sources_battlelog, migration
-- 0016; ix_soldiers_last_seen).
SELECT name FROM (
    (SELECT s.current_name AS name, 1 AS preference
     FROM soldier_sources ss JOIN soldiers s USING (soldier_id)
     WHERE ss.source_type = 'battlelog' AND lower(s.current_name) <> lower(%(name)s)
     ORDER BY ss.last_seen_at DESC LIMIT 1)
    UNION ALL
    (SELECT current_name, 2 FROM soldiers
     WHERE last_seen_at IS NOT NULL AND lower(current_name) <> lower(%(name)s)
     ORDER BY last_seen_at DESC LIMIT 1)
) known
ORDER BY preference
LIMIT 1
