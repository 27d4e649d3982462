-- Soldiers, their names and provenance.

-- name: soldiers_upsert
-- A whole BF4SW batch (scheduler/intake_store.py), in the arrays' order (new soldiers get ids
-- in discovery order; bf4ps_intake_soldiers, db/functions/feeder.sql). Earlier first_seen and
-- later last_seen win. last_seen_at is when BF4SW last saw the soldier play (it drives the
-- activity class); the current name follows the newest BF4SW sighting.
SELECT * FROM bf4ps_intake_soldiers(%(persona_ids)s::bigint[], %(platforms)s::text[],
                                    %(names)s::text[], %(first_seen)s::timestamptz[],
                                    %(played_at)s::timestamptz[])

-- name: soldier_sighted
-- One soldier seen by the website (manual) or a look-up (battlelog, under its lease): the
-- identity, the name, the source and the never-attempted state in one call
-- (db/functions/soldiers.sql; the database's clock is the sighting's time).
SELECT * FROM bf4ps_soldier_sighted(%(persona_id)s, %(platform)s, %(name)s, %(source)s,
                                    %(eligible_since)s, %(job_id)s, %(lease_token)s)

-- name: soldier_by_id
SELECT * FROM soldiers WHERE soldier_id = %(soldier_id)s
