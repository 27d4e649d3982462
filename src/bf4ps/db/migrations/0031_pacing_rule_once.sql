-- Issue 31: the egress pacing rule written once, here. The admission (admission_slot) applied
-- it inline and the interactive estimate (capacity/eta.py) re-computed it in Python; both now
-- call these two functions, so the estimate is the server's own reading of the rule.
--
-- An egress's earliest slot: its next paced slot, after its cool-down, and never sooner than
-- the caller's connect lead from now (a request is begun that long before its slot).
-- (Its own N-per-window limit and the fleet budget are the admission's further steps.)
CREATE FUNCTION bf4ps_paced_slot(p_next_slot_at timestamptz, p_cooldown_until timestamptz,
                                 p_now timestamptz, p_connect_lead double precision)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT GREATEST(p_now + make_interval(secs => p_connect_lead), p_next_slot_at,
                    p_cooldown_until)
$$;

-- How far a counted slot moves the egress's gate: its interval, slower while a throttle streak
-- decays (each throttle adds half an interval until bf4ps_gate_recovered takes it back), plus
-- the caller's safety margin.
CREATE FUNCTION bf4ps_paced_interval(p_min_interval double precision, p_streak integer,
                                     p_margin double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_min_interval * (1 + 0.5 * p_streak) + p_margin
$$;

-- The admission calls them. Its definition is edited in place (each replaced text must occur
-- exactly once, else this migration fails), so that this migration changes nothing else of it,
-- whatever the migrations before it made of the rest; db/schema.sql shows the result whole.
DO $migration$
DECLARE
    fn constant regprocedure := 'admission_slot(text, uuid, bigint, uuid, boolean, double '
        'precision, double precision, double precision, jsonb, text, text)'::regprocedure;
    def text := pg_get_functiondef(fn);
    edits constant text[][] := ARRAY[
        [$old$GREATEST(now_at + make_interval(secs => p_connect_lead), g.next_slot_at,
                  g.cooldown_until)$old$,
         $new$bf4ps_paced_slot(g.next_slot_at, g.cooldown_until, now_at, p_connect_lead)$new$],
        [$old$make_interval(secs => g.min_interval_seconds
                                                 * (1 + 0.5 * g.throttle_streak) + p_margin)$old$,
         $new$make_interval(secs => bf4ps_paced_interval(
        g.min_interval_seconds, g.throttle_streak, p_margin))$new$],
        [$old$streak decays: gates/admission.py effective_interval)$old$,
         $new$streak decays: bf4ps_paced_interval)$new$]];
    i integer;
BEGIN
    FOR i IN 1 .. array_length(edits, 1) LOOP
        IF array_length(string_to_array(def, edits[i][1]), 1) IS DISTINCT FROM 2 THEN
            RAISE EXCEPTION 'admission_slot: the text to replace does not occur exactly once: %',
                edits[i][1];
        END IF;
        def := replace(def, edits[i][1], edits[i][2]);
    END LOOP;
    EXECUTE def;
END
$migration$;
