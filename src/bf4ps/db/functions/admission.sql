-- Admission: whether, and when, one request may go out on an egress.
-- `admission_slot` reads the egress's gate (pacing, cool-down, its own window) and the fleet
-- budget's window (budget room), and counts the request in the ledger under the gate's and the
-- budget's locks; in its claiming mode it claims the collector's next job (queue_claim) inside
-- the same admission, so a claimed job is always counted in the same commit.
-- `bf4ps_paced_interval` and `bf4ps_paced_slot` are the pacing rule's arithmetic.
-- Called by the collector role (gates/admission.py) and by the queue's success (queue room).
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text DEFAULT NULL::text, p_resource text DEFAULT NULL::text, p_claim jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(outcome text, slot timestamp with time zone, wait_until timestamp with time zone, ledger_id bigint, classes text[], next_job queue_claimed)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    counting boolean := p_job_id IS NOT NULL;
    claiming boolean := p_job_id IS NULL AND p_claim IS NOT NULL;
    took queue_claimed;  -- the job claiming claimed
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
    ours boolean;  -- the lease was written by this transaction (a success's claim)
BEGIN
    IF p_job_id = 0 THEN
        -- a request of no queue job (recon, `bf4ps battlelog fetch`): nothing to fence, but
        -- counted like any other, in the class and resource it names
        job_class := p_class;
        job_resource := p_resource;
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSIF counting THEN
        SELECT CASE WHEN j.last_error_at IS NOT NULL THEN 'retry' ELSE j.priority_class END,
               j.resource, j.xmin = pg_current_xact_id()::xid
        INTO job_class, job_resource, ours
        FROM collection_jobs j
        WHERE j.job_id = p_job_id AND j.collector_uuid = p_collector
          AND j.lease_token = p_lease_token AND j.status IN ('claimed', 'running')
          AND j.lease_expires_at > clock_timestamp();
        IF FOUND AND NOT ours THEN
            -- a lease another transaction wrote: held (and seen still live) until the commit
            PERFORM FROM collection_jobs j
            WHERE j.job_id = p_job_id AND j.lease_token = p_lease_token
              AND j.lease_expires_at > clock_timestamp() FOR SHARE;
        END IF;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'lost', NULL::timestamptz, NULL::timestamptz, NULL::bigint,
                                NULL::text[], NULL::queue_claimed;
            RETURN;
        END IF;
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSIF claiming THEN
        -- a claim made here is counted here: locked as a count is, before the claim
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSE
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no rate gate for egress %', p_egress USING ERRCODE = 'no_data_found';
    END IF;

    -- the egress: pacing, cool-down, its own window; at least the connect lead from now
    now_at := clock_timestamp();
    s := bf4ps_paced_slot(g.next_slot_at, g.cooldown_until, now_at, p_connect_lead);
    IF g.window_requests IS NOT NULL THEN
        SELECT c.slot_at INTO nth FROM counted_requests c WHERE c.egress_key = p_egress
        ORDER BY c.slot_at DESC LIMIT 1 OFFSET g.window_requests - 1;
        s := GREATEST(s, nth + make_interval(secs => g.window_seconds + p_margin));
    END IF;
    IF s > now_at + make_interval(secs => p_ahead) THEN
        RETURN QUERY SELECT 'wait', s, s - make_interval(secs => p_ahead), NULL::bigint,
                            NULL::text[], NULL::queue_claimed;
        RETURN;
    END IF;

    -- the fleet budget, only when one is set
    SELECT b.requests, b.window_seconds INTO budget, budget_window_s
    FROM fleet_budget b WHERE b.budget_id = 1;
    IF budget IS NOT NULL AND (counting OR claiming) THEN
        -- counts are serialized fleet-wide until the commit (a lock that writes no WAL)
        PERFORM pg_advisory_xact_lock(hashtextextended('bf4ps.fleet_budget', 0));
        SELECT b.requests, b.window_seconds INTO budget, budget_window_s
        FROM fleet_budget b WHERE b.budget_id = 1;
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
                                NULL::text[], NULL::queue_claimed;
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
                                allowed, NULL::queue_claimed;
            RETURN;
        END IF;
    END IF;
    IF claiming THEN
        -- the claim, of the classes the budget allows now (any without a budget); it never
        -- waits on a lock (SKIP LOCKED), so holding the gate and the budget meanwhile is safe
        SELECT * INTO took FROM queue_claim(
            p_collector, p_claim ->> 'lane', (p_claim ->> 'lease')::double precision,
            (p_claim ->> 'soldier')::bigint, allowed,
            COALESCE((p_claim ->> 'start')::boolean, false));
        IF took.job_id IS NOT NULL THEN
            counting := true;
            p_job_id := took.job_id;
            job_class := CASE WHEN took.is_retry THEN 'retry' ELSE took.priority_class END;
            job_resource := took.resource;
        END IF;
    END IF;
    IF NOT counting THEN
        RETURN QUERY SELECT 'open', s, NULL::timestamptz, NULL::bigint, allowed,
                            NULL::queue_claimed;
        RETURN;
    END IF;

    -- counted before anything is sent; the gate moves past the slot (slower while a throttle
    -- streak decays: bf4ps_paced_interval)
    INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, job_id,
                                resource)
    VALUES (s, p_egress, job_class, p_collector, NULLIF(p_job_id, 0), job_resource)
    RETURNING request_id INTO counted_id;
    UPDATE egress_gates
    SET next_slot_at = s + make_interval(secs => bf4ps_paced_interval(
        g.min_interval_seconds, g.throttle_streak, p_margin)),
        requests_total = requests_total + 1, updated_at = now()
    WHERE egress_key = p_egress;
    RETURN QUERY SELECT 'counted', s, NULL::timestamptz, counted_id, allowed, took;
END
$function$;
REVOKE ALL ON FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text, p_resource text, p_claim jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text, p_resource text, p_claim jsonb) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_paced_interval(p_min_interval double precision, p_streak integer, p_margin double precision)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT p_min_interval * (1 + 0.5 * p_streak) + p_margin
$function$;

CREATE OR REPLACE FUNCTION bf4ps_paced_slot(p_next_slot_at timestamp with time zone, p_cooldown_until timestamp with time zone, p_now timestamp with time zone, p_connect_lead double precision)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT GREATEST(p_now + make_interval(secs => p_connect_lead), p_next_slot_at,
                    p_cooldown_until)
$function$;
