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
SELECT * FROM bf4ps_collector_insert(%(collector_uuid)s, %(name)s, %(hostname)s, %(lane)s,
                                     %(egress_key)s, %(source_address)s, %(version)s)

-- name: collector_started
SELECT (s.c).*, s.previous_health
FROM bf4ps_collector_started(%(collector_uuid)s, %(version)s, %(pid)s, %(source_address)s) s

-- name: collector_retire
SELECT * FROM bf4ps_collector_retire(%(collector_uuid)s, %(replaced_by)s)

-- name: collector_set_flags
SELECT * FROM bf4ps_collector_set_flags(%(name)s, %(enabled)s, %(drained)s, %(reason)s)

-- name: collector_heartbeat
-- A routine heartbeat: no event unless the collector was marked lost (then it is restored).
SELECT * FROM bf4ps_collector_heartbeat(%(collector_uuid)s)

-- name: collector_mark_lost
-- Healthy → lost, once: only the first detector (scheduler or the collector itself) wins.
SELECT * FROM bf4ps_collector_mark_lost(%(collector_uuid)s)

-- name: collector_stopped
SELECT * FROM bf4ps_collector_stopped(%(collector_uuid)s)

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
SELECT bf4ps_collector_replaced_by(%(collector_uuid)s, %(replaced_by)s)
