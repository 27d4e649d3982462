-- Collector clocks against the database's (collector/clock.py).

-- name: clock_now
SELECT extract(epoch FROM clock_timestamp())::float8 AS epoch

-- name: collector_clock
-- The latest measurement; clock_skewed_since is set on the first measurement beyond the bound
-- and cleared on the first within it (the previous value tells the caller it was a transition).
SELECT * FROM bf4ps_collector_clock(%(collector_uuid)s, %(offset)s, %(rtt)s, %(skewed)s)
