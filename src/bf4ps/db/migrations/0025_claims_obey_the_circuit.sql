-- A claim looks at the fleet circuit itself (gates/circuit.py). Collectors learned the open
-- circuits only at their heartbeat, and the claim did not look: work that reached the queue
-- after the circuit held its lane/resource (a retry scheduled just before it opened, a feeder
-- pass that began before it, an expired lease) was claimed and sent while it was open. Now,
-- while a lane/resource's circuit is open, only its held jobs are claimed (the released probe,
-- or a hold that ran out); the probe is the first pending job in claim order, held or not.

-- Whether the circuit lets a job be claimed: its lane/resource is not open, or the job is one
-- the circuit holds (held jobs wait on eligible_at, so only a released probe gets through).
CREATE FUNCTION bf4ps_circuit_lets(p_job bigint, p_lane text, p_resource text)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT EXISTS (SELECT 1 FROM circuit_breakers cb
                       WHERE cb.lane = p_lane AND cb.resource = p_resource AND cb.state = 'open')
        OR EXISTS (SELECT 1 FROM circuit_holds h WHERE h.job_id = p_job)
$$;

-- The claim of 0014, with the circuit's word (bf4ps_circuit_lets) on both the expired lease it
-- reclaims and the pending job it picks.
CREATE OR REPLACE FUNCTION queue_claim(p_collector uuid, p_lane text, p_lease double precision,
                            p_soldier bigint DEFAULT NULL, p_classes text[] DEFAULT NULL,
                            p_start boolean DEFAULT false)
RETURNS SETOF queue_claimed
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    old collection_jobs;
BEGIN
    SELECT * INTO old FROM collection_jobs j
    WHERE j.lane = p_lane AND j.lease_token IS NOT NULL
      AND j.lease_expires_at <= clock_timestamp()
      AND bf4ps_claim_wanted(j.soldier_id, j.priority_class, j.last_error_at IS NOT NULL,
                             p_soldier, p_classes)
      AND bf4ps_circuit_lets(j.job_id, j.lane, j.resource)
    ORDER BY j.rank, j.job_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED;

    RETURN QUERY
    WITH claimed AS (
        UPDATE collection_jobs j
        SET status = CASE WHEN p_start THEN 'running' ELSE 'claimed' END,
            collector_uuid = p_collector, lease_token = gen_random_uuid(),
            claimed_at = clock_timestamp(),
            started_at = CASE WHEN p_start THEN clock_timestamp() END,
            lease_expires_at = clock_timestamp() + make_interval(secs => p_lease),
            attempt_count = j.attempt_count + 1, updated_at = clock_timestamp()
        WHERE j.job_id = COALESCE(old.job_id, (
                SELECT f.job_id FROM collection_jobs f
                WHERE f.lane = p_lane AND f.lease_token IS NULL
                  AND f.eligible_at <= clock_timestamp()
                  AND bf4ps_claim_wanted(f.soldier_id, f.priority_class,
                                         f.last_error_at IS NOT NULL, p_soldier, p_classes)
                  AND bf4ps_circuit_lets(f.job_id, f.lane, f.resource)
                ORDER BY f.rank, f.job_id
                LIMIT 1
                FOR UPDATE SKIP LOCKED))
          AND EXISTS (SELECT 1 FROM collectors me
                      WHERE me.collector_uuid = p_collector AND me.enabled AND NOT me.drained
                        AND me.retired_at IS NULL)
        RETURNING j.*
    )
    SELECT NULL::bigint, NULL::timestamptz, c.job_id, c.soldier_id, c.resource::text,
           c.lane::text, c.priority_class::text, c.rank, c.reason::text,
           c.attempt_count::integer, c.last_error_at IS NOT NULL, c.lease_token, c.claimed_at,
           c.started_at, c.lease_expires_at, c.request_id, c.lookup_name::text,
           c.lookup_platform::text, old.job_id IS NOT NULL, s.persona_id, s.platform::text,
           s.current_name::text
    FROM claimed c LEFT JOIN soldiers s ON s.soldier_id = c.soldier_id;

    IF FOUND AND old.job_id IS NOT NULL THEN
        INSERT INTO collection_events (
            occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key,
            lane, job_id, lease_token, soldier_id, persona_id, platform, resource,
            priority_class, attempt_number, claimed_at, started_at)
        SELECT j.claimed_at, kind.event_type,
               CASE WHEN kind.ord = 1 THEN old.collector_uuid ELSE p_collector END,
               who.collector_name, who.hostname, who.egress_key, j.lane, j.job_id,
               CASE WHEN kind.ord = 1 THEN old.lease_token ELSE j.lease_token END,
               j.soldier_id, s.persona_id, COALESCE(s.platform, j.lookup_platform), j.resource,
               j.priority_class, j.attempt_count,
               CASE WHEN kind.ord = 1 THEN old.claimed_at END,
               CASE WHEN kind.ord = 1 THEN old.started_at END
        FROM collection_jobs j
        CROSS JOIN (VALUES ('lease_expired', 1), ('reclaimed', 2)) AS kind(event_type, ord)
        LEFT JOIN collectors who ON who.collector_uuid = CASE WHEN kind.ord = 1
                                                         THEN old.collector_uuid
                                                         ELSE p_collector END
        LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
        WHERE j.job_id = old.job_id
        ORDER BY kind.ord;
    END IF;
END
$$;


-- The probe: the first pending job of the lane/resource in claim order, held or not (work that
-- came after the hold is held now, so the claim lets it through), becomes eligible now.
CREATE OR REPLACE FUNCTION bf4ps_circuit_release_one(p_lane text, p_resource text)
RETURNS TABLE (job_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    picked bigint;
BEGIN
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
$$;
