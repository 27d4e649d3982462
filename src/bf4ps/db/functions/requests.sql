-- Player requests: triggers on `collection_jobs` that keep a website request's status in step
-- with the job that serves it (started, failed, gone), and the note it ends with; a look-up's
-- answer attached to its request under the look-up job's lease
-- (`bf4ps_lookup_request_resolved`: a collector writes no request directly); the website's
-- own request, made and planned in its submission's transaction (`bf4ps_request_insert`,
-- `bf4ps_request_planned`: the website writes no request directly either).
-- Calls no other room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_request_finished_note(r interactive_requests)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION bf4ps_request_job_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION bf4ps_request_job_gone()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE TRIGGER request_job_changed AFTER UPDATE OF started_at, last_error_at ON collection_jobs FOR EACH ROW WHEN (((new.request_id IS NOT NULL) AND (((new.started_at IS NOT NULL) AND (new.started_at IS DISTINCT FROM old.started_at)) OR (((new.resource)::text = 'lookup'::text) AND ((new.status)::text = 'pending'::text) AND ((new.last_error_class)::text = 'unrecognized'::text) AND (new.last_error_at IS DISTINCT FROM old.last_error_at))))) EXECUTE FUNCTION bf4ps_request_job_changed();

CREATE OR REPLACE TRIGGER request_job_gone AFTER DELETE ON collection_jobs FOR EACH ROW WHEN ((old.request_id IS NOT NULL)) EXECUTE FUNCTION bf4ps_request_job_gone();

CREATE OR REPLACE FUNCTION bf4ps_lookup_request_resolved(p_job bigint, p_token uuid, p_soldier bigint, p_resources text[])
 RETURNS TABLE(created_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- a look-up's answer attaches the soldier to the request of the look-up job whose lease
    -- the caller holds, and names the resources planned for it: never another player's
    -- request, never its status or message (the triggers keep those)
    RETURN QUERY
    UPDATE interactive_requests r
    SET soldier_id = p_soldier, resources = COALESCE(p_resources, r.resources),
        updated_at = clock_timestamp()
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lease_token = p_token AND j.request_id = r.request_id
    RETURNING r.created_at;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_lookup_request_resolved(p_job bigint, p_token uuid, p_soldier bigint, p_resources text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_lookup_request_resolved(p_job bigint, p_token uuid, p_soldier bigint, p_resources text[]) TO bf4ps_collector;

-- A player's request, as the website records it: queued, made now (its created_at the
-- transaction's), the resources only known ones. The website's alone.
CREATE OR REPLACE FUNCTION bf4ps_request_insert(p_request uuid, p_soldier bigint, p_lookup_name text, p_platform text, p_client_key text, p_resources text[])
 RETURNS TABLE(created_at timestamp with time zone, now timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    INSERT INTO interactive_requests (request_id, soldier_id, lookup_name, platform,
                                      client_key, resources, created_at)
    SELECT p_request, p_soldier, p_lookup_name, p_platform, p_client_key,
           ARRAY(SELECT x FROM unnest(COALESCE(p_resources, '{}')) AS x
                 WHERE x IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup')), now()
    RETURNING interactive_requests.created_at, clock_timestamp();
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_request_insert(p_request uuid, p_soldier bigint, p_lookup_name text, p_platform text, p_client_key text, p_resources text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_request_insert(p_request uuid, p_soldier bigint, p_lookup_name text, p_platform text, p_client_key text, p_resources text[]) TO bf4ps_web;

-- After its jobs were enqueued: the resources asked for, and the ETA made at submission (done
-- at once when nothing needed collecting). Only of a queued request made in the caller's own
-- transaction (the submission's): never another player's request, its status or its message.
CREATE OR REPLACE FUNCTION bf4ps_request_planned(p_request uuid, p_resources text[], p_eta_at timestamp with time zone, p_done boolean, p_message text)
 RETURNS TABLE(status text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE interactive_requests r
    SET resources = ARRAY(SELECT x FROM unnest(COALESCE(p_resources, '{}')) AS x
                          WHERE x IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup')),
        eta_at = COALESCE(p_eta_at, r.eta_at),
        status = CASE WHEN p_done THEN 'done' ELSE r.status END,
        finished_at = CASE WHEN p_done THEN clock_timestamp() ELSE r.finished_at END,
        message = COALESCE(p_message, r.message), updated_at = clock_timestamp()
    WHERE r.request_id = p_request AND r.created_at = now() AND r.status = 'queued'
    RETURNING r.status::text;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_request_planned(p_request uuid, p_resources text[], p_eta_at timestamp with time zone, p_done boolean, p_message text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_request_planned(p_request uuid, p_resources text[], p_eta_at timestamp with time zone, p_done boolean, p_message text) TO bf4ps_web;
