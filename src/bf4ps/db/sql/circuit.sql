-- The fleet circuit breaker (gates/circuit.py) and the request page's note for a look-up whose
-- search was unavailable. The circuit's rows are per lane + resource (db/schema.sql). The
-- windows over the event log are bounded by now(), an index condition (see web.sql
-- web_budget_by_class): a failure's judgement reads its window, not the whole log.

-- name: circuit_state
SELECT state, signature, opened_at, next_probe_at FROM circuit_breakers
WHERE lane = %(lane)s AND resource = %(resource)s

-- name: circuit_window
-- The window's finished attempts of a lane's resources (one, or for an outage of the whole lane
-- every one), plus the failure being judged (not yet logged): how many carry the signature,
-- from how many soldiers (look-ups, and a lane's outage: jobs) and egresses.
WITH recent AS (
    SELECT event_type, CASE WHEN %(by_job)s THEN job_id ELSE COALESCE(soldier_id, -job_id) END
               AS who, egress_key,
           COALESCE(details->>'signature', error_class) AS signature, occurred_at
    FROM collection_events
    WHERE resource = ANY(%(resources)s::text[]) AND lane = %(lane)s
      AND event_type IN ('succeeded', 'failed')
      AND occurred_at > now() - make_interval(secs => %(window_seconds)s)
    UNION ALL
    SELECT 'failed', %(who)s::bigint, %(egress_key)s::text, %(signature)s::text,
           NULL::timestamptz
), hits AS (
    SELECT * FROM recent WHERE event_type = 'failed' AND signature = %(signature)s
), since_first AS (
    -- the attempts finished since the signature's first failure of the window (and the one
    -- being judged): the share is of those
    SELECT r.* FROM recent r
    WHERE r.occurred_at IS NULL OR r.occurred_at >= (SELECT min(occurred_at) FROM hits)
)
SELECT (SELECT count(*) FROM since_first) AS finished,
       (SELECT count(*) FROM hits) AS failed,
       (SELECT count(DISTINCT who) FROM hits) AS soldiers,
       (SELECT count(DISTINCT egress_key) FROM hits) AS egresses

-- name: circuit_open
-- Opens a closed (or never seen) circuit; returns nothing when it was open already, so one
-- collector writes the circuit_opened event. The probe interval and the successes that close
-- it are the policy's as the database holds it (db/functions/circuit.sql).
SELECT * FROM bf4ps_circuit_open(%(lane)s, %(resource)s, %(signature)s, %(soldiers)s,
                                 %(egresses)s)

-- name: circuit_hold_pending
-- Holds back every pending job of the lane/resource (they wait for the probe's verdict).
SELECT bf4ps_circuit_hold_pending(%(lane)s, %(resource)s, %(hold_seconds)s)

-- name: circuit_hold_job
SELECT bf4ps_circuit_hold_job(%(job_id)s, %(lane)s, %(resource)s)

-- name: circuit_probes_due
-- Open circuits whose probe is due, moved to their next probe time (each due once).
SELECT * FROM bf4ps_circuit_probes_due()

-- name: circuit_release_one
-- The probe: the held job first in claim order becomes eligible now.
SELECT * FROM bf4ps_circuit_release_one(%(lane)s, %(resource)s)

-- name: circuit_lane_probe_later
-- A lane's outage got its probe: every circuit it opened waits a probe interval from now, so
-- the lane gets one probe per interval whichever circuit came due first.
SELECT bf4ps_circuit_lane_probe_later(%(lane)s, %(signature)s)

-- name: circuit_open_list
SELECT lane, resource FROM circuit_breakers WHERE state = 'open'

-- name: circuit_open_in_lane
-- The lane's open circuits and their signatures (a lane's outage closes them together).
SELECT lane, resource, signature FROM circuit_breakers WHERE state = 'open' AND lane = %(lane)s

-- name: circuit_probe_succeeded
SELECT * FROM bf4ps_circuit_probe_succeeded(%(lane)s, %(resource)s)

-- name: circuit_close
SELECT * FROM bf4ps_circuit_close(%(lane)s, %(resource)s)

-- name: circuit_release_all
-- Closing: every job the circuit held becomes eligible now, and the holds are forgotten.
SELECT * FROM bf4ps_circuit_release_all(%(lane)s, %(resource)s)

-- name: circuit_list
SELECT lane, resource, state, signature, opened_at, closed_at, next_probe_at, probe_seconds,
       probe_successes, close_successes, soldiers, egresses, times_opened,
       (SELECT count(*) FROM circuit_holds h
        WHERE h.lane = c.lane AND h.resource = c.resource) AS held
FROM circuit_breakers c
ORDER BY lane, resource

-- name: web_metrics_failures
-- Failed attempts by class since the last scrape (the events' cursor window).
SELECT COALESCE(resource, '') AS resource, COALESCE(lane, '') AS lane,
       COALESCE(error_class, '') AS error_class, count(*) AS n
FROM collection_events
WHERE event_id > %(after)s AND event_id <= %(upto)s AND event_type = 'failed'
GROUP BY 1, 2, 3

-- name: failures_by_class
-- Failed attempts of the window by class (status, console): unrecognized answers counted apart.
-- The window's bound is now() (stable: an index condition on the log's key, so the window's
-- events are read, not the whole log; see web.sql web_budget_by_class).
SELECT COALESCE(error_class, '') AS error_class, count(*) AS n
FROM collection_events
WHERE event_type = 'failed'
  AND occurred_at > now() - make_interval(secs => %(window_seconds)s)
GROUP BY 1 ORDER BY 2 DESC
