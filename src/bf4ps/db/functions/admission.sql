-- Admission: whether, and when, one request may go out on an egress, and its count in the
-- ledger before anything is sent.
--
-- One function per mode, each for the collector role (gates/admission.py):
--   admission_look            the egress's next slot and the classes the budget allows now,
--                             no lock, no write (before a claim)
--   admission_count           a held job's request counted in its slot, fenced by its lease
--   admission_count_unattached a request of no queue job (recon, `bf4ps battlelog fetch`)
--   admission_succeed         the seam a success that continues behind a gate goes through:
--                             the queue's fenced success (queue_succeed, without its own
--                             claim), then the next job claimed inside one admission that
--                             counts its request in the same commit (admission_claim_next)
-- and the steps they are made of: the caller's registration (admission_caller), the bounds of
-- the caller's timings (admission_timings), the egress's slot (admission_gate_slot), the fleet
-- budget (admission_budget), the two in order (admission_open), the count itself
-- (admission_record), the count of one request of a class (admission_counted).
--
-- The steps are internal (granted to no role, reached only from the modes, whose search_path
-- is fixed). Trust: identity is the caller's registration, whose db_login must be session_user (or the
-- caller an operator): its egress and its lane come from there, never from an argument. The
-- budget, its shares and the egress's pacing are the database's (fleet_budget, the
-- scheduler_policy shares through budget_shares, egress_gates); the caller's own timings (its
-- safety margin, claim horizon and connect lead) are clamped to bounds in which they can only
-- make it slower, never lift a ceiling.
-- Calls the budget room (budget_window, budget_nth_newest, budget_allowed_classes,
-- budget_shares, bf4ps_budget_ready), the queue room
-- (queue_claim, queue_succeed: the queue never calls back) and the access room.
-- admission_slot and queue_succeed_counted are the forms builds of schema 0032 call: kept,
-- as thin wrappers over the above with the same trust, until no such build runs.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION admission_caller(p_collector uuid, OUT egress text,
                                            OUT interactive boolean)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    owner text;
BEGIN
    SELECT c.egress_key, c.lane = 'interactive', c.db_login INTO egress, interactive, owner
    FROM collectors c WHERE c.collector_uuid = p_collector;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no collector %', p_collector USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT bf4ps_caller_owns(owner) THEN
        RAISE EXCEPTION 'a collector is admitted for only its own registration (collector %, '
            'registered by login %, not %)', p_collector, owner, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION admission_caller(p_collector uuid) FROM PUBLIC;

-- A caller's timings within bounds where each can only slow it: a margin of 0-60 s added to
-- the egress's spacing and the budget's window, a claim horizon of 0-60 s, a connect lead of
-- 0-10 s (a negative lead or margin put slots before the gate's and out of the window).
CREATE OR REPLACE FUNCTION admission_timings(p_margin double precision,
                                             p_ahead double precision,
                                             p_connect_lead double precision,
                                             OUT margin double precision,
                                             OUT ahead double precision,
                                             OUT connect_lead double precision)
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT GREATEST(0, LEAST(60, COALESCE(p_margin, 0))),
           GREATEST(0, LEAST(60, COALESCE(p_ahead, 0))),
           GREATEST(0, LEAST(10, COALESCE(p_connect_lead, 0)))
$function$;

-- The egress's next slot: its pacing and cool-down, its own window, at least the connect lead
-- from now.
CREATE OR REPLACE FUNCTION admission_gate_slot(g egress_gates, p_now timestamptz,
                                               p_margin double precision,
                                               p_connect_lead double precision)
 RETURNS timestamptz
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    s timestamptz := bf4ps_paced_slot(g.next_slot_at, g.cooldown_until, p_now, p_connect_lead);
    nth timestamptz;
BEGIN
    IF g.window_requests IS NOT NULL THEN
        SELECT c.slot_at INTO nth FROM counted_requests c WHERE c.egress_key = g.egress_key
        ORDER BY c.slot_at DESC LIMIT 1 OFFSET g.window_requests - 1;
        s := GREATEST(s, nth + make_interval(secs => g.window_seconds + p_margin));
    END IF;
    RETURN s;
END
$function$;
REVOKE ALL ON FUNCTION admission_gate_slot(g egress_gates, p_now timestamp with time zone, p_margin double precision, p_connect_lead double precision) FROM PUBLIC;

-- The fleet budget at slot `p_slot`, when one is set: the slot moved past a full window, and
-- the classes it allows now (NULL: no budget, any class). `wait_until` is set when nothing may
-- be counted before it. `p_lock`: a count follows, so counts are serialized fleet-wide until
-- the commit (an advisory lock, which writes no WAL) and the budget is read under it.
CREATE OR REPLACE FUNCTION admission_budget(p_slot timestamptz, p_now timestamptz,
                                            p_interactive boolean, p_margin double precision,
                                            p_ahead double precision, p_lock boolean,
                                            OUT slot timestamptz, OUT wait_until timestamptz,
                                            OUT classes text[])
 LANGUAGE plpgsql
AS $function$
DECLARE
    budget integer;
    budget_window_s double precision;
    nth timestamptz;
    win record;
    demand text[] := '{}';
    serving boolean;
BEGIN
    slot := p_slot;
    IF p_lock THEN
        PERFORM FROM fleet_budget b WHERE b.budget_id = 1 AND b.requests IS NOT NULL;
        IF FOUND THEN
            PERFORM pg_advisory_xact_lock(hashtextextended('bf4ps.fleet_budget', 0));
        END IF;
    END IF;
    SELECT b.requests, b.window_seconds INTO budget, budget_window_s
    FROM fleet_budget b WHERE b.budget_id = 1;
    IF budget IS NULL THEN
        RETURN;
    END IF;
    PERFORM bf4ps_budget_ready();  -- the buckets made again after a crash emptied them
    SELECT * INTO win FROM budget_window(slot, budget_window_s + p_margin);
    IF win.total >= budget THEN
        nth := budget_nth_newest(budget);  -- the oldest of the newest `budget` counted
        slot := GREATEST(slot, win.last_slot + interval '1 microsecond',
                         nth + make_interval(secs => budget_window_s + p_margin));
        -- the window the later slot will be in
        SELECT * INTO win FROM budget_window(slot, budget_window_s + p_margin);
    END IF;
    IF slot > p_now + make_interval(secs => p_ahead) THEN
        wait_until := slot - make_interval(secs => p_ahead);
        RETURN;
    END IF;
    IF NOT p_interactive THEN
        -- the classes with runnable work in any lane: a background collector leaves a
        -- waiting interactive request's floor free, but only while an interactive collector
        -- is serving (else nothing could use the floor); the classes with a floor, and
        -- recent work, for which the active cap holds its share (budget_allowed_classes
        -- asks of no other): one probe of ix_jobs_demand each
        serving := EXISTS (SELECT 1 FROM collectors c
                           WHERE c.lane = 'interactive' AND c.enabled AND NOT c.drained
                             AND c.retired_at IS NULL AND c.health = 'healthy');
        SELECT COALESCE(array_agg(f.cls), '{}') INTO demand
        FROM unnest(ARRAY['interactive', 'recent', 'bootstrap', 'retry']) AS f(cls)
        WHERE EXISTS (SELECT 1 FROM collection_jobs j
                      WHERE j.lease_token IS NULL AND j.status = 'pending'
                        AND (CASE WHEN j.last_error_at IS NOT NULL THEN 'retry'
                                  ELSE j.priority_class END) = f.cls
                        AND j.eligible_at <= clock_timestamp()
                        AND (j.lane <> 'interactive' OR serving));
    END IF;
    classes := budget_allowed_classes(budget, win.used, demand, budget_shares(), p_interactive);
    IF cardinality(classes) = 0 THEN
        wait_until := p_now + interval '1 second';
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION admission_budget(p_slot timestamp with time zone, p_now timestamp with time zone, p_interactive boolean, p_margin double precision, p_ahead double precision, p_lock boolean) FROM PUBLIC;

-- The request counted in the ledger before anything is sent; the gate moves past the slot
-- (slower while a throttle streak decays: bf4ps_paced_interval). The gate row is locked.
CREATE OR REPLACE FUNCTION admission_record(g egress_gates, p_slot timestamptz,
                                            p_class text, p_collector uuid, p_job bigint,
                                            p_resource text, p_margin double precision)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
    counted_id bigint;
BEGIN
    INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, job_id,
                                resource)
    VALUES (p_slot, g.egress_key, p_class, p_collector, p_job, p_resource)
    RETURNING request_id INTO counted_id;
    UPDATE egress_gates
    SET next_slot_at = p_slot + make_interval(secs => bf4ps_paced_interval(
        g.min_interval_seconds, g.throttle_streak, p_margin)),
        requests_total = requests_total + 1, updated_at = now()
    WHERE egress_key = g.egress_key;
    RETURN counted_id;
END
$function$;
REVOKE ALL ON FUNCTION admission_record(g egress_gates, p_slot timestamp with time zone, p_class text, p_collector uuid, p_job bigint, p_resource text, p_margin double precision) FROM PUBLIC;

-- The gate row of an egress (locked when a count follows); an egress without one is an error.
CREATE OR REPLACE FUNCTION admission_gate(p_egress text, p_lock boolean)
 RETURNS egress_gates
 LANGUAGE plpgsql
AS $function$
DECLARE
    g egress_gates;
BEGIN
    IF p_lock THEN
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSE
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no rate gate for egress %', p_egress USING ERRCODE = 'no_data_found';
    END IF;
    RETURN g;
END
$function$;
REVOKE ALL ON FUNCTION admission_gate(p_egress text, p_lock boolean) FROM PUBLIC;

-- The slot of the gate and the budget, or why not yet: the steps every mode takes in order.
-- `p_lock`: a count follows (the gate row is locked by the caller; the budget here).
CREATE OR REPLACE FUNCTION admission_open(g egress_gates, p_interactive boolean,
                                          p_margin double precision, p_ahead double precision,
                                          p_connect_lead double precision, p_lock boolean)
 RETURNS admission_answer
 LANGUAGE plpgsql
AS $function$
DECLARE
    now_at timestamptz := clock_timestamp();
    s timestamptz := admission_gate_slot(g, now_at, p_margin, p_connect_lead);
    b record;
BEGIN
    IF s > now_at + make_interval(secs => p_ahead) THEN
        RETURN ROW('wait', s, s - make_interval(secs => p_ahead), NULL, NULL)::admission_answer;
    END IF;
    SELECT * INTO b FROM admission_budget(s, now_at, p_interactive, p_margin, p_ahead, p_lock);
    IF b.wait_until IS NOT NULL THEN
        RETURN ROW('wait', b.slot, b.wait_until, NULL, b.classes)::admission_answer;
    END IF;
    RETURN ROW('open', b.slot, NULL, NULL, b.classes)::admission_answer;
END
$function$;
REVOKE ALL ON FUNCTION admission_open(g egress_gates, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_lock boolean) FROM PUBLIC;

-- The slot of the gate and the budget counted for one request of class `p_class` ('counted',
-- with its ledger row), or why not ('wait': the gate, the budget, or the class not allowed
-- now). The gate row is locked by the caller; the budget here.
CREATE OR REPLACE FUNCTION admission_counted(g egress_gates, p_interactive boolean,
                                             p_margin double precision,
                                             p_ahead double precision,
                                             p_connect_lead double precision, p_class text,
                                             p_collector uuid, p_job bigint, p_resource text)
 RETURNS admission_answer
 LANGUAGE plpgsql
AS $function$
DECLARE
    a admission_answer := admission_open(g, p_interactive, p_margin, p_ahead, p_connect_lead,
                                         true);
BEGIN
    IF a.outcome = 'open' AND a.classes IS NOT NULL AND NOT p_class = ANY(a.classes) THEN
        RETURN ROW('wait', a.slot, clock_timestamp() + interval '1 second', NULL,
                   a.classes)::admission_answer;
    END IF;
    IF a.outcome = 'open' THEN
        a.ledger_id := admission_record(g, a.slot, p_class, p_collector, p_job, p_resource,
                                        p_margin);
        a.outcome := 'counted';
    END IF;
    RETURN a;
END
$function$;
REVOKE ALL ON FUNCTION admission_counted(g egress_gates, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_class text, p_collector uuid, p_job bigint, p_resource text) FROM PUBLIC;

-- A look before a claim: the egress's next slot and the classes the budget allows now ('open'),
-- or when to look again ('wait'). No lock, no write.
CREATE OR REPLACE FUNCTION admission_look(p_collector uuid, p_margin double precision,
                                          p_ahead double precision,
                                          p_connect_lead double precision)
 RETURNS SETOF admission_answer
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    me record;
    t record;
BEGIN
    SELECT * INTO me FROM admission_caller(p_collector);
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    RETURN NEXT admission_open(admission_gate(me.egress, false), me.interactive, t.margin,
                               t.ahead, t.connect_lead, false);
END
$function$;
REVOKE ALL ON FUNCTION admission_look(p_collector uuid, p_margin double precision, p_ahead double precision, p_connect_lead double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admission_look(p_collector uuid, p_margin double precision, p_ahead double precision, p_connect_lead double precision) TO bf4ps_collector;

-- A held job's request counted in its slot ('counted', with its ledger row), fenced by the
-- job's lease: 'lost' when the lease is no longer the caller's; 'wait' when the gate or the
-- budget (for the job's class) is closed until wait_until.
CREATE OR REPLACE FUNCTION admission_count(p_collector uuid, p_job bigint, p_lease_token uuid,
                                           p_margin double precision,
                                           p_ahead double precision,
                                           p_connect_lead double precision)
 RETURNS SETOF admission_answer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    me record;
    t record;
    job_class text;
    job_resource text;
    ours boolean;  -- the lease was written by this transaction (a success's claim)
BEGIN
    SELECT * INTO me FROM admission_caller(p_collector);
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    SELECT CASE WHEN j.last_error_at IS NOT NULL THEN 'retry' ELSE j.priority_class END,
           j.resource, j.xmin = pg_current_xact_id()::xid
    INTO job_class, job_resource, ours
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector
      AND j.lease_token = p_lease_token AND j.status IN ('claimed', 'running')
      AND j.lease_expires_at > clock_timestamp();
    IF FOUND AND NOT ours THEN
        -- a lease another transaction wrote: held (and seen still live) until the commit
        PERFORM FROM collection_jobs j
        WHERE j.job_id = p_job AND j.lease_token = p_lease_token
          AND j.lease_expires_at > clock_timestamp() FOR SHARE;
    END IF;
    IF NOT FOUND THEN
        RETURN NEXT ROW('lost', NULL, NULL, NULL, NULL)::admission_answer;
        RETURN;
    END IF;
    RETURN NEXT admission_counted(admission_gate(me.egress, true), me.interactive, t.margin,
                                  t.ahead, t.connect_lead, job_class, p_collector, p_job,
                                  job_resource);
END
$function$;
REVOKE ALL ON FUNCTION admission_count(p_collector uuid, p_job bigint, p_lease_token uuid, p_margin double precision, p_ahead double precision, p_connect_lead double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admission_count(p_collector uuid, p_job bigint, p_lease_token uuid, p_margin double precision, p_ahead double precision, p_connect_lead double precision) TO bf4ps_collector;

-- A request of no queue job, counted like any other in the class and resource it names: of a
-- collector's registration (recon: its lane's rules), or of no collector (an operator's
-- `bf4ps battlelog fetch`: interactive work), on an egress the caller runs a collector on
-- unless the caller is an operator.
CREATE OR REPLACE FUNCTION admission_count_unattached(p_egress text, p_collector uuid,
                                                      p_class text, p_resource text,
                                                      p_margin double precision,
                                                      p_ahead double precision,
                                                      p_connect_lead double precision)
 RETURNS SETOF admission_answer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t record;
    egress text := p_egress;
    interactive boolean := true;
BEGIN
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    IF p_collector IS NOT NULL THEN
        SELECT c.egress, c.interactive INTO egress, interactive
        FROM admission_caller(p_collector) c;
    ELSIF NOT bf4ps_caller_holds('bf4ps_operator') AND NOT EXISTS (
            SELECT 1 FROM collectors c WHERE c.egress_key = p_egress
              AND bf4ps_caller_owns(c.db_login) AND c.retired_at IS NULL) THEN
        RAISE EXCEPTION 'a request of no collector is counted only on an egress of the '
            'caller''s own collectors (login %, egress %)', session_user, p_egress
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEXT admission_counted(admission_gate(egress, true), interactive, t.margin, t.ahead,
                                  t.connect_lead, p_class, p_collector, NULL, p_resource);
END
$function$;
REVOKE ALL ON FUNCTION admission_count_unattached(p_egress text, p_collector uuid, p_class text, p_resource text, p_margin double precision, p_ahead double precision, p_connect_lead double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admission_count_unattached(p_egress text, p_collector uuid, p_class text, p_resource text, p_margin double precision, p_ahead double precision, p_connect_lead double precision) TO bf4ps_collector;

-- The collector's next job claimed inside one admission that counts its request (for the
-- registration its caller found: `p_egress`, `p_interactive`): the gate and
-- the budget locked first, as a count locks them; the claim (queue_claim: SKIP LOCKED, so it
-- never waits while holding them) of the classes the budget allows; its request counted in
-- the same commit. 'counted' with next_job; 'wait' (try at wait_until); 'open': no work.
CREATE OR REPLACE FUNCTION admission_claim_next(p_collector uuid, p_egress text,
                                                p_interactive boolean, p_lease double precision,
                                                p_soldier bigint, p_start boolean,
                                                p_margin double precision,
                                                p_ahead double precision,
                                                p_connect_lead double precision,
                                                OUT answer admission_answer,
                                                OUT next_job queue_claimed)
 LANGUAGE plpgsql
AS $function$
DECLARE
    t record;
    g egress_gates;
BEGIN
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    g := admission_gate(p_egress, true);
    answer := admission_open(g, p_interactive, t.margin, t.ahead, t.connect_lead, true);
    IF answer.outcome <> 'open' THEN
        RETURN;
    END IF;
    SELECT * INTO next_job FROM queue_claim(
        p_collector, CASE WHEN p_interactive THEN 'interactive' ELSE 'background' END,
        p_lease, p_soldier, answer.classes, p_start);
    IF next_job.job_id IS NOT NULL THEN
        answer.ledger_id := admission_record(
            g, answer.slot, CASE WHEN next_job.is_retry THEN 'retry'
                                 ELSE next_job.priority_class END,
            p_collector, next_job.job_id, next_job.resource, t.margin);
        answer.outcome := 'counted';
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION admission_claim_next(p_collector uuid, p_egress text, p_interactive boolean, p_lease double precision, p_soldier bigint, p_start boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision) FROM PUBLIC;

-- The seam of a success that continues behind a gate: the queue's fenced success (nothing
-- written when the lease is not the caller's; with `p_strict` it raises BF401 instead, so a
-- COMMIT sent with it rolls back), then the next job claimed and counted in one admission.
CREATE OR REPLACE FUNCTION admission_succeed(p_job bigint, p_collector uuid, p_token uuid,
                                             p_freshness double precision, p_http integer,
                                             p_duration integer, p_details jsonb,
                                             p_strict boolean, p_lease double precision,
                                             p_soldier bigint, p_start boolean,
                                             p_margin double precision,
                                             p_ahead double precision,
                                             p_connect_lead double precision)
 RETURNS SETOF queue_counted
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    me record;
    r queue_claimed;
    fin bigint;
    nxt record;
BEGIN
    SELECT * INTO me FROM admission_caller(p_collector);
    SELECT * INTO r FROM queue_succeed(p_job, p_collector, p_token, p_freshness, p_http,
                                       p_duration, p_details, p_strict, false);
    IF r.finished IS NULL THEN
        RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
        RETURN;
    END IF;
    fin := r.finished;
    SELECT * INTO nxt FROM admission_claim_next(p_collector, me.egress, me.interactive,
                                                p_lease, p_soldier, p_start, p_margin,
                                                p_ahead, p_connect_lead);
    IF (nxt.answer).outcome = 'counted' THEN
        r := nxt.next_job;
        r.finished := fin;
        RETURN NEXT ROW(r, (nxt.answer).slot, (nxt.answer).ledger_id)::queue_counted;
    ELSE
        -- nothing claimed: the gate or the budget is closed (try at wait_until), or no work
        r := NULL;
        r.finished := fin;
        r.gate_wait_until := CASE WHEN (nxt.answer).outcome = 'wait'
                                  THEN (nxt.answer).wait_until END;
        RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION admission_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_strict boolean, p_lease double precision, p_soldier bigint, p_start boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admission_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_strict boolean, p_lease double precision, p_soldier bigint, p_start boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision) TO bf4ps_collector;

-- The forms builds of schema 0032 call, over the functions above: the same trust (identity
-- from the registration, the database's budget shares; `p_interactive`, `p_policy` and
-- `p_egress` of a registered collector are not read), so an older collector running during an
-- upgrade keeps working. Dropped once no build of schema 0032 runs.
CREATE OR REPLACE FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text DEFAULT NULL::text, p_resource text DEFAULT NULL::text, p_claim jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(outcome text, slot timestamp with time zone, wait_until timestamp with time zone, ledger_id bigint, classes text[], next_job queue_claimed)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    a admission_answer;
    me record;
    n record;
BEGIN
    IF p_job_id = 0 THEN
        SELECT * INTO a FROM admission_count_unattached(p_egress, p_collector, p_class,
                                                        p_resource, p_margin, p_ahead,
                                                        p_connect_lead);
    ELSIF p_job_id IS NOT NULL THEN
        SELECT * INTO a FROM admission_count(p_collector, p_job_id, p_lease_token, p_margin,
                                             p_ahead, p_connect_lead);
    ELSIF p_claim IS NOT NULL THEN
        SELECT * INTO me FROM admission_caller(p_collector);
        SELECT * INTO n FROM admission_claim_next(
            p_collector, me.egress, me.interactive, (p_claim ->> 'lease')::double precision,
            (p_claim ->> 'soldier')::bigint, COALESCE((p_claim ->> 'start')::boolean, false),
            p_margin, p_ahead, p_connect_lead);
        a := n.answer;
        RETURN QUERY SELECT a.outcome, a.slot, a.wait_until, a.ledger_id, a.classes,
                            n.next_job;
        RETURN;
    ELSE
        SELECT * INTO a FROM admission_look(p_collector, p_margin, p_ahead, p_connect_lead);
    END IF;
    RETURN QUERY SELECT a.outcome, a.slot, a.wait_until, a.ledger_id, a.classes,
                        NULL::queue_claimed;
END
$function$;
REVOKE ALL ON FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text, p_resource text, p_claim jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text, p_resource text, p_claim jsonb) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION queue_succeed_counted(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_next boolean, p_lane text, p_lease double precision, p_soldier bigint, p_start boolean, p_gate jsonb, p_strict boolean)
 RETURNS SETOF queue_counted
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF p_next AND p_gate IS NOT NULL THEN
        RETURN QUERY SELECT * FROM admission_succeed(
            p_job, p_collector, p_token, p_freshness, p_http, p_duration, p_details, p_strict,
            p_lease, p_soldier, p_start, (p_gate ->> 'margin')::double precision,
            (p_gate ->> 'ahead')::double precision,
            (p_gate ->> 'connect_lead')::double precision);
    ELSE
        RETURN QUERY SELECT c::queue_claimed, NULL::timestamptz, NULL::bigint
                     FROM queue_succeed(p_job, p_collector, p_token, p_freshness, p_http,
                                        p_duration, p_details, p_strict, p_next, p_lane,
                                        p_lease, p_soldier, p_start) c;
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION queue_succeed_counted(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_next boolean, p_lane text, p_lease double precision, p_soldier bigint, p_start boolean, p_gate jsonb, p_strict boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queue_succeed_counted(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_next boolean, p_lane text, p_lease double precision, p_soldier bigint, p_start boolean, p_gate jsonb, p_strict boolean) TO bf4ps_collector;

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
