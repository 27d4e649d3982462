-- 0006: a soldier's last_seen_at is when BF4SW last saw them play (it drives the activity
-- class). Before this, a website submission (manual) or a resolved name lookup (battlelog)
-- also set it to the moment of the request, so a soldier a player asked for could look
-- active. Repair: the latest BF4SW sighting (the bf4sw provenance row keeps it), or none;
-- collection state copied from a wrong time is re-anchored (the scheduler's decay then moves
-- the class down where the real time lies outside its window; no BF4SW sighting: bootstrap).
CREATE TEMPORARY TABLE played ON COMMIT DROP AS
SELECT s.soldier_id, ss.last_seen_at AS played_at
FROM soldiers s
LEFT JOIN soldier_sources ss ON ss.soldier_id = s.soldier_id AND ss.source_type = 'bf4sw'
WHERE s.last_seen_at IS DISTINCT FROM ss.last_seen_at;

UPDATE soldiers s SET last_seen_at = p.played_at, updated_at = now()
FROM played p WHERE p.soldier_id = s.soldier_id;

UPDATE collection_state cs
SET activity_at = p.played_at,
    activity_class = CASE WHEN p.played_at IS NULL THEN 'bootstrap' ELSE cs.activity_class END,
    updated_at = now()
FROM played p WHERE p.soldier_id = cs.soldier_id;
