-- Parked (unavailable) resources of soldiers seen playing, oldest attempt first: the
-- scheduler's recheck sweep (policy unavailable_recheck_seconds, feeder.sql parked_recheck)
-- reads only these rows, never the whole state table.
CREATE INDEX ix_state_parked ON collection_state (last_attempt_at)
    WHERE status = 'unavailable' AND activity_class = 'active';
