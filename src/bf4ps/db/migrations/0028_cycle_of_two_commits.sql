-- Issue 32 (fleet scale on one primary): a cheaper product cycle.
--
-- 1. Two commits per product cycle instead of three. A success that claims the collector's
--    next job (queue_succeed with a gate) now also counts that job's request in its slot, in
--    the same transaction: the count admission_slot made in a commit of its own right after
--    (admission.count_claimed). Every guarantee stays: the count is fenced by the lease the
--    claim just gave; the budget and the egress gate are locked and the ledger row written in
--    the commit that precedes the start and the send; the locks are taken in the order the
--    standalone count takes them (the job's row, then the gate, then the fleet budget), after
--    the success's own (its job, its state, the coverage delta). When the slot moved past the
--    horizon between the look and the count (another collector took it), the job is handed
--    back claimed and uncounted, as before, and the collector counts it on its own.
--    No lock another collector needs may wait on a client's round trip: a success that wrote
--    statistics sends its COMMIT in the same message as this call (finalize.py), and asks it
--    (p_strict) to raise BF401 when the lease was not ours, so that nothing, the statistics
--    included, can commit without the success.

-- queue_succeed's answer and, for the next job it claimed, the count's slot and ledger row
-- (NULL: not counted: no gate, no next job, or the slot moved past the horizon)
CREATE TYPE queue_counted AS (claimed queue_claimed, slot_at timestamptz, ledger_id bigint);

CREATE FUNCTION queue_succeed_counted(p_job bigint, p_collector uuid, p_token uuid,
                                      p_freshness double precision, p_http integer,
                                      p_duration integer, p_details jsonb, p_next boolean,
                                      p_lane text, p_lease double precision, p_soldier bigint,
                                      p_start boolean, p_gate jsonb, p_strict boolean)
RETURNS SETOF queue_counted
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r queue_claimed;
    cnt record;
BEGIN
    FOR r IN SELECT * FROM queue_succeed(p_job, p_collector, p_token, p_freshness, p_http,
                                         p_duration, p_details, p_next, p_lane, p_lease,
                                         p_soldier, p_start, p_gate) LOOP
        IF r.finished IS NULL AND p_strict THEN
            RAISE EXCEPTION 'job %: the lease is no longer ours; nothing is written', p_job
                USING ERRCODE = 'BF401';
        END IF;
        IF r.job_id IS NULL OR p_gate IS NULL THEN
            RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
            CONTINUE;
        END IF;
        SELECT * INTO cnt FROM admission_slot(
            p_gate ->> 'egress', p_collector, r.job_id, r.lease_token,
            (p_gate ->> 'interactive')::boolean, (p_gate ->> 'margin')::double precision,
            (p_gate ->> 'ahead')::double precision,
            (p_gate ->> 'connect_lead')::double precision, p_gate -> 'policy');
        IF cnt.outcome = 'counted' THEN
            RETURN NEXT ROW(r, cnt.slot, cnt.ledger_id)::queue_counted;
        ELSE
            RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
        END IF;
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION queue_succeed_counted(bigint, uuid, uuid, double precision, integer,
    integer, jsonb, boolean, text, double precision, bigint, boolean, jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queue_succeed_counted(bigint, uuid, uuid, double precision, integer,
    integer, jsonb, boolean, text, double precision, bigint, boolean, jsonb, boolean) TO bf4ps_collector;

-- 2. The admission's demand (which classes with a budget floor have runnable work) was an
--    aggregate over every pending job, twice per cycle (the look and the count): O(queue)
--    on every admission when a fleet budget is set (1M pending jobs at bootstrap). Only the
--    floor classes matter (interactive, bootstrap, retry: budget_allowed_classes asks of no
--    other), so it is now three probes of a partial index of the pending jobs by class. The
--    index holds only pending rows (lease_token IS NULL), so a claim, a start and a success
--    write nothing to it (the claim's new row version leaves the predicate; the start
--    changes none of its columns and stays heap-only).
CREATE INDEX ix_jobs_demand ON collection_jobs (
    (CASE WHEN last_error_at IS NOT NULL THEN 'retry' ELSE priority_class END), eligible_at)
    WHERE lease_token IS NULL;

-- The admission of 0008 with that demand.
CREATE OR REPLACE FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text DEFAULT NULL::text, p_resource text DEFAULT NULL::text)
RETURNS TABLE(outcome text, slot timestamp with time zone, wait_until timestamp with time zone, ledger_id bigint, classes text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    counting boolean := p_job_id IS NOT NULL;
    g egress_gates;
    budget integer;
    budget_window_s double precision;
    now_at timestamptz;
    s timestamptz;
    nth timestamptz;
    win record;
    demand text[] := '{}';
    allowed text[];
    job_class text;
    job_resource text;
    counted_id bigint;
    serving boolean;
BEGIN
    IF p_job_id = 0 THEN
        -- a request of no queue job (recon, `bf4ps battlelog fetch`): nothing to fence, but
        -- counted like any other, in the class and resource it names
        job_class := p_class;
        job_resource := p_resource;
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSIF counting THEN
        SELECT CASE WHEN j.last_error_at IS NOT NULL THEN 'retry' ELSE j.priority_class END,
               j.resource
        INTO job_class, job_resource
        FROM collection_jobs j
        WHERE j.job_id = p_job_id AND j.collector_uuid = p_collector
          AND j.lease_token = p_lease_token AND j.status IN ('claimed', 'running')
          AND j.lease_expires_at > clock_timestamp()
        FOR SHARE;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'lost', NULL::timestamptz, NULL::timestamptz, NULL::bigint,
                                NULL::text[];
            RETURN;
        END IF;
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSE
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no rate gate for egress %', p_egress USING ERRCODE = 'no_data_found';
    END IF;

    -- the egress: pacing, cool-down, its own window; at least the connect lead from now
    now_at := clock_timestamp();
    s := GREATEST(now_at + make_interval(secs => p_connect_lead), g.next_slot_at,
                  g.cooldown_until);
    IF g.window_requests IS NOT NULL THEN
        SELECT c.slot_at INTO nth FROM counted_requests c WHERE c.egress_key = p_egress
        ORDER BY c.slot_at DESC LIMIT 1 OFFSET g.window_requests - 1;
        s := GREATEST(s, nth + make_interval(secs => g.window_seconds + p_margin));
    END IF;
    IF s > now_at + make_interval(secs => p_ahead) THEN
        RETURN QUERY SELECT 'wait', s, s - make_interval(secs => p_ahead), NULL::bigint,
                            NULL::text[];
        RETURN;
    END IF;

    -- the fleet budget, only when one is set
    SELECT b.requests, b.window_seconds INTO budget, budget_window_s
    FROM fleet_budget b WHERE b.budget_id = 1;
    IF budget IS NOT NULL AND counting THEN
        SELECT b.requests, b.window_seconds INTO budget, budget_window_s
        FROM fleet_budget b WHERE b.budget_id = 1 FOR UPDATE;
    END IF;
    IF budget IS NOT NULL THEN
        SELECT * INTO win FROM budget_window(s, budget_window_s + p_margin);
        IF win.total >= budget THEN
            SELECT c.slot_at INTO nth FROM counted_requests c
            ORDER BY c.slot_at DESC LIMIT 1 OFFSET budget - 1;
            s := GREATEST(s, win.last_slot + interval '1 microsecond',
                          nth + make_interval(secs => budget_window_s + p_margin));
            -- the window the later slot will be in
            SELECT * INTO win FROM budget_window(s, budget_window_s + p_margin);
        END IF;
        IF s > now_at + make_interval(secs => p_ahead) THEN
            RETURN QUERY SELECT 'wait', s, s - make_interval(secs => p_ahead), NULL::bigint,
                                NULL::text[];
            RETURN;
        END IF;
        IF NOT p_interactive THEN
            -- the classes with runnable work in any lane: a background collector leaves a
            -- waiting interactive request's floor free, but only while an interactive
            -- collector is serving (else nothing could use the floor)
            -- (only the classes with a floor matter: budget_allowed_classes asks of no
            -- other; one probe of ix_jobs_demand each, not a pass over every pending job)
            serving := EXISTS (SELECT 1 FROM collectors c
                               WHERE c.lane = 'interactive' AND c.enabled AND NOT c.drained
                                 AND c.retired_at IS NULL AND c.health = 'healthy');
            SELECT COALESCE(array_agg(f.cls), '{}') INTO demand
            FROM unnest(ARRAY['interactive', 'bootstrap', 'retry']) AS f(cls)
            WHERE EXISTS (SELECT 1 FROM collection_jobs j
                          WHERE j.lease_token IS NULL AND j.status = 'pending'
                            AND (CASE WHEN j.last_error_at IS NOT NULL THEN 'retry'
                                      ELSE j.priority_class END) = f.cls
                            AND j.eligible_at <= clock_timestamp()
                            AND (j.lane <> 'interactive' OR serving));
        END IF;
        allowed := budget_allowed_classes(budget, win.used, demand, p_policy, p_interactive);
        IF cardinality(allowed) = 0 OR (counting AND NOT job_class = ANY(allowed)) THEN
            RETURN QUERY SELECT 'wait', s, now_at + interval '1 second', NULL::bigint,
                                allowed;
            RETURN;
        END IF;
    END IF;
    IF NOT counting THEN
        RETURN QUERY SELECT 'open', s, NULL::timestamptz, NULL::bigint, allowed;
        RETURN;
    END IF;

    -- counted before anything is sent; the gate moves past the slot (slower while a throttle
    -- streak decays: gates/admission.py effective_interval)
    INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, job_id,
                                resource)
    VALUES (s, p_egress, job_class, p_collector, NULLIF(p_job_id, 0), job_resource)
    RETURNING request_id INTO counted_id;
    UPDATE egress_gates
    SET next_slot_at = s + make_interval(secs => g.min_interval_seconds
                                                 * (1 + 0.5 * g.throttle_streak) + p_margin),
        requests_total = requests_total + 1, updated_at = now()
    WHERE egress_key = p_egress;
    RETURN QUERY SELECT 'counted', s, NULL::timestamptz, counted_id, allowed;
END
$$;
