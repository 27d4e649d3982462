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

CREATE OR REPLACE FUNCTION bf4ps_circuit_open(p_lane text, p_resource text, p_signature text, p_soldiers integer, p_egresses integer)
 RETURNS TABLE(opened_at timestamp with time zone, next_probe_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    -- the probe interval and the successes that close it are the policy's, never the caller's
    probe constant double precision := GREATEST(
        bf4ps_policy_number('circuit_probe_seconds', 60), 0.001);
    closing constant integer := GREATEST(
        bf4ps_policy_number('circuit_close_successes', 2), 1)::integer;
BEGIN
    -- opens a closed (or never seen) circuit; nothing when it was open already, so one
    -- collector writes the circuit_opened event
    RETURN QUERY
    INSERT INTO circuit_breakers AS cb (lane, resource, state, signature, opened_at,
                                       next_probe_at, probe_seconds, close_successes,
                                       soldiers, egresses)
    VALUES (p_lane, p_resource, 'open', left(p_signature, 200), clock_timestamp(),
            clock_timestamp() + make_interval(secs => probe), probe, closing,
            GREATEST(p_soldiers, 0), GREATEST(p_egresses, 0))
    ON CONFLICT (lane, resource) DO UPDATE
    SET state = 'open', signature = excluded.signature, opened_at = excluded.opened_at,
        closed_at = NULL, next_probe_at = excluded.next_probe_at,
        probe_seconds = excluded.probe_seconds, probe_successes = 0,
        close_successes = excluded.close_successes, soldiers = excluded.soldiers,
        egresses = excluded.egresses, times_opened = cb.times_opened + 1,
        updated_at = clock_timestamp()
    WHERE cb.state = 'closed'
    RETURNING cb.opened_at, cb.next_probe_at;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_open(p_lane text, p_resource text, p_signature text, p_soldiers integer, p_egresses integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_open(p_lane text, p_resource text, p_signature text, p_soldiers integer, p_egresses integer) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_circuit_probes_due()
 RETURNS TABLE(lane text, resource text, signature text, probe_seconds double precision)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- open circuits whose probe is due, moved to their next probe time (each due once)
    RETURN QUERY
    UPDATE circuit_breakers cb
    SET next_probe_at = clock_timestamp() + make_interval(secs => cb.probe_seconds),
        updated_at = clock_timestamp()
    WHERE cb.state = 'open' AND cb.next_probe_at <= clock_timestamp()
    RETURNING cb.lane::text, cb.resource::text, cb.signature::text,
              cb.probe_seconds::double precision;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_probes_due() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_probes_due() TO bf4ps_collector;

-- A lane's outage got its probe: every circuit of the lane it opened (its signature) waits a
-- probe interval from now, so the lane gets one probe per interval whichever circuit came due
-- first. Only in the transaction that took that probe (a circuit of the lane and signature
-- moved to its next probe in it): a caller cannot put a lane's probes off by asking.
CREATE OR REPLACE FUNCTION bf4ps_circuit_lane_probe_later(p_lane text, p_signature text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    UPDATE circuit_breakers cb
    SET next_probe_at = clock_timestamp() + make_interval(secs => cb.probe_seconds),
        updated_at = clock_timestamp()
    WHERE cb.lane = p_lane AND cb.state = 'open' AND cb.signature = p_signature
      AND EXISTS (SELECT 1 FROM circuit_breakers d
                  WHERE d.lane = p_lane AND d.state = 'open' AND d.signature = p_signature
                    AND d.updated_at >= now());
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_lane_probe_later(p_lane text, p_signature text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_lane_probe_later(p_lane text, p_signature text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_circuit_probe_succeeded(p_lane text, p_resource text)
 RETURNS TABLE(probe_successes integer, close_successes integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- a success counts only as one of the lane and resource's successes since the circuit
    -- opened (its `succeeded` events): a caller cannot close a circuit by saying so
    RETURN QUERY
    UPDATE circuit_breakers cb
    SET probe_successes = cb.probe_successes + 1, updated_at = clock_timestamp()
    WHERE cb.lane = p_lane AND cb.resource = p_resource AND cb.state = 'open'
      AND cb.probe_successes < (
          SELECT count(*) FROM collection_events e
          WHERE e.event_type = 'succeeded' AND e.lane = p_lane AND e.resource = p_resource
            AND e.occurred_at >= cb.opened_at AND e.occurred_at <= clock_timestamp())
    RETURNING cb.probe_successes::integer, cb.close_successes::integer;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_probe_succeeded(p_lane text, p_resource text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_probe_succeeded(p_lane text, p_resource text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_circuit_close(p_lane text, p_resource text)
 RETURNS TABLE(opened_at timestamp with time zone, closed_at timestamp with time zone, probe_successes integer, signature text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- only once its probes' successes reached the number that closes it, or (a lane's
    -- outage, closed together) when a circuit of its lane with its signature closed so in
    -- this very transaction
    RETURN QUERY
    UPDATE circuit_breakers cb
    SET state = 'closed', closed_at = clock_timestamp(), next_probe_at = NULL,
        updated_at = clock_timestamp()
    WHERE cb.lane = p_lane AND cb.resource = p_resource AND cb.state = 'open'
      AND (cb.probe_successes >= cb.close_successes
           OR EXISTS (SELECT 1 FROM circuit_breakers o
                      WHERE o.lane = p_lane AND o.resource <> p_resource
                        AND o.signature = cb.signature AND o.state = 'closed'
                        AND o.closed_at >= now()
                        AND o.probe_successes >= o.close_successes))
    RETURNING cb.opened_at, cb.closed_at, cb.probe_successes::integer, cb.signature::text;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_circuit_close(p_lane text, p_resource text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_close(p_lane text, p_resource text) TO bf4ps_collector;
