-- Admission in one server-side call: no lock a fleet needs is held across a client round trip.
--
-- Before, admission was a client-driven transaction (lock the egress gate, lock the fleet budget
-- row, read the windows, claim, count, advance): a collector frozen or cut from the database in
-- the middle held both rows FOR UPDATE, and every other collector of the fleet queued behind
-- it. Now admission_slot() does the gate, the budget and the ledger row in one call; the row
-- locks it takes last only as long as that statement runs on the server, whatever the client
-- does meanwhile.
--
-- A collector calls it twice around the claim (gates/admission.py):
--   1. without a job (p_job_id NULL): a look, no lock and no write. 'wait' with the time the
--      gate opens (within the claim horizon), or 'open' with the budget classes a job may be
--      claimed for (NULL: no fleet budget, any class);
--   2. with the job it then claimed (or, for a further request, the job it holds): the slot is
--      found again under the locks, fenced by the job's lease (this collector, this token, an
--      unexpired lease: a resumed zombie spends nothing), and the request is counted in the
--      ledger and the gate advanced past it, all before anything is sent. 'counted' with the
--      slot and the ledger row; 'wait' when another collector took the slot meanwhile;
--      'lost' when the lease is no longer ours. Job id 0 is a request of no queue job
--      (recon, `bf4ps battlelog fetch`): counted the same way in the class and resource given
--      (p_class, p_resource), with no lease to fence.
-- The fleet row is locked only when a fleet budget is set.
--
-- Budget soundness (as before): a slot s is accepted on the fast path only when fewer than N
-- ledger slots lie in (s - W - margin, now + H], where H (the claim horizon, at least the
-- connect lead) bounds how far ahead any slot is ever counted; then every window containing s,
-- widened by the margin a late send may add, holds at most N slots. Otherwise s is placed after
-- every existing slot and after the N-th latest + W + margin.

-- Which budget classes may take the next request without breaking the active cap or another
-- class's reserved floor (floors count only for classes with runnable work, `demand`). The
-- interactive lane (a player's requests, their retries included) waits for no floor.
-- used: {class: requests in the window}; policy: {cap_active, floor_interactive,
-- floor_bootstrap, floor_retry}, fractions of n.
CREATE FUNCTION budget_allowed_classes(n integer, used jsonb, demand text[], policy jsonb,
                                       interactive_lane boolean) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    total double precision;
    cls text;
    others double precision;
    allowed text[] := '{}';
BEGIN
    SELECT COALESCE(sum(value::double precision), 0) INTO total FROM jsonb_each_text(used);
    IF total >= n THEN
        RETURN allowed;
    END IF;
    IF interactive_lane THEN
        RETURN ARRAY['interactive', 'active', 'recent', 'bootstrap', 'retry'];
    END IF;
    FOREACH cls IN ARRAY ARRAY['active', 'recent', 'bootstrap', 'retry'] LOOP
        CONTINUE WHEN cls = 'active' AND COALESCE((used ->> 'active')::double precision, 0)
                                         >= (policy ->> 'cap_active')::double precision * n;
        SELECT COALESCE(sum(GREATEST(0, (policy ->> ('floor_' || f))::double precision * n
                                        - COALESCE((used ->> f)::double precision, 0))), 0)
        INTO others
        FROM unnest(ARRAY['interactive', 'bootstrap', 'retry']) AS f
        WHERE f <> cls AND f = ANY(demand);
        IF n - total - 1 >= others - 1e-9 THEN
            allowed := allowed || cls;
        END IF;
    END LOOP;
    RETURN allowed;
END
$$;

-- The fleet window a slot falls in: requests per class and the latest slot, counting slots
-- that left the window less than the margin ago (a request may leave a little after its slot).
CREATE FUNCTION budget_window(slot timestamptz, span double precision,
                              OUT used jsonb, OUT total integer, OUT last_slot timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(jsonb_object_agg(budget_class, n), '{}'), COALESCE(sum(n), 0)::integer,
           max(last_at)
    FROM (SELECT budget_class, count(*) AS n, max(slot_at) AS last_at
          FROM counted_requests
          WHERE slot_at > slot - make_interval(secs => span)
          GROUP BY budget_class) w
$$;

CREATE FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint,
                               p_lease_token uuid, p_interactive boolean,
                               p_margin double precision, p_ahead double precision,
                               p_connect_lead double precision, p_policy jsonb,
                               p_class text DEFAULT NULL, p_resource text DEFAULT NULL)
RETURNS TABLE (outcome text, slot timestamptz, wait_until timestamptz, ledger_id bigint,
               classes text[])
LANGUAGE plpgsql AS $$
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
            SELECT COALESCE(array_agg(DISTINCT CASE WHEN j.last_error_at IS NOT NULL
                                                    THEN 'retry' ELSE j.priority_class END),
                            '{}')
            INTO demand
            FROM collection_jobs j
            WHERE j.status = 'pending' AND j.eligible_at <= clock_timestamp()
              AND (j.lane <> 'interactive' OR EXISTS (
                  SELECT 1 FROM collectors c
                  WHERE c.lane = 'interactive' AND c.enabled AND NOT c.drained
                    AND c.retired_at IS NULL AND c.health = 'healthy'));
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
