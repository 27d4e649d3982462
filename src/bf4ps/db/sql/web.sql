-- The website's reads. Each is an index lookup or a bounded scan: nothing counts millions of
-- rows per page view (coverage comes from coverage_counters).

-- name: web_ping
SELECT 1 AS ok

-- name: web_soldier_by_persona
SELECT soldier_id, persona_id, platform, current_name, battlelog_user_id, first_seen_at,
       last_seen_at, created_at, clock_timestamp() AS now
FROM soldiers
WHERE persona_id = %(persona_id)s AND platform = %(platform)s

-- name: web_soldier_names
SELECT name, first_seen_at, last_seen_at FROM soldier_names
WHERE soldier_id = %(soldier_id)s
ORDER BY last_seen_at DESC
LIMIT 10

-- name: web_search_names
-- Known soldiers whose current or a former name starts with the query (a LIKE prefix with its
-- wildcards escaped by the caller); exact matches first.
SELECT s.soldier_id, s.persona_id, s.platform, s.current_name, s.last_seen_at,
       lower(s.current_name) = %(exact)s AS exact
FROM soldiers s
WHERE s.soldier_id IN (
        (SELECT soldier_id FROM soldiers WHERE lower(current_name) = %(exact)s LIMIT 20)
        UNION
        (SELECT soldier_id FROM soldiers
         WHERE lower(current_name) LIKE %(prefix)s ESCAPE '\'
         LIMIT 200)
        UNION
        (SELECT soldier_id FROM soldier_names
         WHERE lower(name) LIKE %(prefix)s ESCAPE '\'
         LIMIT 200))
  AND (%(platform)s::text IS NULL OR s.platform = %(platform)s)
ORDER BY exact DESC, lower(s.current_name), s.platform, s.persona_id
LIMIT %(limit)s

-- name: web_soldier_estimate
-- Soldiers with collection state, from the coverage counters (no scan of soldiers).
SELECT COALESCE(sum(n), 0)::bigint AS n FROM coverage_counters WHERE resource = 'detailed'

-- name: web_fleet_budget
SELECT b.requests, b.window_seconds, b.updated_at,
       (SELECT count(*) FROM request_ledger l
        WHERE l.slot_at > clock_timestamp() - make_interval(secs => b.window_seconds)) AS used
FROM fleet_budget b WHERE b.budget_id = 1

-- name: web_budget_by_class
SELECT budget_class, count(*) AS n FROM request_ledger
WHERE slot_at > clock_timestamp() - make_interval(secs => %(window_seconds)s)
GROUP BY budget_class ORDER BY budget_class

-- name: web_recent_throttles
-- Throttle answers and the egress cool-downs they caused, newest first.
SELECT * FROM (
    (SELECT event_id, occurred_at, event_type, collector_name, egress_key, resource,
            persona_id, platform, http_status, error_class, error_message, details
     FROM collection_events
     WHERE event_type = 'egress_throttled'
       AND occurred_at > clock_timestamp() - make_interval(secs => %(window_seconds)s)
     ORDER BY occurred_at DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT event_id, occurred_at, event_type, collector_name, egress_key, resource,
            persona_id, platform, http_status, error_class, error_message, details
     FROM collection_events
     WHERE (error_class = 'throttle' OR http_status IN (403, 429))
       AND event_type <> 'egress_throttled'
       AND occurred_at > clock_timestamp() - make_interval(secs => %(window_seconds)s)
     ORDER BY occurred_at DESC LIMIT %(limit)s)
) AS t
ORDER BY occurred_at DESC
LIMIT %(limit)s

-- name: web_events_search
-- The operator's event-log search: every filter optional, a time window always.
SELECT e.event_id, e.occurred_at, e.event_type, e.collector_name, e.hostname, e.egress_key,
       e.lane, e.job_id, e.soldier_id, e.persona_id, e.platform, e.resource,
       e.priority_class, e.attempt_number, e.result, e.duration_ms, e.wait_ms, e.http_status,
       e.error_class, e.error_message, e.details
FROM collection_events e
WHERE e.occurred_at >= %(since)s AND e.occurred_at < %(until)s
  AND (%(persona_id)s::bigint IS NULL OR e.persona_id = %(persona_id)s)
  AND (%(platform)s::text IS NULL OR e.platform = %(platform)s)
  AND (%(collector)s::text IS NULL OR lower(e.collector_name) = lower(%(collector)s))
  AND (%(resource)s::text IS NULL OR e.resource = %(resource)s)
  AND (%(event_type)s::text IS NULL OR e.event_type = %(event_type)s)
ORDER BY e.occurred_at DESC, e.event_id DESC
LIMIT %(limit)s

-- name: web_requests_open
SELECT status, count(*) AS n FROM interactive_requests
WHERE status IN ('queued', 'collecting')
GROUP BY status

-- name: web_metrics_last_event
SELECT COALESCE(max(event_id), 0) AS event_id FROM collection_events

-- name: web_metrics_events
-- New events since the last scrape, grouped for counters and histograms: bucket numbers come
-- from width_bucket over the caller's bounds (milliseconds).
SELECT event_type, COALESCE(resource, '') AS resource, COALESCE(lane, '') AS lane,
       width_bucket(duration_ms, %(bounds)s::integer[]) AS duration_bucket,
       width_bucket(wait_ms, %(bounds)s::integer[]) AS wait_bucket,
       count(*) AS n, COALESCE(sum(duration_ms), 0) AS duration_sum,
       COALESCE(sum(wait_ms), 0) AS wait_sum, max(event_id) AS last_id
FROM collection_events
WHERE event_id > %(after)s AND event_id <= %(upto)s
GROUP BY 1, 2, 3, 4, 5

-- name: web_metrics_throttles
SELECT COALESCE(egress_key, '') AS egress_key, count(*) AS n
FROM collection_events
WHERE event_id > %(after)s AND event_id <= %(upto)s AND event_type = 'egress_throttled'
GROUP BY 1
