-- Soldiers, their names and provenance.

-- name: soldiers_upsert
-- A whole BF4SW batch (scheduler/intake_store.py), in the
-- arrays' order (new soldiers get ids in discovery order). Earlier first_seen and later
-- last_seen win. last_seen_at is when BF4SW last saw the soldier play (it drives the activity
-- class), so only its sightings set it (%(played_at)s NULL otherwise): a soldier a player asked
-- for is not thereby active. The current name follows the newest BF4SW sighting, or the name
-- Battlelog's own search just returned (%(name_confirmed)s).
INSERT INTO soldiers AS s (persona_id, platform, current_name, first_seen_at, last_seen_at)
SELECT i.persona_id, i.platform, i.name, i.first_seen, i.played_at
FROM unnest(%(persona_ids)s::bigint[], %(platforms)s::text[], %(names)s::text[],
            %(first_seen)s::timestamptz[], %(played_at)s::timestamptz[])
     WITH ORDINALITY AS i(persona_id, platform, name, first_seen, played_at, ord)
ORDER BY i.ord
ON CONFLICT (persona_id, platform) DO UPDATE
SET current_name = CASE
        WHEN %(name_confirmed)s::boolean THEN excluded.current_name
        WHEN excluded.last_seen_at IS NOT NULL
             AND (s.last_seen_at IS NULL OR excluded.last_seen_at >= s.last_seen_at)
        THEN excluded.current_name ELSE s.current_name END,
    first_seen_at = LEAST(s.first_seen_at, excluded.first_seen_at),
    last_seen_at = GREATEST(s.last_seen_at, excluded.last_seen_at),
    updated_at = now()
RETURNING s.soldier_id, s.persona_id, s.platform, (s.xmax = 0) AS inserted

-- name: soldier_sighted
-- One soldier seen by the website (manual) or a look-up (battlelog, under its lease): the
-- identity, the name, the source and the never-attempted state in one call
-- (db/functions/soldiers.sql; the database's clock is the sighting's time).
SELECT * FROM bf4ps_soldier_sighted(%(persona_id)s, %(platform)s, %(name)s, %(source)s,
                                    %(eligible_since)s, %(job_id)s, %(lease_token)s)

-- name: soldier_by_id
SELECT * FROM soldiers WHERE soldier_id = %(soldier_id)s
