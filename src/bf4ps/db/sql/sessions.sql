-- Play sessions (scheduler/sessions.py in db/schema.sql) and the refresh reasons they bring.

-- name: sessions_observe
SELECT bf4ps_observe_sessions(%(soldier_ids)s::bigint[], %(seen)s::timestamptz[],
                              %(guids)s::text[], %(names)s::text[], %(gap_seconds)s) AS opened

-- name: sessions_close
SELECT bf4ps_close_sessions(%(source_now)s, %(gap_seconds)s) AS closed

-- name: sessions_active_refresh
-- Long sessions stay fresh: a soldier playing one session for longer than the interval whose
-- detailed stats are older than it becomes due (active_refresh). A session shorter than the
-- interval gets none, so the snapshot before a session stays the one taken before its start.
UPDATE collection_state cs
SET status = 'due', due_reason = 'active_refresh', eligible_since = clock_timestamp(),
    updated_at = clock_timestamp()
FROM play_sessions p
WHERE p.ended_at IS NULL AND p.soldier_id = cs.soldier_id AND cs.resource = 'detailed'
  AND cs.status = 'current'
  AND p.started_at < clock_timestamp() - make_interval(secs => %(refresh_seconds)s)
  AND cs.last_success_at < clock_timestamp() - make_interval(secs => %(refresh_seconds)s)

-- name: sessions_scheduled_profile
-- Known soldiers' profiles on a slow cadence, active or not: the oldest current ones past the
-- interval become due (scheduled_profile), a bounded batch per sweep.
WITH picked AS (
    SELECT soldier_id FROM collection_state
    WHERE resource = 'profile' AND status = 'current'
      AND last_success_at < clock_timestamp() - make_interval(secs => %(interval_seconds)s)
    ORDER BY last_success_at
    LIMIT %(n)s
    FOR UPDATE SKIP LOCKED
)
UPDATE collection_state cs
SET status = 'due', due_reason = 'scheduled_profile', eligible_since = clock_timestamp(),
    updated_at = clock_timestamp()
FROM picked WHERE cs.soldier_id = picked.soldier_id AND cs.resource = 'profile'

-- name: last_session_of
-- The soldier's latest play session and the detailed snapshots that bracket it: `before`, the
-- last history row at or before its start (else, for a soldier first collected during it, the
-- first row within it); `after`, the first row at or after its last sighting, and whether any
-- detailed collection succeeded after it (history keeps a row only when values changed);
-- `closing_scheduled`: a detailed collection is queued or due (the closing snapshot will come).
SELECT p.session_id, p.server_guid, p.server_name, p.started_at, p.last_seen_at, p.ended_at,
       p.sightings,
       b.fetched_at AS before_at, b.kills AS before_kills, b.deaths AS before_deaths,
       b.score AS before_score, b.time_played_seconds AS before_time,
       a.fetched_at AS after_at, a.kills AS after_kills, a.deaths AS after_deaths,
       a.score AS after_score, a.time_played_seconds AS after_time,
       ev.collected_at AS collected_after_at,
       nxt.started_at AS next_started_at,
       (EXISTS (SELECT 1 FROM collection_jobs j
                WHERE j.soldier_id = p.soldier_id AND j.resource = 'detailed')
        OR EXISTS (SELECT 1 FROM collection_state cs
                   WHERE cs.soldier_id = p.soldier_id AND cs.resource = 'detailed'
                     AND cs.status IN ('due', 'never_attempted', 'retry_wait')))
           AS closing_scheduled,
       (SELECT count(*) FROM play_sessions e
        WHERE e.soldier_id = p.soldier_id AND e.started_at < p.started_at
          AND e.last_seen_at > b.fetched_at) AS sessions_before
FROM (SELECT * FROM play_sessions WHERE soldier_id = %(soldier_id)s
      ORDER BY started_at DESC LIMIT 1) p
LEFT JOIN LATERAL (
    SELECT * FROM (
        (SELECT h.*, 0 AS pref FROM detailed_stats_history h
         WHERE h.soldier_id = p.soldier_id AND h.fetched_at <= p.started_at
         ORDER BY h.fetched_at DESC LIMIT 1)
        UNION ALL
        (SELECT h.*, 1 AS pref FROM detailed_stats_history h
         WHERE h.soldier_id = p.soldier_id AND h.fetched_at > p.started_at
           AND h.fetched_at < p.last_seen_at
         ORDER BY h.fetched_at LIMIT 1)) c
    ORDER BY c.pref LIMIT 1
) b ON true
LEFT JOIN LATERAL (
    SELECT h.* FROM detailed_stats_history h
    WHERE p.ended_at IS NOT NULL AND h.soldier_id = p.soldier_id
      AND h.fetched_at >= p.last_seen_at
    ORDER BY h.fetched_at LIMIT 1
) a ON true
LEFT JOIN LATERAL (
    SELECT e.occurred_at AS collected_at FROM collection_events e
    WHERE p.ended_at IS NOT NULL AND e.soldier_id = p.soldier_id
      AND e.resource = 'detailed' AND e.event_type = 'succeeded'
      AND e.occurred_at >= p.last_seen_at
    ORDER BY e.occurred_at LIMIT 1
) ev ON true
LEFT JOIN LATERAL (
    SELECT n.started_at FROM play_sessions n
    WHERE n.soldier_id = p.soldier_id AND n.started_at > p.started_at
    ORDER BY n.started_at LIMIT 1
) nxt ON true

-- name: sessions_progress
-- The demo's progress figures: soldiers with at least three detailed collections, ended
-- sessions whose closing snapshot is collected (a complete "last session" report), and the
-- soldiers on this week's board of the weapon that has the most (gains_board_items).
SELECT (SELECT count(*) FROM (
            SELECT soldier_id FROM collection_events
            WHERE event_type = 'succeeded' AND resource = 'detailed'
            GROUP BY soldier_id HAVING count(*) >= 3) s) AS soldiers_with_3_snapshots,
       (SELECT count(*) FROM play_sessions p
        WHERE p.ended_at IS NOT NULL AND EXISTS (
            SELECT 1 FROM collection_events e
            WHERE e.soldier_id = p.soldier_id AND e.resource = 'detailed'
              AND e.event_type = 'succeeded' AND e.occurred_at >= p.last_seen_at)
          AND EXISTS (
            SELECT 1 FROM detailed_stats_history h
            WHERE h.soldier_id = p.soldier_id AND h.fetched_at < p.last_seen_at))
       AS session_reports,
       (SELECT COALESCE(max(soldiers), 0) FROM gains_board_items
        WHERE board = 'weapon_kpm') AS weapon_board_soldiers
