-- The collector registry: durable identity (uuid) + current health.

-- name: collector_by_uuid
SELECT * FROM collectors WHERE collector_uuid = %(collector_uuid)s

-- name: collector_lock_name
-- Registrations of one name (start, --replace) run one at a time: two processes started in
-- the same instant would otherwise both pass the running-process check.
SELECT pg_advisory_xact_lock(hashtextextended('bf4ps.collector:' || lower(%(name)s), 0))

-- name: collector_by_name
SELECT * FROM collectors WHERE lower(collector_name) = lower(%(name)s) AND retired_at IS NULL

-- name: collector_insert
INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key,
                        source_address, software_version)
VALUES (%(collector_uuid)s, %(name)s, %(hostname)s, %(lane)s, %(egress_key)s,
        %(source_address)s, %(version)s)
RETURNING *

-- name: collector_started
UPDATE collectors
SET started_at = now(), stopped_at = NULL, software_version = %(version)s, pid = %(pid)s,
    source_address = %(source_address)s, last_heartbeat_at = now(),
    health = 'healthy', heartbeat_lost_at = NULL, updated_at = now()
WHERE collector_uuid = %(collector_uuid)s
RETURNING *, (SELECT health FROM collectors WHERE collector_uuid = %(collector_uuid)s) AS previous_health

-- name: collector_retire
UPDATE collectors
SET retired_at = now(), enabled = false, replaced_by = %(replaced_by)s,
    health = CASE WHEN health = 'lost' THEN 'stopped' ELSE health END, heartbeat_lost_at = NULL,
    updated_at = now()
WHERE collector_uuid = %(collector_uuid)s AND retired_at IS NULL
RETURNING collector_uuid

-- name: collector_set_flags
UPDATE collectors
SET enabled = COALESCE(%(enabled)s, enabled),
    drained = COALESCE(%(drained)s, drained),
    drained_at = CASE WHEN %(drained)s IS NULL THEN drained_at
                      WHEN %(drained)s THEN COALESCE(drained_at, now()) END,
    drain_reason = CASE WHEN %(drained)s IS NULL THEN drain_reason
                        WHEN %(drained)s THEN %(reason)s END,
    updated_at = now()
WHERE lower(collector_name) = lower(%(name)s) AND retired_at IS NULL
RETURNING *

-- name: collector_heartbeat
-- A routine heartbeat: no event unless the collector was marked lost (then it is restored).
UPDATE collectors c
SET last_heartbeat_at = now(), health = 'healthy', heartbeat_lost_at = NULL, updated_at = now()
FROM (SELECT collector_uuid, health AS previous_health, heartbeat_lost_at AS lost_since
      FROM collectors WHERE collector_uuid = %(collector_uuid)s FOR UPDATE) AS prev
WHERE c.collector_uuid = prev.collector_uuid
RETURNING c.enabled, c.drained, c.retired_at, prev.previous_health, prev.lost_since

-- name: collector_mark_lost
-- Healthy → lost, once: only the first detector (scheduler or the collector itself) wins.
UPDATE collectors
SET health = 'lost', heartbeat_lost_at = now(), updated_at = now()
WHERE collector_uuid = %(collector_uuid)s AND health IN ('healthy', 'unknown')
  AND retired_at IS NULL
RETURNING collector_uuid, collector_name, hostname, egress_key, lane, last_heartbeat_at

-- name: collector_stopped
UPDATE collectors
SET health = 'stopped', stopped_at = now(), heartbeat_lost_at = NULL, pid = NULL, updated_at = now()
WHERE collector_uuid = %(collector_uuid)s
RETURNING collector_uuid

-- name: collectors_list
-- The current job is the live job the collector holds a lease on (the latest claimed).
SELECT c.*, j.job_id AS current_job_id, j.resource AS job_resource, j.status AS job_status,
       s.persona_id AS job_persona_id, s.current_name AS job_soldier_name,
       COALESCE(s.platform, j.lookup_platform) AS job_platform,
       j.lookup_name AS job_lookup_name,
       extract(epoch FROM now() - c.last_heartbeat_at) AS heartbeat_age
FROM collectors c
LEFT JOIN LATERAL (
    SELECT job_id, resource, status, soldier_id, lookup_name, lookup_platform
    FROM collection_jobs
    WHERE collector_uuid = c.collector_uuid AND status IN ('claimed', 'running')
    ORDER BY claimed_at DESC LIMIT 1
) j ON true
LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
WHERE c.retired_at IS NULL OR %(include_retired)s
ORDER BY c.retired_at NULLS FIRST, lower(c.collector_name)

-- name: collector_replaced_by
UPDATE collectors SET replaced_by = %(replaced_by)s WHERE collector_uuid = %(collector_uuid)s
