-- A look-up's request ends saying what ended it (collector/search.py, interactive/lookup.py):
-- * not_found only when the look-up's last failure was a believed "no such soldier"
--   (an empty search answer the canary check confirmed); a look-up that gave up otherwise (the
--   search kept being unavailable) is failed, with the reason, never not_found;
-- * a request whose look-up resolved no longer says "search unavailable" while it collects;
-- * a done request says how much of it was collected (before: it kept the note of an earlier
--   wait, "search unavailable, retried later").
-- And the canary's index: the soldier Battlelog's search found most recently.

CREATE INDEX ix_soldier_sources_battlelog ON soldier_sources (last_seen_at DESC)
    WHERE source_type = 'battlelog';

CREATE OR REPLACE FUNCTION bf4ps_request_finished_note(r interactive_requests) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN count(*) = 0 THEN 'every resource is fresh'  -- views NOTHING_DUE
           ELSE format('finished: %s of %s collected', count(*) FILTER (WHERE collected),
                       count(*))
                || COALESCE('; not collected: '
                            || string_agg(resource, ', ' ORDER BY ord)
                               FILTER (WHERE NOT collected), '') END
    FROM (SELECT wanted.resource, wanted.ord,
                 COALESCE(cs.last_success_at >= r.created_at, false) AS collected
          FROM unnest(r.resources) WITH ORDINALITY AS wanted(resource, ord)
          LEFT JOIN collection_state cs
                 ON cs.soldier_id = r.soldier_id AND cs.resource = wanted.resource) rs
$$;

CREATE OR REPLACE FUNCTION bf4ps_request_job_gone() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    remaining boolean := EXISTS (SELECT 1 FROM collection_jobs o
                                 WHERE o.request_id = OLD.request_id);
    req interactive_requests;
    unresolved boolean;
BEGIN
    SELECT * INTO req FROM interactive_requests r
    WHERE r.request_id = OLD.request_id AND r.status IN ('queued', 'collecting');
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    unresolved := OLD.resource = 'lookup' AND req.soldier_id IS NULL;
    UPDATE interactive_requests r
    SET status = CASE WHEN remaining THEN 'collecting'
                      WHEN unresolved AND OLD.last_error_class = 'not_found' THEN 'not_found'
                      WHEN unresolved THEN 'failed'
                      ELSE 'done' END,
        finished_at = CASE WHEN remaining THEN NULL ELSE clock_timestamp() END,
        message = CASE
            WHEN remaining AND OLD.resource = 'lookup' THEN NULL  -- resolved: collecting now
            WHEN remaining THEN r.message
            WHEN unresolved AND OLD.last_error_class = 'not_found'
                THEN COALESCE(OLD.last_error_message, 'no such soldier')
            WHEN unresolved
                THEN format('gave up after %s attempt%s: %s', OLD.attempt_count,
                            CASE WHEN OLD.attempt_count = 1 THEN '' ELSE 's' END,
                            COALESCE(OLD.last_error_message, OLD.last_error_class, 'no answer'))
            ELSE bf4ps_request_finished_note(req) END,
        updated_at = clock_timestamp()
    WHERE r.request_id = OLD.request_id;
    RETURN NULL;
END;
$$;
