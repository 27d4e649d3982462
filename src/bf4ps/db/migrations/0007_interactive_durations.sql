-- The interactive lane's recent successes, newest first: every request-status poll measures
-- the lane's job durations from them (interactive.sql interactive_measured_durations). Without
-- this index the query walked every succeeded event of the window and dropped the background
-- ones (about 35,000 per 6 hours for an 8-egress fleet: ~10 ms a poll, growing with the fleet).
CREATE INDEX ix_events_interactive_done ON collection_events (occurred_at DESC)
    WHERE lane = 'interactive' AND event_type = 'succeeded';
