-- The durable collection state per soldier and resource (the backlog): a collector's failed
-- attempt is written here (`bf4ps_state_failed`: a retry, or parked), fenced by the lease of
-- the job it failed — the state of that job's own soldier and resource, never one the caller
-- names — so no collector parks or delays a soldier it holds no lease on. Its clocks are
-- bounded: no attempt dated after the database's clock, no retry set more than a week ahead.
-- Calls no other room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_state_failed(p_job bigint, p_token uuid, p_park boolean, p_now timestamp with time zone, p_next_attempt_at timestamp with time zone, p_error_class text, p_error_message text)
 RETURNS TABLE(consecutive_failures integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := LEAST(p_now, clock_timestamp());
BEGIN
    RETURN QUERY
    UPDATE collection_state cs
    SET status = CASE WHEN p_park THEN 'unavailable' ELSE 'retry_wait' END,
        last_attempt_at = t,
        next_attempt_at = CASE WHEN p_park THEN NULL
            ELSE LEAST(GREATEST(p_next_attempt_at, t), clock_timestamp() + interval '7 days')
            END,
        consecutive_failures = cs.consecutive_failures + 1,
        attempts_total = cs.attempts_total + 1,
        last_error_class = p_error_class, last_error_message = left(p_error_message, 500),
        last_error_at = t, updated_at = t
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lease_token = p_token
      AND cs.soldier_id = j.soldier_id AND cs.resource = j.resource
    RETURNING cs.consecutive_failures::integer;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_state_failed(p_job bigint, p_token uuid, p_park boolean, p_now timestamp with time zone, p_next_attempt_at timestamp with time zone, p_error_class text, p_error_message text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_state_failed(p_job bigint, p_token uuid, p_park boolean, p_now timestamp with time zone, p_next_attempt_at timestamp with time zone, p_error_class text, p_error_message text) TO bf4ps_collector;

-- A known soldier's missing collection-state rows (never attempted), for the website's request
-- and a collector's look-up: existing rows are never touched, and the eligible instant is the
-- caller's within the last day (an older one would put the soldier ahead of the backlog).
CREATE OR REPLACE FUNCTION bf4ps_state_init(p_soldier bigint, p_eligible_since timestamp with time zone)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    INSERT INTO collection_state (soldier_id, resource, eligible_since)
    SELECT p_soldier, r, LEAST(GREATEST(COALESCE(p_eligible_since, clock_timestamp()),
                                        clock_timestamp() - interval '1 day'), clock_timestamp())
    FROM unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r
    ON CONFLICT DO NOTHING
$function$;
REVOKE ALL ON FUNCTION bf4ps_state_init(p_soldier bigint, p_eligible_since timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_state_init(p_soldier bigint, p_eligible_since timestamp with time zone) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_state_init(p_soldier bigint, p_eligible_since timestamp with time zone) TO bf4ps_web;
