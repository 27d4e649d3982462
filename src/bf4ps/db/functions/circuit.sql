-- The circuit breaker per lane and resource: while Battlelog fails for everyone, work of that
-- lane and resource is held rather than burnt. `bf4ps_circuit_lets` is what the claim consults;
-- the hold and release functions are the collector's, driven by collector/outage.py.
-- A hold lasts at most the policy's circuit_hold_seconds, whatever the caller asks.
-- Calls the access room (`bf4ps_policy_number`); the queue's claim reads `bf4ps_circuit_lets`.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_circuit_hold_job(p_job bigint, p_lane text, p_resource text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    -- a hold of a job as the queue has it (its own lane and resource), never of a name
    INSERT INTO circuit_holds (job_id, lane, resource)
    SELECT j.job_id, j.lane, j.resource FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lane = p_lane AND j.resource = p_resource
    ON CONFLICT (job_id) DO NOTHING;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_hold_job(p_job bigint, p_lane text, p_resource text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_hold_job(p_job bigint, p_lane text, p_resource text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_circuit_hold_pending(p_lane text, p_resource text, p_hold_seconds double precision)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    -- the caller's hold, at most the policy's (circuit_hold_seconds), never negative
    hold constant double precision := LEAST(GREATEST(p_hold_seconds, 0),
        bf4ps_policy_number('circuit_hold_seconds', 3600));
BEGIN
    -- work is held only behind an open circuit of its lane and resource
    IF NOT EXISTS (SELECT 1 FROM circuit_breakers cb WHERE cb.lane = p_lane
                   AND cb.resource = p_resource AND cb.state = 'open') THEN
        RETURN;
    END IF;
    WITH held AS (
        UPDATE collection_jobs j
        SET eligible_at = GREATEST(j.eligible_at,
                                   clock_timestamp() + make_interval(secs => hold)),
            updated_at = clock_timestamp()
        WHERE j.lane = p_lane AND j.resource = p_resource AND j.status = 'pending'
        RETURNING j.job_id
    )
    INSERT INTO circuit_holds (job_id, lane, resource)
    SELECT held.job_id, p_lane, p_resource FROM held
    ON CONFLICT (job_id) DO NOTHING;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_hold_pending(p_lane text, p_resource text, p_hold_seconds double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_hold_pending(p_lane text, p_resource text, p_hold_seconds double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_circuit_lets(p_job bigint, p_lane text, p_resource text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT NOT EXISTS (SELECT 1 FROM circuit_breakers cb
                       WHERE cb.lane = p_lane AND cb.resource = p_resource AND cb.state = 'open')
        OR EXISTS (SELECT 1 FROM circuit_holds h WHERE h.job_id = p_job)
$function$;

CREATE OR REPLACE FUNCTION bf4ps_circuit_release_all(p_lane text, p_resource text)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- the holds go when the circuit has closed, not while it is open
    IF EXISTS (SELECT 1 FROM circuit_breakers cb WHERE cb.lane = p_lane
               AND cb.resource = p_resource AND cb.state = 'open') THEN
        RETURN QUERY SELECT 0::bigint;
        RETURN;
    END IF;
    RETURN QUERY
    WITH gone AS (
        DELETE FROM circuit_holds h WHERE h.lane = p_lane AND h.resource = p_resource
        RETURNING h.job_id
    ), released AS (
        UPDATE collection_jobs j
        SET eligible_at = clock_timestamp(), updated_at = clock_timestamp()
        FROM gone WHERE j.job_id = gone.job_id AND j.status = 'pending'
        RETURNING j.job_id
    )
    SELECT count(*) FROM released;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_release_all(p_lane text, p_resource text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_release_all(p_lane text, p_resource text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_circuit_release_one(p_lane text, p_resource text)
 RETURNS TABLE(job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    picked bigint;
BEGIN
    -- a probe is released only through an open circuit
    IF NOT EXISTS (SELECT 1 FROM circuit_breakers cb WHERE cb.lane = p_lane
                   AND cb.resource = p_resource AND cb.state = 'open') THEN
        RETURN;
    END IF;
    SELECT c.job_id INTO picked FROM collection_jobs c
    WHERE c.lane = p_lane AND c.resource = p_resource AND c.status = 'pending'
    ORDER BY c.rank, c.job_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF picked IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO circuit_holds (job_id, lane, resource) VALUES (picked, p_lane, p_resource)
    ON CONFLICT ON CONSTRAINT circuit_holds_pkey DO NOTHING;
    RETURN QUERY
    UPDATE collection_jobs j
    SET eligible_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE j.job_id = picked
    RETURNING j.job_id;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_release_one(p_lane text, p_resource text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_release_one(p_lane text, p_resource text) TO bf4ps_collector;
