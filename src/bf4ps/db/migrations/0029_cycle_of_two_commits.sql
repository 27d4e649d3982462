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
