-- name: insert_event
-- One event, through bf4ps_event_record (db/schema.sql): the function fixes what the
-- caller's role may not choose (its event types, its own collector identity, no forged lease
-- outcome); the arguments are the table's writable columns, by name.
SELECT bf4ps_event_record(
    event_type => %(event_type)s, collector_uuid => %(collector_uuid)s,
    collector_name => %(collector_name)s, hostname => %(hostname)s,
    egress_key => %(egress_key)s, lane => %(lane)s, job_id => %(job_id)s,
    lease_token => %(lease_token)s, soldier_id => %(soldier_id)s, persona_id => %(persona_id)s,
    platform => %(platform)s, resource => %(resource)s, priority_class => %(priority_class)s,
    attempt_number => %(attempt_number)s, result => %(result)s, duration_ms => %(duration_ms)s,
    wait_ms => %(wait_ms)s, http_status => %(http_status)s, error_class => %(error_class)s,
    error_message => %(error_message)s, details => %(details)s, claimed_at => %(claimed_at)s,
    started_at => %(started_at)s) AS event_id

-- name: events_search
-- The operator's event-log search: every filter optional, newest first, bounded. Each event
-- carries its soldier's current name (a look-up's event, before the soldier is known, the name
-- it resolved); `name` matches a current or former name. The log's rows per transition
-- (collection_events_log): a stored row stands for its lease's claimed and started rows too,
-- all at or before its own time, so the newest `limit` rows of the log are among those the
-- newest `limit` stored rows stand for (the stored rows are found by the indexes, then expanded).
-- Named columns only: the website reads the log without its lease tokens (db/schema.sql).
WITH stored AS (
    SELECT e.event_id, e.occurred_at, e.event_type, e.collector_name, e.hostname, e.egress_key,
           e.lane, e.job_id, e.soldier_id, e.persona_id, e.platform, e.resource,
           e.priority_class, e.attempt_number, e.result, e.duration_ms, e.wait_ms,
           e.http_status, e.error_class, e.error_message, e.details, e.claimed_at, e.started_at
    FROM collection_events e
    WHERE (%(persona_id)s::bigint IS NULL OR e.soldier_id IN (
              SELECT soldier_id FROM soldiers WHERE persona_id = %(persona_id)s
                AND (%(platform)s::text IS NULL OR platform = %(platform)s))
           OR (e.soldier_id IS NULL AND e.persona_id = %(persona_id)s))
      AND (%(platform)s::text IS NULL OR e.platform = %(platform)s)
      AND (%(collector)s::text IS NULL OR lower(e.collector_name) = lower(%(collector)s))
      AND (%(egress)s::text IS NULL OR e.egress_key = %(egress)s)
      AND (%(resource)s::text IS NULL OR e.resource = %(resource)s)
      AND (%(event_type)s::text IS NULL OR e.event_type = %(event_type)s
           OR (%(event_type)s = 'claimed' AND e.claimed_at IS NOT NULL)
           OR (%(event_type)s = 'started' AND e.started_at IS NOT NULL))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s)
      AND (%(until)s::timestamptz IS NULL OR COALESCE(e.claimed_at, e.occurred_at) < %(until)s)
      AND (%(name)s::text IS NULL OR e.soldier_id IN (
              SELECT soldier_id FROM soldiers WHERE lower(current_name) = %(name)s
              UNION SELECT soldier_id FROM soldier_names WHERE lower(name) = %(name)s))
    ORDER BY e.occurred_at DESC, e.event_id DESC
    LIMIT %(limit)s
)
SELECT e.event_id, x.occurred_at, x.event_type, e.collector_name, e.hostname, e.egress_key,
       e.lane, e.job_id, e.soldier_id, e.persona_id, e.platform, e.resource, e.priority_class,
       e.attempt_number,
       CASE WHEN x.ord = 2 THEN e.result END AS result,
       CASE WHEN x.ord = 2 THEN e.duration_ms END AS duration_ms, x.wait_ms,
       CASE WHEN x.ord = 2 THEN e.http_status END AS http_status,
       CASE WHEN x.ord = 2 THEN e.error_class END AS error_class,
       CASE WHEN x.ord = 2 THEN e.error_message END AS error_message,
       CASE WHEN x.ord = 2 THEN e.details END AS details,
       COALESCE(s.current_name, e.details->>'name') AS soldier_name
FROM stored e
CROSS JOIN LATERAL bf4ps_event_log_rows(e.claimed_at, e.started_at, e.occurred_at, e.event_type,
                                        e.wait_ms) x
LEFT JOIN soldiers s ON s.soldier_id = e.soldier_id
WHERE (%(event_type)s::text IS NULL OR x.event_type = %(event_type)s)
  AND (%(since)s::timestamptz IS NULL OR x.occurred_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR x.occurred_at < %(until)s)
ORDER BY x.occurred_at DESC, e.event_id DESC, x.ord DESC
LIMIT %(limit)s
