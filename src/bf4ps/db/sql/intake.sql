-- BF4SW intake, BF4PS side: set-based imports of one batch of identities, their first jobs,
-- activity elevation and the durable cursors (intake_state 'bf4sw' / 'bf4sw_reconcile').

-- name: intake_lock
-- One importer at a time (held until the batch transaction ends); others skip the tick.
SELECT pg_try_advisory_xact_lock(hashtext('bf4ps:bf4sw-intake')) AS locked

-- name: intake_now
SELECT now() AS now

-- name: intake_analyze
-- After a bulk import (the first 190k soldiers arrive within a minute, faster than autovacuum
-- analyzes): fresh statistics keep the per-soldier look-ups on their indexes.
ANALYZE soldiers, soldier_names, soldier_sources, collection_state, collection_jobs

-- name: intake_state_get
SELECT last_alias_id, reconcile_watermark FROM intake_state WHERE source_name = %(source)s

-- name: intake_cursor_advance
-- The cursors only move forward (bf4ps_intake_mark, db/functions/feeder.sql).
SELECT bf4ps_intake_mark(%(source)s, %(last_alias_id)s, NULL, NULL)

-- name: intake_watermark_advance
SELECT bf4ps_intake_mark(%(source)s, NULL, %(watermark)s, NULL)

-- name: intake_error
SELECT bf4ps_intake_mark(%(source)s, NULL, NULL, %(error)s)

-- name: intake_upsert_names
-- A batch's names (bf4ps_intake_names, db/functions/feeder.sql): how many were new.
SELECT bf4ps_intake_names(%(soldier_ids)s::bigint[], %(names)s::text[],
                          %(first_seen)s::timestamptz[], %(last_seen)s::timestamptz[]) AS n

-- name: intake_upsert_sources
-- A batch's bf4sw source, and every resource of its soldiers never attempted, eligible since
-- the import, FIFO by import order (bf4ps_intake_sources, db/functions/feeder.sql).
SELECT bf4ps_intake_sources(%(soldier_ids)s::bigint[], %(first_seen)s::timestamptz[],
                            %(last_seen)s::timestamptz[], %(now)s)

-- name: intake_enqueue_discovered
-- The first job of NEW soldiers (no job can exist yet), with the `created` event enqueue()
-- writes, in one statement; ids follow discovery order. Returns the soldiers that got a job.
-- Always background (bf4ps_intake_enqueue in db/schema.sql).
SELECT soldier_id, job_id
FROM bf4ps_intake_enqueue(%(soldier_ids)s::bigint[], %(classes)s::text[],
                          %(ranks)s::timestamptz[], %(resource)s, %(reason)s, %(now)s)

-- name: intake_pending_jobs
-- Background work of seen-again soldiers that activity may promote. Driven by the id list, so
-- the plan stays one index probe per soldier even with stale statistics.
SELECT j.job_id, j.soldier_id, j.resource, j.priority_class, j.reason, j.eligible_at,
       s.persona_id, s.platform
FROM unnest(%(soldier_ids)s::bigint[]) AS w(soldier_id)
JOIN collection_jobs j ON j.soldier_id = w.soldier_id
JOIN soldiers s ON s.soldier_id = w.soldier_id
WHERE j.lane = 'background' AND j.status = 'pending'
ORDER BY j.soldier_id, j.resource

-- name: intake_unqueued_never_attempted
-- Seen-again soldiers whose resource was never attempted and has no job at all.
SELECT cs.soldier_id, s.persona_id, s.platform
FROM unnest(%(soldier_ids)s::bigint[]) AS w(soldier_id)
JOIN collection_state cs ON cs.soldier_id = w.soldier_id AND cs.resource = %(resource)s
JOIN soldiers s ON s.soldier_id = w.soldier_id
WHERE cs.status = 'never_attempted'
  AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                  WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
ORDER BY cs.soldier_id

-- name: intake_mark_due
-- Active soldiers: resources collected successfully but older than their freshness become due
-- (the feeder materializes them); fresh ones stay current. A soldier in an open play session
-- waits for its end (its final refresh, or the due sweep after it).
UPDATE collection_state cs
SET status = 'due', due_reason = NULL, eligible_since = %(now)s, updated_at = %(now)s
FROM unnest(%(soldier_ids)s::bigint[]) AS w(soldier_id)
CROSS JOIN unnest(%(resources)s::text[], %(freshness_seconds)s::float8[]) AS f(resource, seconds)
WHERE cs.soldier_id = w.soldier_id AND cs.resource = f.resource
  AND cs.status = 'current'
  AND cs.last_success_at < %(now)s - make_interval(secs => f.seconds)
  AND NOT EXISTS (SELECT 1 FROM play_sessions p  -- on a server: collected after the session
                  WHERE p.soldier_id = cs.soldier_id AND p.ended_at IS NULL)
RETURNING cs.soldier_id, cs.resource
