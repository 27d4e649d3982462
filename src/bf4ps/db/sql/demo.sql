-- The demo's progress and summary (demo/figures.py).

-- name: demo_snapshot
SELECT (SELECT count(*) FROM soldiers) AS soldiers,
       (SELECT count(*) FROM counted_requests
        WHERE slot_at > now() - make_interval(secs => %(window_seconds)s)) AS counted,
       (SELECT count(*) FROM collectors WHERE health = 'healthy') AS healthy,
       (SELECT count(*) FROM collection_jobs
        WHERE status = 'pending' AND eligible_at <= now()) AS ready

-- name: demo_outcomes
-- What went wrong and how the fleet coped since the demo began: failed attempts by error
-- class, retries scheduled, resources given up on, throttles (Battlelog's answers and the
-- egress cool-downs they caused) and every egress cool-down by its signal.
SELECT
    (SELECT COALESCE(jsonb_object_agg(error_class, n), '{}'::jsonb)
     FROM (SELECT error_class, count(*) AS n FROM collection_events
           WHERE occurred_at >= %(since)s AND error_class IS NOT NULL
             AND event_type = 'failed'
           GROUP BY error_class) AS f) AS failures,
    (SELECT count(*) FROM collection_events
     WHERE occurred_at >= %(since)s AND event_type = 'retry_scheduled') AS retries,
    (SELECT count(*) FROM collection_events
     WHERE occurred_at >= %(since)s AND event_type = 'unavailable') AS unavailable,
    (SELECT count(*) FROM collection_events
     WHERE occurred_at >= %(since)s AND event_type = 'egress_throttled') AS throttles,
    (SELECT count(*) FROM collection_events
     WHERE occurred_at >= %(since)s AND event_type <> 'egress_throttled'
       AND (error_class = 'throttle' OR http_status IN (403, 429))) AS throttled_answers,
    -- every egress cool-down (a throttle's, an outage's, an expired session's) by what it was
    -- for (details.signal)
    (SELECT COALESCE(jsonb_object_agg(signal, n), '{}'::jsonb)
     FROM (SELECT COALESCE(details->>'signal', event_type) AS signal, count(*) AS n
           FROM collection_events
           WHERE occurred_at >= %(since)s
             AND event_type IN ('egress_throttled', 'egress_cooled', 'session_expired')
           GROUP BY 1) AS c) AS cooldowns
