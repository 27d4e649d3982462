-- Capacity: the forecast's measured inputs, the backlog-age probe, the refresh lag, and the
-- fleet history the scheduler records (db/schema.sql). Nothing here scans collection_state: the probe
-- reads the first entry of an index per class and resource, the lag joins the window's
-- successes to their state rows by primary key. Windows over the event log and the ledger are
-- bounded by now() (stable: an index condition, so only the window's rows are read; see
-- web.sql web_budget_by_class); the callers run in autocommit, so now() is the statement's start.

-- name: backlog_oldest
-- The oldest eligible work not yet served, per class and resource: never attempted or due
-- (ix_state_feed, first entry per class and resource), retries whose wait is over
-- (ix_state_retry_resource), interactive jobs waiting in the queue.
SELECT c.klass, r.resource,
       GREATEST(0, extract(epoch FROM clock_timestamp() - o.oldest))::float8 AS age_seconds
FROM unnest(ARRAY['active', 'recent', 'bootstrap']) AS c(klass)
CROSS JOIN unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r(resource)
CROSS JOIN LATERAL (
    SELECT cs.eligible_since AS oldest FROM collection_state cs
    WHERE cs.activity_class = c.klass AND cs.resource = r.resource
      AND cs.status IN ('never_attempted', 'due')
    ORDER BY cs.eligible_since LIMIT 1) AS o
UNION ALL
SELECT 'retry', r.resource,
       GREATEST(0, extract(epoch FROM clock_timestamp() - o.oldest))::float8
FROM unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r(resource)
CROSS JOIN LATERAL (
    SELECT cs.next_attempt_at AS oldest FROM collection_state cs
    WHERE cs.status = 'retry_wait' AND cs.resource = r.resource
      AND cs.next_attempt_at <= clock_timestamp()
    ORDER BY cs.next_attempt_at LIMIT 1) AS o
UNION ALL
SELECT 'interactive', j.resource,
       GREATEST(0, extract(epoch FROM clock_timestamp() - min(j.created_at)))::float8
FROM collection_jobs j
WHERE j.lane = 'interactive' AND j.status = 'pending'
GROUP BY j.resource

-- name: refresh_lag
-- Becoming due (eligible_since) -> collected, for the successes of the window. A success
-- leaves eligible_since alone until the resource is due again, so the state row still holds
-- it (rows due again since are skipped).
SELECT e.priority_class AS klass, e.resource,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY l.lag)::float8 AS p50,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY l.lag)::float8 AS p95,
       count(*) AS n
FROM collection_events e
JOIN collection_state cs ON cs.soldier_id = e.soldier_id AND cs.resource = e.resource
CROSS JOIN LATERAL (SELECT extract(epoch FROM e.occurred_at - cs.eligible_since) AS lag) AS l
WHERE e.event_type = 'succeeded'
  AND e.occurred_at > now() - make_interval(secs => %(window_seconds)s)
  AND e.soldier_id IS NOT NULL AND cs.eligible_since <= e.occurred_at
GROUP BY e.priority_class, e.resource

-- name: requests_by_egress
-- Physical requests counted per egress over the last interval, beside its pacing limit.
SELECT g.egress_key, g.min_interval_seconds,
       (SELECT count(*) FROM counted_requests l WHERE l.egress_key = g.egress_key
          AND l.slot_at > now() - make_interval(secs => %(window_seconds)s)
          AND l.slot_at <= now()) AS requests
FROM egress_gates g ORDER BY g.egress_key

-- name: history_record
-- (db/functions/history.sql: recorded at the database's clock)
SELECT bf4ps_history_record(%(interval_seconds)s, %(soldiers)s, %(coverage)s, %(finished)s,
                            %(requests)s, %(backlog_age)s, %(refresh_lag)s)

-- name: history_window
-- The records of the window, thinned to at most about %(points)s (every k-th), oldest first.
SELECT recorded_at, interval_seconds, soldiers, coverage, finished, requests, backlog_age,
       refresh_lag
FROM (SELECT h.*, row_number() OVER (ORDER BY h.recorded_at DESC) AS rn,
             count(*) OVER () AS total
      FROM fleet_history h
      WHERE h.recorded_at > clock_timestamp() - make_interval(secs => %(window_seconds)s)) x
WHERE mod(rn - 1, GREATEST(1, ceil(total::float8 / %(points)s)::bigint)) = 0
ORDER BY recorded_at

-- name: history_latest
SELECT recorded_at, interval_seconds, soldiers, coverage, finished, requests, backlog_age,
       refresh_lag
FROM fleet_history ORDER BY recorded_at DESC LIMIT 1

-- name: history_first_since
-- The oldest record inside the window: the forecast's coverage progress is measured from it.
SELECT recorded_at, coverage FROM fleet_history
WHERE recorded_at > clock_timestamp() - make_interval(secs => %(window_seconds)s)
ORDER BY recorded_at LIMIT 1

-- name: history_delete_batch
-- Never a record younger than the policy's history_retention_days (db/functions/history.sql);
-- one row per record deleted.
SELECT * FROM bf4ps_history_prune(%(cutoff)s::timestamptz, %(batch)s::integer)

-- name: capacity_check_set
SELECT bf4ps_capacity_check_set(%(feasible)s, %(demand_per_hour)s, %(capacity_per_hour)s,
                                %(summary)s)

-- name: capacity_check_get
SELECT checked_at, feasible, demand_per_hour, capacity_per_hour, summary FROM capacity_check

-- name: forecast_costs
-- Per resource over the window: physical requests counted (the ledger) and attempts finished
-- (the event log), with the mean duration of the successes.
SELECT r.resource,
       (SELECT count(*) FROM counted_requests l WHERE l.resource = r.resource
          AND l.slot_at > now() - make_interval(secs => %(window_seconds)s))
           AS requests,
       count(*) FILTER (WHERE e.event_type = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE e.event_type = 'failed') AS failed,
       avg(e.duration_ms) FILTER (WHERE e.event_type = 'succeeded')::float8 AS duration_ms
FROM unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles', 'lookup']) AS r(resource)
LEFT JOIN collection_events e ON e.resource = r.resource
  AND e.event_type IN ('succeeded', 'failed')
  AND e.occurred_at > now() - make_interval(secs => %(window_seconds)s)
GROUP BY r.resource

-- name: forecast_sent
-- Requests sent over the window, background and interactive, and since when the window has
-- any (a fleet younger than the window is measured over its own age).
SELECT count(*) FILTER (WHERE budget_class <> 'interactive') AS background,
       count(*) FILTER (WHERE budget_class = 'interactive') AS interactive,
       extract(epoch FROM clock_timestamp() - min(slot_at))::float8 AS span_seconds
FROM counted_requests
WHERE slot_at > now() - make_interval(secs => %(window_seconds)s)
  AND slot_at <= now()

-- name: forecast_population
-- Soldiers seen within the active window, 24 h, 7 d and 30 d (ix_soldiers_last_seen), and
-- first seen within the last 7 days (BF4SW's first sighting: new soldiers), and play sessions
-- ended within 24 h, all and those with at least the policy's minimum play for a closing
-- detailed snapshot and for weapons and vehicles (the final refreshes' demand).
SELECT count(*) FILTER (WHERE last_seen_at >= clock_timestamp()
                                             - make_interval(secs => %(active_seconds)s))
           AS active,
       count(*) FILTER (WHERE last_seen_at >= clock_timestamp() - interval '1 day') AS d1,
       count(*) FILTER (WHERE last_seen_at >= clock_timestamp() - interval '7 days') AS d7,
       count(*) AS d30,
       (SELECT count(*) FROM soldiers WHERE first_seen_at >= clock_timestamp()
                                                            - interval '7 days') AS new7,
       (SELECT extract(epoch FROM clock_timestamp() - min(created_at))::float8 FROM soldiers)
           AS known_seconds,
       (SELECT count(*) FROM play_sessions WHERE ended_at >= clock_timestamp()
                                                            - interval '1 day') AS sessions_d1,
       (SELECT count(*) FROM play_sessions
        WHERE ended_at >= clock_timestamp() - interval '1 day'
          AND last_seen_at - started_at >= make_interval(secs => %(min_play)s))
           AS sessions_d1_min_play,
       (SELECT count(*) FROM play_sessions
        WHERE ended_at >= clock_timestamp() - interval '1 day'
          AND last_seen_at - started_at >= make_interval(secs => %(items_min_play)s))
           AS sessions_d1_items_min_play
FROM soldiers
WHERE last_seen_at >= clock_timestamp() - interval '30 days'

-- name: forecast_egresses
-- Every egress gate with the background collectors serving behind it.
SELECT g.egress_key, g.min_interval_seconds,
       count(c.collector_uuid) FILTER (
           WHERE c.lane = 'background' AND c.health = 'healthy' AND c.enabled
             AND NOT c.drained AND c.retired_at IS NULL) AS serving
FROM egress_gates g
LEFT JOIN collectors c ON c.egress_key = g.egress_key
GROUP BY g.egress_key, g.min_interval_seconds
ORDER BY g.egress_key

-- name: forecast_backlog
-- Never-attempted work per activity class and resource (ix_state_feed: an index-only count).
SELECT activity_class, resource, count(*) AS n FROM collection_state
WHERE status = 'never_attempted'
GROUP BY activity_class, resource

-- name: forecast_queued
-- The background working set per class (pending, claimed or running), the rank of its first
-- pending job and the ranks of its pending first attempts (never-attempted work), lowest
-- first, in seconds from now (the claim takes the lowest rank). The working set is bounded
-- (working_set_background), so the ranks are few.
SELECT j.priority_class, count(*) AS jobs,
       extract(epoch FROM min(j.rank) FILTER (WHERE j.status = 'pending')
                          - clock_timestamp())::float8 AS first_s,
       coalesce(array_agg(extract(epoch FROM j.rank - clock_timestamp())::float8
                          ORDER BY j.rank)
                FILTER (WHERE j.status = 'pending' AND s.status = 'never_attempted'),
                '{}') AS ranks_s
FROM collection_jobs j
LEFT JOIN collection_state s ON s.soldier_id = j.soldier_id AND s.resource = j.resource
WHERE j.lane = 'background'
GROUP BY j.priority_class

-- name: forecast_pass_seconds
-- The feeder's pass period as the queue shows it: every job a pass feeds carries the pass's
-- time plus its class's aging offset as its rank, so the gaps between consecutive distinct
-- ranks of each class's pending jobs are whole pass periods (one, or several where a pass fed
-- the class nothing): their lower quartile, with how many gaps there were. Inside a pass the
-- ranks also step by its jobs' positions (1 us each, bf4ps_feed_class; 10 ms for a pass of
-- 10,000): gaps under 50 ms are those steps, not passes.
SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY gap) AS pass_s, count(*) AS gaps
FROM (
    SELECT extract(epoch FROM rank - lag(rank) OVER (PARTITION BY priority_class
                                                     ORDER BY rank))::float8 AS gap
    FROM (SELECT DISTINCT priority_class, rank FROM collection_jobs
          WHERE lane = 'background' AND status = 'pending') d
) g
WHERE gap >= 0.05
