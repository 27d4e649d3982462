-- Figures for `bf4ps status`, the website and /metrics. None scans collection_state.

-- name: queue_depth
SELECT lane, priority_class, resource,
       count(*) FILTER (WHERE status = 'pending' AND eligible_at <= now()) AS ready,
       count(*) FILTER (WHERE status = 'pending' AND eligible_at > now()) AS waiting_retry,
       count(*) FILTER (WHERE status = 'claimed') AS claimed,
       count(*) FILTER (WHERE status = 'running') AS running,
       min(rank) FILTER (WHERE status = 'pending' AND eligible_at <= now()) AS oldest_rank
FROM collection_jobs
GROUP BY lane, priority_class, resource
ORDER BY lane, priority_class, resource

-- name: coverage
-- The counters plus the deltas the scheduler has not folded yet (coverage_totals, migration
-- 0014): exact at the reader's snapshot.
SELECT resource, status, sum(n)::bigint AS n
FROM coverage_totals
GROUP BY resource, status
HAVING sum(n) <> 0
ORDER BY resource, status

-- name: soldier_count
-- Every soldier has one detailed state row: the coverage counters know how many (no scan).
SELECT coalesce(sum(n), 0)::bigint AS n FROM coverage_totals WHERE resource = 'detailed'

-- name: throughput
SELECT resource, event_type, count(*) AS n,
       avg(duration_ms) FILTER (WHERE duration_ms IS NOT NULL) AS avg_duration_ms
FROM collection_events
WHERE occurred_at > now() - make_interval(secs => %(window_seconds)s)
  AND event_type IN ('succeeded', 'failed')
GROUP BY resource, event_type
ORDER BY resource, event_type
