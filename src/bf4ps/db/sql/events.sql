-- name: insert_event
INSERT INTO collection_events (
    event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, lease_token,
    soldier_id, persona_id, platform, resource, priority_class, attempt_number, result,
    duration_ms, wait_ms, http_status, error_class, error_message, details)
VALUES (
    %(event_type)s, %(collector_uuid)s, %(collector_name)s, %(hostname)s, %(egress_key)s,
    %(lane)s, %(job_id)s, %(lease_token)s, %(soldier_id)s, %(persona_id)s, %(platform)s,
    %(resource)s, %(priority_class)s, %(attempt_number)s, %(result)s, %(duration_ms)s,
    %(wait_ms)s, %(http_status)s, %(error_class)s, %(error_message)s, %(details)s)

-- name: events_search
-- The operator's event-log search: every filter optional, newest first, bounded. Each event
-- carries its soldier's current name (a look-up's event, before the soldier is known, the name
-- it resolved); `name` matches a current or former name.
SELECT e.event_id, e.occurred_at, e.event_type, e.collector_name, e.hostname, e.egress_key,
       e.lane, e.job_id, e.soldier_id, e.persona_id, e.platform, e.resource, e.priority_class,
       e.attempt_number, e.result, e.duration_ms, e.wait_ms, e.http_status, e.error_class,
       e.error_message, e.details, COALESCE(s.current_name, e.details->>'name') AS soldier_name
FROM collection_events e
LEFT JOIN soldiers s ON s.soldier_id = e.soldier_id
WHERE (%(persona_id)s::bigint IS NULL OR e.persona_id = %(persona_id)s)
  AND (%(platform)s::text IS NULL OR e.platform = %(platform)s)
  AND (%(collector)s::text IS NULL OR lower(e.collector_name) = lower(%(collector)s))
  AND (%(resource)s::text IS NULL OR e.resource = %(resource)s)
  AND (%(event_type)s::text IS NULL OR e.event_type = %(event_type)s)
  AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR e.occurred_at < %(until)s)
  AND (%(name)s::text IS NULL OR e.soldier_id IN (
          SELECT soldier_id FROM soldiers WHERE lower(current_name) = %(name)s
          UNION SELECT soldier_id FROM soldier_names WHERE lower(name) = %(name)s))
ORDER BY e.occurred_at DESC, e.event_id DESC
LIMIT %(limit)s
