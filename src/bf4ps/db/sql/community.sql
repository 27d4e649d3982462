-- The community-compatible endpoints' own reads (views/bf4stats_boards.py). A soldier's
-- statistics are read with the soldier page's queries (stats/read.py).

-- name: community_rank_{board}
-- One soldier's place on a career leaderboard of his platform (web.sql's web_board_{board}: 10
-- hours played; a soldier with an open progress flag is on no board): his value (NULL when he
-- is not on the board) and the soldiers above him, counted in the board's partial index up to
-- %(cap)s of them (a deeper count would cost a scan of the board per request); the few open
-- flags are one hashed set, not a probe per row. Read in the board's index order from the top, as
-- the board's pages are (a seq scan was planned for the K/D board's expression otherwise).
WITH me AS (
    SELECT {order} AS value
    FROM detailed_stats_current d
    WHERE d.soldier_id = %(soldier_id)s AND d.time_played_seconds >= 36000{where}
      AND NOT EXISTS (SELECT 1 FROM progress_flags f
                      WHERE f.soldier_id = d.soldier_id AND f.cleared_at IS NULL)
)
SELECT (SELECT value FROM me)::double precision AS value,
       (SELECT count(*) FROM (
            SELECT 1 FROM detailed_stats_current d
            WHERE d.platform = %(platform)s AND d.time_played_seconds >= 36000{where}
              AND {order} > (SELECT value FROM me)
              AND d.soldier_id NOT IN (SELECT f.soldier_id FROM progress_flags f
                                       WHERE f.cleared_at IS NULL)
            ORDER BY {order} DESC NULLS LAST, d.soldier_id
            LIMIT %(cap)s) AS above) AS above

-- name: community_board_size_{board}
-- The soldiers on a career leaderboard of one platform (its partial index, counted whole).
SELECT (SELECT count(*) FROM detailed_stats_current d
        WHERE d.platform = %(platform)s AND d.time_played_seconds >= 36000{where})
     - (SELECT count(DISTINCT d.soldier_id) FROM detailed_stats_current d
        JOIN progress_flags f ON f.soldier_id = d.soldier_id AND f.cleared_at IS NULL
        WHERE d.platform = %(platform)s AND d.time_played_seconds >= 36000{where}) AS n

-- name: community_online_now
-- Soldiers on a server now, per platform: their open play sessions (BF4SW's sightings,
-- scheduler/sessions.py closes a session unseen for the session gap), each soldier's platform
-- read by primary key (a join was planned as a scan of every soldier).
SELECT o.platform, count(*) AS n
FROM (SELECT (SELECT s.platform FROM soldiers s WHERE s.soldier_id = p.soldier_id) AS platform
      FROM play_sessions p
      WHERE p.ended_at IS NULL) AS o
GROUP BY o.platform

-- name: community_online_peak
-- The most soldiers on a server at once over the last 24 hours, per platform, sampled every
-- quarter hour from the play sessions that overlap the day.
SELECT x.platform, max(x.n) AS peak
FROM (SELECT h.at, s.platform, count(*) AS n
      FROM generate_series(%(now)s::timestamptz - interval '24 hours', %(now)s::timestamptz,
                           interval '15 minutes') AS h(at)
      JOIN play_sessions p ON p.started_at <= h.at AND p.last_seen_at >= h.at
      JOIN soldiers s ON s.soldier_id = p.soldier_id
      WHERE p.last_seen_at >= %(now)s::timestamptz - interval '24 hours'
      GROUP BY h.at, s.platform) AS x
GROUP BY x.platform
