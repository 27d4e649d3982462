-- Progress from snapshots (db/schema.sql): the intervals a snapshot write ends
-- (stats/progress_store.py), the checks after storage and the gains leaderboards the
-- scheduler keeps (stats/progress_check.py, stats/gains_boards.py), and the soldier page's reads
-- (views/progress.py). Every page read is a primary-key prefix range of one soldier's rows.

-- name: progress_last_good_detailed
-- The soldier's newest good detailed snapshot before %(fetched_at)s (a history row with every
-- required counter): where the next interval starts. A partial snapshot in between is skipped.
SELECT h.fetched_at, h.kills, h.deaths, h.score, h.time_played_seconds, h.headshots,
       h.shots_fired, h.shots_hit, h.rank
FROM detailed_stats_history h
WHERE h.soldier_id = %(soldier_id)s AND h.fetched_at < %(fetched_at)s
  AND h.kills IS NOT NULL AND h.deaths IS NOT NULL AND h.score IS NOT NULL
  AND h.time_played_seconds IS NOT NULL
ORDER BY h.fetched_at DESC
LIMIT 1

-- name: soldier_interval_insert
INSERT INTO soldier_intervals (
    soldier_id, platform, started_at, ended_at, kills, deaths, score, seconds, headshots,
    shots_fired, shots_hit, rank_from, rank_to, reset)
SELECT s.soldier_id, s.platform, %(started_at)s, %(ended_at)s, %(kills)s, %(deaths)s,
       %(score)s, %(seconds)s, %(headshots)s, %(shots_fired)s, %(shots_hit)s, %(rank_from)s,
       %(rank_to)s, %(reset)s
FROM soldiers s
WHERE s.soldier_id = %(soldier_id)s
ON CONFLICT (soldier_id, ended_at) DO NOTHING

-- name: weapons_before_write
-- The soldier's stored weapons (each one's last good snapshot) before a weapons write.
SELECT w.guid, s.weapon_id AS item_id, s.fetched_at, s.kills, s.headshots, s.shots_fired,
       s.shots_hit, s.time_equipped_seconds AS seconds, s.service_stars AS stars
FROM soldier_weapon_stats s
JOIN weapon_catalog w ON w.weapon_id = s.weapon_id
WHERE s.soldier_id = %(soldier_id)s

-- name: vehicles_before_write
SELECT v.guid, s.vehicle_id AS item_id, s.fetched_at, s.kills, NULL::bigint AS headshots,
       NULL::bigint AS shots_fired, NULL::bigint AS shots_hit, s.time_in_seconds AS seconds,
       s.service_stars AS stars
FROM soldier_vehicle_stats s
JOIN vehicle_catalog v ON v.vehicle_id = s.vehicle_id
WHERE s.soldier_id = %(soldier_id)s

-- name: item_intervals_insert
INSERT INTO item_intervals (
    soldier_id, kind, item_id, platform, started_at, ended_at, kills, seconds, headshots,
    shots_fired, shots_hit, stars_from, stars_to, reset)
SELECT %(soldier_id)s, %(kind)s, t.item_id, s.platform, t.started_at, %(ended_at)s, t.kills,
       t.seconds, t.headshots, t.shots_fired, t.shots_hit, t.stars_from, t.stars_to, t.reset
FROM unnest(%(item_id)s::integer[], %(started_at)s::timestamptz[], %(kills)s::bigint[],
            %(seconds)s::bigint[], %(headshots)s::bigint[], %(shots_fired)s::bigint[],
            %(shots_hit)s::bigint[], %(stars_from)s::bigint[], %(stars_to)s::bigint[],
            %(reset)s::boolean[])
    AS t(item_id, started_at, kills, seconds, headshots, shots_fired, shots_hit, stars_from,
         stars_to, reset)
JOIN soldiers s ON s.soldier_id = %(soldier_id)s
ON CONFLICT (soldier_id, kind, item_id, ended_at) DO NOTHING

-- name: soldier_intervals_unchecked
-- The oldest intervals the checks after storage have not seen, locked so that a standby
-- scheduler that just took over never checks the same ones at the same time (at most 10,000:
-- db/functions/progress.sql).
SELECT soldier_id, platform, started_at, ended_at, kills, deaths, score, seconds, headshots,
       shots_fired, shots_hit, rank_from, rank_to, reset
FROM bf4ps_soldier_intervals_unchecked(%(limit)s)

-- name: item_intervals_unchecked
SELECT soldier_id, kind, item_id, platform, started_at, ended_at, kills, seconds, headshots,
       shots_fired, shots_hit, stars_from, stars_to, reset
FROM bf4ps_item_intervals_unchecked(%(limit)s)

-- name: soldier_intervals_mark_checked
-- Marked with the database's clock, only while unchecked (db/functions/progress.sql).
SELECT bf4ps_soldier_intervals_checked(%(soldier_id)s::bigint[], %(ended_at)s::timestamptz[])
    AS n

-- name: item_intervals_mark_checked
SELECT bf4ps_item_intervals_checked(%(soldier_id)s::bigint[], %(kind)s::text[],
                                    %(item_id)s::integer[], %(ended_at)s::timestamptz[]) AS n

-- name: progress_flag_insert
-- One flag (kind 'soldier' has no item), only on an unchecked interval (db/functions/
-- progress.sql). A flag already raised for the interval is kept.
SELECT * FROM bf4ps_progress_flag_raise(%(soldier_id)s, %(kind)s, %(item_id)s, %(started_at)s,
                                        %(ended_at)s, %(reason)s)

-- name: gains_boards_drop_soldiers
-- A flagged soldier leaves every gains board at once (not at the next refresh): only one
-- with an open flag (db/functions/progress.sql).
SELECT bf4ps_gains_boards_drop(%(soldier_ids)s::bigint[]) AS n

-- name: gains_boards_refresh
-- Every gains board rebuilt from the window's checked, unflagged intervals, the window, the
-- prior and the minimum times the policy's as the database holds it (db/functions/progress.sql)
SELECT bf4ps_gains_boards_refresh(%(now)s) AS n

-- name: gains_board_page
-- One page of a gains board, best first (an index range of ix_gains_boards_rank). The page is
-- cut from gains_boards alone; only its rows are joined to their soldiers (page 40 joined the
-- thousand rows before it, in parallel workers: 40 ms at 1M soldiers).
SELECT g.soldier_id, s.persona_id, s.platform, s.current_name, g.value, g.raw, g.kills,
       g.score, g.seconds, g.refreshed_at
FROM (SELECT g.soldier_id, g.value, g.raw, g.kills, g.score, g.seconds, g.refreshed_at
      FROM gains_boards g
      WHERE g.board = %(board)s AND g.platform = %(platform)s AND g.item_id = %(item_id)s
      ORDER BY g.value DESC, g.soldier_id
      LIMIT %(limit)s OFFSET %(offset)s) AS g
JOIN soldiers s ON s.soldier_id = g.soldier_id
ORDER BY g.value DESC, g.soldier_id

-- name: gains_board_items
-- The weapons (or vehicles) that have a board on the platform, most soldiers first, for the
-- board picker (gains_board_items is rebuilt with the boards: a few hundred rows).
SELECT g.item_id, COALESCE(w.name, v.name) AS name, COALESCE(w.slug, v.slug) AS slug,
       g.soldiers AS rows
FROM gains_board_items g
LEFT JOIN weapon_catalog w ON g.board = 'weapon_kpm' AND w.weapon_id = g.item_id
LEFT JOIN vehicle_catalog v ON g.board = 'vehicle_kpm' AND v.vehicle_id = g.item_id
WHERE g.board = %(kind)s || '_kpm' AND g.platform = %(platform)s
ORDER BY g.soldiers DESC, g.item_id
LIMIT 200

-- name: soldier_intervals_of
-- The soldier's intervals ended since %(since)s, newest first, with the open flag of each.
SELECT i.started_at, i.ended_at, i.kills, i.deaths, i.score, i.seconds, i.headshots,
       i.shots_fired, i.shots_hit, i.rank_from, i.rank_to, i.reset, i.checked_at,
       f.reason AS flag_reason
FROM soldier_intervals i
LEFT JOIN progress_flags f
       ON f.soldier_id = i.soldier_id AND f.kind = 'soldier' AND f.ended_at = i.ended_at
      AND f.cleared_at IS NULL
WHERE i.soldier_id = %(soldier_id)s AND i.ended_at > %(since)s
ORDER BY i.ended_at DESC
LIMIT %(limit)s

-- name: item_intervals_of
-- The soldier's weapon and vehicle intervals ended since %(since)s.
SELECT kind, item_id, started_at, ended_at, kills, seconds, headshots, shots_fired, shots_hit,
       stars_from, stars_to, reset
FROM item_intervals
WHERE soldier_id = %(soldier_id)s AND ended_at > %(since)s
ORDER BY ended_at DESC
LIMIT %(limit)s

-- name: progress_flags_open_of
SELECT flag_id, kind, item_id, started_at, ended_at, reason, flagged_at
FROM progress_flags
WHERE soldier_id = %(soldier_id)s AND cleared_at IS NULL
ORDER BY ended_at DESC

-- name: progress_flags_list
-- Flags for operators: the open ones (or every one with %(all)s), newest first: the newest
-- %(limit)s read in ix_progress_flags_recent's order (flags are kept for ever), then joined to
-- their soldiers.
SELECT f.flag_id, f.soldier_id, s.persona_id, s.platform, s.current_name, f.kind, f.item_id,
       f.started_at, f.ended_at, f.reason, f.flagged_at, f.cleared_at, f.cleared_by,
       f.clear_note
FROM (SELECT * FROM progress_flags f
      WHERE %(all)s OR f.cleared_at IS NULL
      ORDER BY f.flagged_at DESC, f.flag_id DESC
      LIMIT %(limit)s) AS f
JOIN soldiers s ON s.soldier_id = f.soldier_id
ORDER BY f.flagged_at DESC, f.flag_id DESC

-- name: progress_flag_clear
-- An open flag cleared, once (db/functions/progress.sql: no runtime role updates flags).
SELECT * FROM bf4ps_progress_flag_clear(%(flag_id)s, %(now)s, %(by)s, %(note)s)

-- name: progress_now
SELECT clock_timestamp() AS now
