-- Collector clocks against the database's (collector/clock.py).

-- name: clock_now
SELECT extract(epoch FROM clock_timestamp())::float8 AS epoch

-- name: collector_clock
-- The latest measurement; clock_skewed_since is set on the first measurement beyond the bound
-- and cleared on the first within it (the previous value tells the caller it was a transition).
UPDATE collectors c
SET clock_offset_seconds = %(offset)s, clock_rtt_seconds = %(rtt)s,
    clock_checked_at = clock_timestamp(),
    clock_skewed_since = CASE WHEN %(skewed)s
                              THEN COALESCE(prev.clock_skewed_since, clock_timestamp()) END
FROM (SELECT collector_uuid, clock_skewed_since FROM collectors
      WHERE collector_uuid = %(collector_uuid)s FOR UPDATE) AS prev
WHERE c.collector_uuid = prev.collector_uuid
RETURNING prev.clock_skewed_since AS was_skewed_since
