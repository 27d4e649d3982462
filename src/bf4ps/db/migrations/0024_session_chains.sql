-- A session that ends because its soldier moved to another server gets its final refresh when
-- the soldier is off every server (the last session of the chain closes), not at the switch.
-- The switch is seen at the first sighting on the new server: the soldier is already playing
-- there, so a refresh then cannot close the old session cleanly, and the page never shows the
-- old session again (its last session is the new one, which started before that snapshot).
-- Taken at the switch it cost a request that bracketed nothing shown, and under a minimum age
-- (weekly by default) it used up the allowance so that the new session, the one the page shows,
-- was never closed by a snapshot. Now one refresh after the chain closes it: the last session's
-- report counts the chain's earlier sessions (views/last_session.py: earlier_sessions).
--
-- The sessions waiting for their final refresh (and the open ones) are read through a partial
-- index: the close ran a scan of every session ever kept at each reconciliation.

CREATE INDEX ix_play_sessions_unrefreshed ON play_sessions (soldier_id)
    WHERE final_refresh_at IS NULL;

CREATE OR REPLACE FUNCTION bf4ps_close_sessions(source_now timestamptz, gap_seconds float8,
                                                resources text[], min_age_seconds float8)
RETURNS integer LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    n integer;
BEGIN
    UPDATE play_sessions SET ended_at = clock_timestamp()
    WHERE ended_at IS NULL
      AND last_seen_at < source_now - make_interval(secs => gap_seconds);
    WITH closing AS (
        UPDATE play_sessions p SET final_refresh_at = clock_timestamp()
        WHERE p.ended_at IS NOT NULL AND p.final_refresh_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM play_sessions o
                          WHERE o.soldier_id = p.soldier_id AND o.ended_at IS NULL
                            AND o.final_refresh_at IS NULL)
        RETURNING p.soldier_id, p.last_seen_at
    ), marked AS (
        UPDATE collection_state cs
        SET status = 'due', due_reason = 'final_refresh',
            eligible_since = LEAST(c.last_seen_at, clock_timestamp()),
            updated_at = clock_timestamp()
        FROM closing c
        WHERE cs.soldier_id = c.soldier_id AND cs.resource = ANY(resources)
          AND cs.status IN ('current', 'due') AND cs.last_success_at < c.last_seen_at
          AND cs.last_success_at <= clock_timestamp() - make_interval(secs => min_age_seconds)
        RETURNING cs.soldier_id
    )
    SELECT count(*) INTO n FROM closing;
    RETURN n;
END;
$$;

-- The operators' flag list (console, API, `bf4ps flags list`) reads the newest flags in order:
-- flags are kept for ever (gameplay history), so a sort of them all grew with every one cleared.
CREATE INDEX ix_progress_flags_recent ON progress_flags (flagged_at DESC, flag_id DESC);
