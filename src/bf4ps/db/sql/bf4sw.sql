-- Read-only queries against BF4SW's own database (the intake opens that connection with
-- default_transaction_read_only). BF4SW keeps one row per alias name of a persona in
-- bf4_player_aliases(id, platform, persona_id, player_name, first_seen, last_seen), unique on
-- (platform, persona_id, player_name); `id` only grows, `last_seen` keeps moving on old rows.

-- name: bf4sw_read_only
SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY

-- name: bf4sw_statement_timeout
SELECT set_config('statement_timeout', %(ms)s, false) AS statement_timeout

-- name: bf4sw_table_exists
SELECT to_regclass('bf4_player_aliases') IS NOT NULL AS present

-- name: bf4sw_now
-- The source's clock: watermarks are compared with last_seen values BF4SW wrote with it.
SELECT clock_timestamp() AS now

-- name: bf4sw_new_aliases
-- Discovery: the next rows past the id cursor (primary-key range scan).
SELECT id, platform, persona_id
FROM bf4_player_aliases
WHERE id > %(after_id)s
ORDER BY id
LIMIT %(limit)s

-- name: bf4sw_seen_page
-- Reconciliation: the next alias rows seen in the window, a bounded page in (last_seen, id)
-- order after the previous page's last row (a range scan of BF4SW's last_seen index, which
-- docs/operations.md asks BF4SW to have).
SELECT id, platform, persona_id, last_seen
FROM bf4_player_aliases
WHERE last_seen >= %(after_seen)s AND last_seen <= %(until)s
  AND (last_seen, id) > (%(after_seen)s, %(after_id)s)
ORDER BY last_seen, id
LIMIT %(limit)s

-- name: bf4sw_platform_strings
-- The distinct platform strings, by a loose scan of the unique index (one probe per string).
WITH RECURSIVE p(platform) AS (
    (SELECT platform FROM bf4_player_aliases ORDER BY platform LIMIT 1)
    UNION ALL
    SELECT (SELECT a.platform FROM bf4_player_aliases a WHERE a.platform > p.platform
            ORDER BY a.platform LIMIT 1)
    FROM p WHERE p.platform IS NOT NULL
)
SELECT platform FROM p WHERE platform IS NOT NULL

-- name: bf4sw_aliases_of
-- Every alias of the given (platform, persona_id) identities (prefix of the unique index).
SELECT a.id, a.platform, a.persona_id, a.player_name, a.first_seen, a.last_seen
FROM bf4_player_aliases a
JOIN unnest(%(platforms)s::text[], %(persona_ids)s::bigint[]) AS k(platform, persona_id)
  ON a.platform = k.platform AND a.persona_id = k.persona_id
ORDER BY a.id

-- name: bf4sw_servers_present
-- BF4SW's optional table of the server each persona was last seen on (one row per persona:
-- platform, persona_id, server_guid, server_name, seen_at). Without it sessions have no server.
SELECT to_regclass('bf4_server_players') IS NOT NULL AS present

-- name: bf4sw_servers_of
-- The last server of the given (platform, persona_id) identities (primary-key probes).
SELECT sp.platform, sp.persona_id, sp.server_guid, sp.server_name, sp.seen_at
FROM bf4_server_players sp
JOIN unnest(%(platforms)s::text[], %(persona_ids)s::bigint[]) AS k(platform, persona_id)
  ON sp.platform = k.platform AND sp.persona_id = k.persona_id
