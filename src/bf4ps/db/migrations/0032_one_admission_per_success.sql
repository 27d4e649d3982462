-- Issue 32 (fleet scale on one primary), item 3: less server CPU per product cycle.
--
-- A success that claims the collector's next job behind a gate made the admission twice: a
-- look (admission_slot without a job: the egress's slot, the fleet budget's window, its demand
-- and allowed classes) before the claim, then the same again as the count of the job claimed,
-- under the gate's and the budget's locks. Each is a sum over the budget's window and a probe
-- per floor class; the second found what the first had found. Now the success's admission is
-- made once, under the count's locks, and claims in the middle of it: the gate row locked
-- (FOR UPDATE) and the fleet budget's counts serialized (its advisory lock) first, as a count
-- takes them; then the slot, the window, the demand and the classes the budget allows; the
-- claim of a job of those classes (queue_claim: SKIP LOCKED, so it never waits while holding
-- them); and that job's request counted in the slot (the ledger row, the gate's advance).
-- Nothing is claimed unless the slot opens within the horizon and the budget allows a class,
-- as before; a job claimed is always counted in the same commit (the look-then-count race,
-- in which another collector took the slot and the job came back uncounted, is gone).
-- Every guarantee stays: the count is fenced by the lease the claim just gave; the budget is
-- counted before anything is sent; the gate is checked again at send time (the start).
--
-- admission_slot takes the claim as `p_claim` ({lane, lease, soldier, start}; with no job) and
-- returns the job it claimed (`next_job`); its other callers are unchanged.
-- Its definition is edited, not written again (as migration 0031 does: each replaced text must
-- occur exactly once, else this migration fails), then made anew under its new signature.
DO $migration$
DECLARE
    old_fn constant regprocedure := 'admission_slot(text, uuid, bigint, uuid, boolean, double '
        'precision, double precision, double precision, jsonb, text, text)'::regprocedure;
    def text := pg_get_functiondef(old_fn);
    edits constant text[][] := ARRAY[
        -- the signature: the claim in, the job it claimed out
        [$old$p_resource text DEFAULT NULL::text)$old$,
         $new$p_resource text DEFAULT NULL::text, p_claim jsonb DEFAULT NULL::jsonb)$new$],
        [$old$classes text[])$old$, $new$classes text[], next_job queue_claimed)$new$],
        [$old$    counting boolean := p_job_id IS NOT NULL;$old$,
         $new$    counting boolean := p_job_id IS NOT NULL;
    claiming boolean := p_job_id IS NULL AND p_claim IS NOT NULL;
    took queue_claimed;  -- the job claiming claimed$new$],
        [$old$    ELSE
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress;$old$,
         $new$    ELSIF claiming THEN
        -- a claim made here is counted here: locked as a count is, before the claim
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSE
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress;$new$],
        [$old$IF budget IS NOT NULL AND counting THEN$old$,
         $new$IF budget IS NOT NULL AND (counting OR claiming) THEN$new$],
        -- every answer gets the new column
        [$old$NULL::timestamptz, NULL::bigint,
                                NULL::text[];$old$,
         $new$NULL::timestamptz, NULL::bigint,
                                NULL::text[], NULL::queue_claimed;$new$],
        [$old$p_ahead), NULL::bigint,
                                NULL::text[];$old$,
         $new$p_ahead), NULL::bigint,
                                NULL::text[], NULL::queue_claimed;$new$],
        [$old$p_ahead), NULL::bigint,
                            NULL::text[];$old$,
         $new$p_ahead), NULL::bigint,
                            NULL::text[], NULL::queue_claimed;$new$],
        [$old$NULL::bigint,
                                allowed;$old$,
         $new$NULL::bigint,
                                allowed, NULL::queue_claimed;$new$],
        [$old$    IF NOT counting THEN
        RETURN QUERY SELECT 'open', s, NULL::timestamptz, NULL::bigint, allowed;$old$,
         $new$    IF claiming THEN
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
                            NULL::queue_claimed;$new$],
        [$old$counted_id, allowed;$old$, $new$counted_id, allowed, took;$new$]];
    i integer;
BEGIN
    FOR i IN 1 .. array_length(edits, 1) LOOP
        IF array_length(string_to_array(def, edits[i][1]), 1) IS DISTINCT FROM 2 THEN
            RAISE EXCEPTION 'admission_slot: the text to replace does not occur exactly once: %',
                edits[i][1];
        END IF;
        def := replace(def, edits[i][1], edits[i][2]);
    END LOOP;
    EXECUTE format('DROP FUNCTION %s', old_fn);
    EXECUTE def;
END
$migration$;
REVOKE EXECUTE ON FUNCTION admission_slot(text, uuid, bigint, uuid, boolean, double precision,
    double precision, double precision, jsonb, text, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admission_slot(text, uuid, bigint, uuid, boolean, double precision,
    double precision, double precision, jsonb, text, text, jsonb) TO bf4ps_collector;

-- The success, then (with a gate) the claim and count in one admission; without a gate, the
-- success's own claim as before (queue_succeed).
CREATE OR REPLACE FUNCTION queue_succeed_counted(p_job bigint, p_collector uuid, p_token uuid,
                                                 p_freshness double precision, p_http integer,
                                                 p_duration integer, p_details jsonb,
                                                 p_next boolean, p_lane text,
                                                 p_lease double precision, p_soldier bigint,
                                                 p_start boolean, p_gate jsonb,
                                                 p_strict boolean)
RETURNS SETOF queue_counted
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    gated constant boolean := p_next AND p_gate IS NOT NULL;
    fin bigint;
    r queue_claimed;
    cnt record;
BEGIN
    FOR r IN SELECT * FROM queue_succeed(p_job, p_collector, p_token, p_freshness, p_http,
                                         p_duration, p_details, p_next AND NOT gated, p_lane,
                                         p_lease, p_soldier, p_start, NULL) LOOP
        IF r.finished IS NULL AND p_strict THEN
            RAISE EXCEPTION 'job %: the lease is no longer ours; nothing is written', p_job
                USING ERRCODE = 'BF401';
        END IF;
        IF NOT gated OR r.finished IS NULL THEN
            RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
            CONTINUE;
        END IF;
        SELECT * INTO cnt FROM admission_slot(
            p_gate ->> 'egress', p_collector, NULL, NULL,
            (p_gate ->> 'interactive')::boolean, (p_gate ->> 'margin')::double precision,
            (p_gate ->> 'ahead')::double precision,
            (p_gate ->> 'connect_lead')::double precision, p_gate -> 'policy', NULL, NULL,
            jsonb_build_object('lane', p_lane, 'lease', p_lease, 'soldier', p_soldier,
                               'start', p_start));
        IF cnt.outcome = 'counted' THEN
            fin := r.finished;
            r := cnt.next_job;
            r.finished := fin;
            RETURN NEXT ROW(r, cnt.slot, cnt.ledger_id)::queue_counted;
        ELSE
            -- nothing claimed: the gate or the budget is closed (try at wait_until), or no work
            r.gate_wait_until := CASE WHEN cnt.outcome = 'wait' THEN cnt.wait_until END;
            RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
        END IF;
    END LOOP;
END
$$;

-- The fleet budget's window in one pass: a count per class (the ledger's five) instead of a
-- GROUP BY, which sorted the window's rows on every admission. Same answer: the classes with
-- requests in the window and their counts, the total, the newest slot. (It still reads every
-- request of the window: a running count is the fix for a large window, not made here.)
CREATE OR REPLACE FUNCTION budget_window(slot timestamptz, span double precision,
                                         OUT used jsonb, OUT total integer,
                                         OUT last_slot timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
               'interactive', NULLIF(count(*) FILTER (WHERE budget_class = 'interactive'), 0),
               'active', NULLIF(count(*) FILTER (WHERE budget_class = 'active'), 0),
               'recent', NULLIF(count(*) FILTER (WHERE budget_class = 'recent'), 0),
               'bootstrap', NULLIF(count(*) FILTER (WHERE budget_class = 'bootstrap'), 0),
               'retry', NULLIF(count(*) FILTER (WHERE budget_class = 'retry'), 0))),
           count(*)::integer, max(slot_at)
    FROM counted_requests
    WHERE slot_at > slot - make_interval(secs => span)
$$;
