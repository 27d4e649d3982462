-- What BF4PS already knows of a soldier, for the plausibility of a new answer
-- (stats/plausible.py), the runs of suspect answers, and the archive of raw answers
-- (stats/archive.py; db/schema.sql).

-- name: plausible_detailed_stored
SELECT * FROM detailed_stats_current WHERE soldier_id = %(soldier_id)s

-- name: plausible_profile_stored
SELECT * FROM profile_current WHERE soldier_id = %(soldier_id)s

-- name: plausible_weapons_stored
SELECT c.guid, s.*
FROM soldier_weapon_stats s JOIN weapon_catalog c ON c.weapon_id = s.weapon_id
WHERE s.soldier_id = %(soldier_id)s

-- name: plausible_vehicles_stored
SELECT c.guid, s.*
FROM soldier_vehicle_stats s JOIN vehicle_catalog c ON c.vehicle_id = s.vehicle_id
WHERE s.soldier_id = %(soldier_id)s

-- name: suspect_of
SELECT kind, first_at, last_at, answers, counters FROM answer_suspects
WHERE soldier_id = %(soldier_id)s AND resource = %(resource)s

-- name: suspect_note
-- The run of the soldier and resource of the job whose lease the caller holds (or which just
-- failed as implausible): started, extended by one, or ended (db/functions/stats.sql).
SELECT * FROM bf4ps_suspect_note(%(job_id)s, %(lease_token)s, %(kind)s, %(extend)s,
                                 %(counters)s, %(clear)s)

-- name: suspects_of_soldier
SELECT resource, kind, first_at, last_at, answers FROM answer_suspects
WHERE soldier_id = %(soldier_id)s ORDER BY resource

-- name: archive_keep
-- The new raw answer, and the soldier+resource's older ones beyond the policy's count removed
-- (db/functions/stats.sql: the count is the database's archive_answers_kept).
SELECT bf4ps_archive_keep(%(soldier_id)s, %(resource)s, %(http_status)s, %(outcome)s,
                          %(body_bytes)s, %(body)s) AS removed

-- name: archive_delete_batch
-- Archived answers past the horizon, never younger than the policy's archive_retention_days
-- (db/functions/stats.sql); one row per answer deleted.
SELECT * FROM bf4ps_archive_prune(%(cutoff)s::timestamptz, %(batch)s::integer)

-- name: archive_of
-- A soldier's archived answers of one resource, newest first.
SELECT a.answer_id, a.received_at, a.http_status, a.outcome, a.body_bytes,
       octet_length(a.body) AS stored_bytes, a.body
FROM raw_answers a JOIN soldiers s ON s.soldier_id = a.soldier_id
WHERE s.persona_id = %(persona_id)s AND (%(platform)s::text IS NULL OR s.platform = %(platform)s)
  AND a.resource = %(resource)s
ORDER BY a.answer_id DESC
LIMIT %(limit)s

-- name: archive_replay
-- Per soldier and resource, the newest answer stored as current since %(since)s (the one the
-- current statistics came from, unless a later answer was refused).
SELECT DISTINCT ON (a.soldier_id, a.resource)
       a.answer_id, a.soldier_id, s.persona_id, s.platform, a.resource, a.received_at, a.body
FROM raw_answers a JOIN soldiers s ON s.soldier_id = a.soldier_id
WHERE a.received_at >= %(since)s AND a.outcome = 'stored'
  AND (%(resource)s::text IS NULL OR a.resource = %(resource)s)
ORDER BY a.soldier_id, a.resource, a.answer_id DESC

-- name: archive_size
-- The archive's size, and the most answers any soldier+resource has (the bound's check).
SELECT count(*) AS answers, COALESCE(sum(octet_length(body)), 0) AS stored_bytes,
       COALESCE(sum(body_bytes), 0) AS body_bytes,
       COALESCE((SELECT max(n) FROM (SELECT count(*) AS n FROM raw_answers
                                     GROUP BY soldier_id, resource) g), 0) AS most_per_resource
FROM raw_answers

-- name: replay_detailed_stored
SELECT * FROM detailed_stats_current WHERE soldier_id = %(soldier_id)s

-- name: replay_profile_stored
SELECT * FROM profile_current WHERE soldier_id = %(soldier_id)s

-- name: replay_weapons_stored
SELECT c.guid, s.* FROM soldier_weapon_stats s JOIN weapon_catalog c ON c.weapon_id = s.weapon_id
WHERE s.soldier_id = %(soldier_id)s

-- name: replay_vehicles_stored
SELECT c.guid, s.* FROM soldier_vehicle_stats s
JOIN vehicle_catalog c ON c.vehicle_id = s.vehicle_id
WHERE s.soldier_id = %(soldier_id)s

-- name: answers_soldier
SELECT soldier_id FROM soldiers
WHERE persona_id = %(persona_id)s AND (%(platform)s::text IS NULL OR platform = %(platform)s)
ORDER BY soldier_id LIMIT 1
