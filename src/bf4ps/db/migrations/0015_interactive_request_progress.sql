-- compatible-from: 0014
-- A player's request follows its jobs by triggers the interactive part owns: the queue engine's
-- statements no longer name interactive_requests (before, start, reslot and success each
-- carried a CTE for it, planned on every transition of every background job too). The
-- triggers fire only for jobs of a request (WHEN request_id IS NOT NULL), in the transaction
-- of the transition itself.

-- The job's request went out (its start) or moved to a later slot (a reslot): the request is
-- collecting, and its first request is the earliest of its jobs' starts (a reslot moves it
-- only when this job's start had set it). A look-up waiting to retry because Battlelog's
-- search answered in a way BF4PS does not recognize: its request says why it waits.
CREATE FUNCTION bf4ps_request_job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    started boolean := NEW.started_at IS NOT NULL
                       AND NEW.started_at IS DISTINCT FROM OLD.started_at;
BEGIN
    UPDATE interactive_requests r
    SET status = CASE WHEN started THEN 'collecting' ELSE r.status END,
        first_request_at = CASE WHEN started AND (r.first_request_at IS NULL
                                                  OR r.first_request_at = OLD.started_at)
                                THEN NEW.started_at ELSE r.first_request_at END,
        message = CASE WHEN started THEN r.message
                       ELSE 'search unavailable, retried later' END,
        updated_at = clock_timestamp()
    WHERE r.request_id = NEW.request_id AND r.status IN ('queued', 'collecting');
    RETURN NULL;
END;
$$;
CREATE TRIGGER request_job_changed AFTER UPDATE OF started_at, last_error_at ON collection_jobs
    FOR EACH ROW
    WHEN (NEW.request_id IS NOT NULL
          AND ((NEW.started_at IS NOT NULL AND NEW.started_at IS DISTINCT FROM OLD.started_at)
               OR (NEW.resource = 'lookup' AND NEW.status = 'pending'
                   AND NEW.last_error_class = 'unrecognized'
                   AND NEW.last_error_at IS DISTINCT FROM OLD.last_error_at)))
    EXECUTE FUNCTION bf4ps_request_job_changed();

-- One of the request's jobs left the queue (success, or parked): when none remains the request
-- is done — or, for a look-up that found no soldier (the request has none attached), not
-- found, with the job's last error as its message.
CREATE FUNCTION bf4ps_request_job_gone() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    remaining boolean := EXISTS (SELECT 1 FROM collection_jobs o
                                 WHERE o.request_id = OLD.request_id);
BEGIN
    UPDATE interactive_requests r
    SET status = CASE WHEN remaining THEN 'collecting'
                      WHEN OLD.resource = 'lookup' AND r.soldier_id IS NULL THEN 'not_found'
                      ELSE 'done' END,
        finished_at = CASE WHEN remaining THEN NULL ELSE clock_timestamp() END,
        message = CASE WHEN NOT remaining AND OLD.resource = 'lookup' AND r.soldier_id IS NULL
                       THEN COALESCE(OLD.last_error_message, r.message) ELSE r.message END,
        updated_at = clock_timestamp()
    WHERE r.request_id = OLD.request_id AND r.status IN ('queued', 'collecting');
    RETURN NULL;
END;
$$;
CREATE TRIGGER request_job_gone AFTER DELETE ON collection_jobs
    FOR EACH ROW WHEN (OLD.request_id IS NOT NULL)
    EXECUTE FUNCTION bf4ps_request_job_gone();
