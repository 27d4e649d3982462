-- The website's reads. Each is an index lookup or a bounded scan: nothing counts millions of
-- rows per page view (coverage comes from coverage_totals: the counters and their unfolded
-- deltas).

-- name: web_ping
SELECT 1 AS ok

-- name: web_soldier_by_persona
SELECT soldier_id, persona_id, platform, current_name, battlelog_user_id, first_seen_at,
       last_seen_at, created_at, clock_timestamp() AS now
FROM soldiers
WHERE persona_id = %(persona_id)s AND platform = %(platform)s

-- name: web_collected_at
SELECT max(last_success_at) AS collected_at FROM collection_state
WHERE soldier_id = %(soldier_id)s

-- name: web_budget_by_class
-- Windows over the event log and the ledger are bounded by now(), not clock_timestamp(): a
-- volatile bound cannot be an index condition, so it was a filter over every retained row
-- (4M events: 1.6 s a console view). now() is the statement's start (the reads run in
-- autocommit). The budget's window is admission's own count (budget_window: the running
-- buckets and the edge's part-second of the ledger), not a pass over every counted request
-- in it (an hour's window at 20 egresses is 200,000 rows).
SELECT k.key AS budget_class, k.value::bigint AS n
FROM budget_window(now(), %(window_seconds)s) w, jsonb_each_text(w.used) k
ORDER BY k.key

-- name: web_recent_throttles
-- Throttle answers and every egress cool-down (a throttle's, a run of soft throttles', an
-- outage's, an expired session's: details.signal says which), newest first (ix_events_type,
-- ix_events_throttle; the window's bound is stable: see web_budget_by_class).
SELECT * FROM (
    (SELECT event_id, occurred_at, event_type, collector_name, egress_key, resource,
            persona_id, platform, http_status, error_class, error_message, details
     FROM collection_events
     WHERE event_type IN ('egress_throttled', 'egress_cooled', 'session_expired')
       AND occurred_at > now() - make_interval(secs => %(window_seconds)s)
     ORDER BY occurred_at DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT event_id, occurred_at, event_type, collector_name, egress_key, resource,
            persona_id, platform, http_status, error_class, error_message, details
     FROM collection_events
     WHERE (error_class = 'throttle' OR http_status IN (403, 429))
       AND event_type <> 'egress_throttled'
       AND occurred_at > now() - make_interval(secs => %(window_seconds)s)
     ORDER BY occurred_at DESC LIMIT %(limit)s)
) AS t
ORDER BY occurred_at DESC
LIMIT %(limit)s

-- name: web_requests_open
SELECT status, count(*) AS n FROM interactive_requests
WHERE status IN ('queued', 'collecting')
GROUP BY status

-- name: web_metrics_last_event
-- The newest event settled for the metrics: logged more than %(lag_seconds)s ago. An event's id
-- is drawn when it is inserted, its row is seen when its transaction commits: a cursor moved
-- to the newest id seen would skip a lower id committed a moment later (the metrics would
-- never count it), so the cursor stays behind the transactions that may still commit.
-- The newest settled event by time (the primary key read backwards in db/schema.sql), not the
-- largest id: an id above it that is older still is counted by the next scrape (the cursor
-- only moves forward: web/metrics.py).
SELECT COALESCE((SELECT event_id FROM collection_events
                 WHERE occurred_at < clock_timestamp() - make_interval(secs => %(lag_seconds)s)
                 ORDER BY occurred_at DESC, event_id DESC LIMIT 1), 0) AS event_id

-- name: web_metrics_failures_total
-- The failed attempts by class of the whole retained log up to %(upto)s (a web process's
-- first scrape: its failures counter starts where the event log does, not at zero).
SELECT COALESCE(resource, '') AS resource, COALESCE(lane, '') AS lane,
       COALESCE(error_class, '') AS error_class, count(*) AS n
FROM collection_events
WHERE event_id <= %(upto)s AND event_type = 'failed'
GROUP BY 1, 2, 3

-- name: web_metrics_events
-- New events since the last scrape, grouped for counters and histograms: bucket numbers come
-- from width_bucket over the caller's bounds (milliseconds).
SELECT event_type, COALESCE(resource, '') AS resource, COALESCE(lane, '') AS lane,
       width_bucket(duration_ms, %(bounds)s::integer[]) AS duration_bucket,
       width_bucket(wait_ms, %(bounds)s::integer[]) AS wait_bucket,
       count(*) AS n, COALESCE(sum(duration_ms), 0) AS duration_sum,
       COALESCE(sum(wait_ms), 0) AS wait_sum, max(event_id) AS last_id
FROM collection_events_log
WHERE event_id > %(after)s AND event_id <= %(upto)s
GROUP BY 1, 2, 3, 4, 5

-- name: web_metrics_throttles
SELECT COALESCE(egress_key, '') AS egress_key, count(*) AS n
FROM collection_events
WHERE event_id > %(after)s AND event_id <= %(upto)s AND event_type = 'egress_throttled'
GROUP BY 1

-- name: web_recently_collected
-- The home page: the newest detailed collections (ix_detailed_recent).
SELECT s.soldier_id, s.persona_id, s.platform, s.current_name, s.last_seen_at,
       d.rank, d.skill, d.kills, d.deaths, d.score_per_minute, d.time_played_seconds,
       d.fetched_at AS collected_at
FROM detailed_stats_current d
JOIN soldiers s ON s.soldier_id = d.soldier_id
ORDER BY d.fetched_at DESC
LIMIT %(limit)s

-- name: web_playing_now
-- Soldiers BF4SW saw on a server most recently (ix_soldiers_last_seen), with their stats.
SELECT s.soldier_id, s.persona_id, s.platform, s.current_name, s.last_seen_at,
       d.rank, d.skill, d.kills, d.deaths, d.score_per_minute, d.time_played_seconds,
       d.fetched_at AS collected_at
FROM soldiers s
LEFT JOIN detailed_stats_current d ON d.soldier_id = s.soldier_id
WHERE s.last_seen_at IS NOT NULL AND s.last_seen_at > %(since)s
ORDER BY s.last_seen_at DESC
LIMIT %(limit)s

-- name: web_board_{board}
-- Leaderboards: one platform's soldiers with at least 10 hours played, best first, read in
-- index order. Loaded once per board (db/queries.py BOARDS): `{order}` is the sort key of the
-- board's partial index (db/schema.sql) and `{where}` what its predicate adds, so each text
-- repeats its index's predicate and is planned on it. The page is cut from
-- detailed_stats_current alone; only its rows are joined to their soldiers. A soldier with an
-- open progress flag (db/schema.sql) is on no board until it is cleared.
SELECT s.soldier_id, s.persona_id, s.platform, s.current_name, s.last_seen_at,
       d.rank, d.skill, d.kills, d.deaths, d.score_per_minute, d.time_played_seconds,
       d.fetched_at AS collected_at
FROM (SELECT d.soldier_id, d.rank, d.skill, d.kills, d.deaths, d.score_per_minute,
             d.time_played_seconds, d.fetched_at
      FROM detailed_stats_current d
      WHERE d.platform = %(platform)s AND d.time_played_seconds >= 36000{where}
        AND NOT EXISTS (SELECT 1 FROM progress_flags f
                        WHERE f.soldier_id = d.soldier_id AND f.cleared_at IS NULL)
      ORDER BY {order} DESC NULLS LAST, d.soldier_id
      LIMIT %(limit)s OFFSET %(offset)s) AS d
JOIN soldiers s ON s.soldier_id = d.soldier_id
ORDER BY {order} DESC NULLS LAST, d.soldier_id

-- name: web_search_page
-- One page of the search: soldiers whose current or a former name starts with the query (a LIKE
-- prefix, wildcards escaped by the caller), exact matches first, then by name (byte order, as
-- the name indexes keep it). Each name index
-- is read in its own order for at most 1,000 candidates (`total` then says "1,000 or more"), so
-- a page costs the same for "a" at 1M soldiers as for a rare name. With a stats preview.
WITH cand AS (
    (SELECT soldier_id FROM soldiers
     WHERE lower(current_name) LIKE %(prefix)s ESCAPE '\'
     ORDER BY lower(current_name) USING ~<~ LIMIT 1000)
    UNION
    (SELECT soldier_id FROM soldier_names
     WHERE lower(name) LIKE %(prefix)s ESCAPE '\'
     ORDER BY lower(name) USING ~<~ LIMIT 1000)
), listed AS (
    SELECT s.soldier_id, s.persona_id, s.platform, s.current_name, s.last_seen_at,
           lower(s.current_name) = %(exact)s AS exact, count(*) OVER () AS total
    FROM cand JOIN soldiers s ON s.soldier_id = cand.soldier_id
    WHERE %(platform)s::text IS NULL OR s.platform = %(platform)s
    ORDER BY exact DESC, lower(s.current_name) USING ~<~, s.platform, s.persona_id
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT l.*, d.rank, d.skill, d.kills, d.deaths, d.score_per_minute, d.time_played_seconds,
       (SELECT max(cs.last_success_at) FROM collection_state cs
        WHERE cs.soldier_id = l.soldier_id) AS collected_at
FROM listed l
LEFT JOIN detailed_stats_current d ON d.soldier_id = l.soldier_id
ORDER BY l.exact DESC, lower(l.current_name) USING ~<~, l.platform, l.persona_id

-- name: web_metrics_scheduler_leading
-- Sessions holding the scheduler's leadership lock (a session advisory lock on one bigint key:
-- pg_locks shows its high half as classid, its low half as objid, objsubid 1) in this database.
SELECT count(*) AS n FROM pg_locks
WHERE locktype = 'advisory' AND granted AND objsubid = 1
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND ((classid::bigint << 32) | objid::bigint) = %(key)s

-- name: web_metrics_intake
-- Per intake cursor: whether its last pass failed, and the age of its last success.
SELECT source_name, last_error IS NOT NULL AS failing,
       extract(epoch FROM now() - last_success_at)::float8 AS success_age
FROM intake_state
ORDER BY source_name

-- name: web_metrics_restore_hold
-- Seconds until the restore guard lets collectors send again (a detected restore's hold, or the
-- run rule's for a server start nobody vouched for: db/schema.sql); 0: no hold.
SELECT COALESCE(max(greatest(0, extract(epoch FROM h.hold_until - now()))), 0)::float8 AS seconds
FROM bf4ps_restore_hold() h

-- name: web_metrics_settings_changed
-- When each kind of fleet setting (gate, budget, shares) last changed by the audited commands.
SELECT setting, extract(epoch FROM max(changed_at))::float8 AS changed_at
FROM fleet_settings_changes
GROUP BY setting
ORDER BY setting

-- name: web_metrics_gate_pacing
-- Each egress's pacing as the gate holds it, whoever set it (an alert compares its changes
-- with the audited ones).
SELECT egress_key, min_interval_seconds, window_requests
FROM egress_gates
ORDER BY egress_key

-- name: web_metrics_budget_window
SELECT window_seconds FROM fleet_budget

-- name: ops_login_attempt
-- The /ops lock-out counts of a login's keys (its client network, its account): checked before
-- the password is, counted on a failure, cleared on a success (web/login_limit.py; migration
-- 0023: shared by every web process, kept across a restart).
SELECT key, wait_seconds, failures
FROM bf4ps_ops_login_attempt(%(keys)s::text[], %(outcome)s, %(free)s, %(delay)s,
                             %(max_delay)s, %(forget_after)s)

-- name: web_sessions_expired
-- Per egress, whether its newest Battlelog-session event of the week is an expiry
-- (collector/session.py: session_expired, session_renewed); ix_events_type, the window's bound
-- stable (see web_budget_by_class).
SELECT DISTINCT ON (egress_key) egress_key, event_type = 'session_expired' AS expired
FROM collection_events
WHERE event_type IN ('session_expired', 'session_renewed')
  AND egress_key IS NOT NULL
  AND occurred_at > now() - make_interval(secs => %(window_seconds)s)
ORDER BY egress_key, occurred_at DESC
