-- Soldiers, their names and provenance.

-- name: soldier_upsert
-- Earlier first_seen and later last_seen win. last_seen_at is when BF4SW last saw the soldier
-- play (it drives the activity class), so only its sightings set it: a soldier a player asked
-- for is not thereby active. The current name follows the newest BF4SW sighting, or the name
-- Battlelog's own search just returned (%(name_confirmed)s).
INSERT INTO soldiers (persona_id, platform, current_name, first_seen_at, last_seen_at)
VALUES (%(persona_id)s, %(platform)s, %(name)s, %(first_seen)s, %(played_at)s)
ON CONFLICT (persona_id, platform) DO UPDATE
SET current_name = CASE
        WHEN %(name_confirmed)s THEN excluded.current_name
        WHEN excluded.last_seen_at IS NOT NULL
             AND (soldiers.last_seen_at IS NULL OR excluded.last_seen_at >= soldiers.last_seen_at)
        THEN excluded.current_name ELSE soldiers.current_name END,
    first_seen_at = LEAST(soldiers.first_seen_at, excluded.first_seen_at),
    last_seen_at = GREATEST(soldiers.last_seen_at, excluded.last_seen_at),
    updated_at = now()
RETURNING soldier_id, (xmax = 0) AS inserted, last_seen_at

-- name: soldier_name_upsert
INSERT INTO soldier_names (soldier_id, name, first_seen_at, last_seen_at)
VALUES (%(soldier_id)s, %(name)s, %(first_seen)s, %(last_seen)s)
ON CONFLICT (soldier_id, name) DO UPDATE
SET first_seen_at = LEAST(soldier_names.first_seen_at, excluded.first_seen_at),
    last_seen_at = GREATEST(soldier_names.last_seen_at, excluded.last_seen_at)

-- name: soldier_source_upsert
INSERT INTO soldier_sources (soldier_id, source_type, first_seen_at, last_seen_at)
VALUES (%(soldier_id)s, %(source)s, %(first_seen)s, %(last_seen)s)
ON CONFLICT (soldier_id, source_type) DO UPDATE
SET first_seen_at = LEAST(soldier_sources.first_seen_at, excluded.first_seen_at),
    last_seen_at = GREATEST(soldier_sources.last_seen_at, excluded.last_seen_at)

-- name: soldier_by_id
SELECT * FROM soldiers WHERE soldier_id = %(soldier_id)s
