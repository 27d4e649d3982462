-- The BF4SW simulator (`bf4ps simulate bf4sw`): BF4SW's table in its own database, filled and
-- kept moving. Never used by the intake, which only reads (db/sql/bf4sw.sql).

-- name: sim_bf4sw_create
-- BF4SW keeps one row per alias name of a persona: a rename adds a row, a sighting moves the
-- row's last_seen. The unique key also serves look-ups of a persona's aliases; last_seen is
-- indexed for reconciliation windows and activity queries.
CREATE TABLE IF NOT EXISTS bf4_player_aliases (
    id bigserial PRIMARY KEY,
    platform text NOT NULL,
    persona_id bigint NOT NULL,
    player_name text NOT NULL,
    first_seen timestamptz NOT NULL DEFAULT now(),
    last_seen timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_bf4_player_aliases_identity UNIQUE (platform, persona_id, player_name),
    CONSTRAINT bf4_player_aliases_seen_order CHECK (first_seen <= last_seen)
);
CREATE INDEX IF NOT EXISTS ix_bf4_player_aliases_last_seen ON bf4_player_aliases (last_seen);
-- the server each persona was last seen on (the intake reads it when present: sessions)
CREATE TABLE IF NOT EXISTS bf4_server_players (
    platform text NOT NULL,
    persona_id bigint NOT NULL,
    server_guid text NOT NULL,
    server_name text NOT NULL,
    seen_at timestamptz NOT NULL,
    PRIMARY KEY (platform, persona_id)
);

-- name: sim_bf4sw_truncate
TRUNCATE bf4_player_aliases, bf4_server_players RESTART IDENTITY

-- name: sim_bf4sw_count
SELECT count(*) AS n FROM bf4_player_aliases

-- name: sim_bf4sw_now
SELECT clock_timestamp() AS now

-- name: sim_bf4sw_copy
COPY bf4_player_aliases (platform, persona_id, player_name, first_seen, last_seen) FROM STDIN

-- name: sim_bf4sw_analyze
ANALYZE bf4_player_aliases

-- name: sim_bf4sw_names
SELECT platform, persona_id, player_name FROM bf4_player_aliases

-- name: sim_bf4sw_census
-- Per platform string: alias rows, personas, and personas by age of their latest sighting.
WITH personas AS (
    SELECT platform, persona_id, count(*) AS aliases, max(last_seen) AS last_seen
    FROM bf4_player_aliases GROUP BY platform, persona_id
)
SELECT platform, sum(aliases)::bigint AS aliases, count(*) AS personas,
       count(*) FILTER (WHERE aliases > 1) AS renamed,
       count(*) FILTER (WHERE last_seen > clock_timestamp() - interval '1 hour') AS seen_1h,
       count(*) FILTER (WHERE last_seen > clock_timestamp() - interval '24 hours') AS seen_24h,
       count(*) FILTER (WHERE last_seen > clock_timestamp() - interval '7 days') AS seen_7d,
       count(*) FILTER (WHERE last_seen > clock_timestamp() - interval '30 days') AS seen_30d
FROM personas
GROUP BY platform
ORDER BY platform

-- name: sim_bf4sw_sight
-- Sightings: `n` random personas whose latest sighting is `min_age`..`max_age` seconds old are
-- seen now, under their current name (the alias with the latest last_seen).
WITH picked AS (
    SELECT DISTINCT platform, persona_id FROM (
        SELECT platform, persona_id FROM bf4_player_aliases
        WHERE last_seen > clock_timestamp() - make_interval(secs => %(max_age)s)
          AND last_seen <= clock_timestamp() - make_interval(secs => %(min_age)s)
          AND NOT (persona_id = ANY(%(players)s::bigint[]))  -- they play by their schedule
        ORDER BY random()
        LIMIT %(n)s
    ) AS sample
), current AS (
    SELECT DISTINCT ON (a.platform, a.persona_id) a.id
    FROM bf4_player_aliases a JOIN picked p USING (platform, persona_id)
    ORDER BY a.platform, a.persona_id, a.last_seen DESC, a.id DESC
)
UPDATE bf4_player_aliases a SET last_seen = clock_timestamp()
FROM current WHERE a.id = current.id
RETURNING a.id

-- name: sim_bf4sw_pick_recent
SELECT DISTINCT ON (platform, persona_id) platform, persona_id
FROM (SELECT platform, persona_id FROM bf4_player_aliases
      WHERE last_seen > clock_timestamp() - interval '24 hours'
      ORDER BY random() LIMIT %(n)s) AS sample

-- name: sim_bf4sw_insert
-- New aliases (new soldiers, or a new name of a known persona), seen now.
INSERT INTO bf4_player_aliases (platform, persona_id, player_name, first_seen, last_seen)
SELECT i.platform, i.persona_id, i.player_name, t.ts, t.ts
FROM unnest(%(platforms)s::text[], %(persona_ids)s::bigint[], %(names)s::text[])
     AS i(platform, persona_id, player_name)
CROSS JOIN (SELECT clock_timestamp() AS ts) AS t
ON CONFLICT (platform, persona_id, player_name) DO UPDATE SET last_seen = excluded.last_seen
RETURNING id

-- name: sim_bf4sw_personas
SELECT DISTINCT platform, persona_id FROM bf4_player_aliases

-- name: sim_bf4sw_play
-- Players in a session now (sim/play.py) are seen on their server: the current alias's
-- last_seen moves to now and bf4_server_players says where.
WITH on_server AS (
    SELECT * FROM unnest(%(platforms)s::text[], %(persona_ids)s::bigint[], %(guids)s::text[],
                         %(names)s::text[]) AS o(platform, persona_id, guid, name)
), current AS (
    SELECT DISTINCT ON (a.platform, a.persona_id) a.id
    FROM bf4_player_aliases a JOIN on_server o USING (platform, persona_id)
    ORDER BY a.platform, a.persona_id, a.last_seen DESC, a.id DESC
), seen AS (
    UPDATE bf4_player_aliases a SET last_seen = clock_timestamp()
    FROM current WHERE a.id = current.id
    RETURNING a.id
)
INSERT INTO bf4_server_players AS sp (platform, persona_id, server_guid, server_name, seen_at)
SELECT platform, persona_id, guid, name, clock_timestamp() FROM on_server
ON CONFLICT (platform, persona_id) DO UPDATE
SET server_guid = excluded.server_guid, server_name = excluded.server_name,
    seen_at = excluded.seen_at
