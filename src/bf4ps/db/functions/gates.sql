-- Egress rate gates: one row per egress (pacing interval, optional window, cool-down).
-- A collector seeds its gate on first start and reports throttles, cool-downs and recoveries;
-- the operator sets pacing (`bf4ps gate set`, audited through the settings room's triggers) and
-- recon's measured interval. Calls no other room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_gate_cool(p_egress text, p_seconds double precision)
 RETURNS TABLE(cooldown_until timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE egress_gates g
    SET cooldown_until = GREATEST(COALESCE(g.cooldown_until, '-infinity'), clock_timestamp()
            + make_interval(secs => LEAST(GREATEST(p_seconds, 0), 3600))),
        last_outage_at = clock_timestamp(), updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.cooldown_until;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_gate_cool(p_egress text, p_seconds double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gate_cool(p_egress text, p_seconds double precision) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_gate_cool(p_egress text, p_seconds double precision) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_gate_recovered(p_egress text)
 RETURNS TABLE(throttle_streak integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE egress_gates g
    SET throttle_streak = g.throttle_streak - 1, updated_at = now()
    WHERE g.egress_key = p_egress AND g.throttle_streak > 0
      AND (g.cooldown_until IS NULL OR g.cooldown_until <= clock_timestamp())
    RETURNING g.throttle_streak::integer;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_gate_recovered(p_egress text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gate_recovered(p_egress text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_gate_seed(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_reason text)
 RETURNS SETOF egress_gates
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    RETURN QUERY
    INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds)
    VALUES (p_egress, p_min_interval, p_window_requests, p_window_seconds)
    ON CONFLICT (egress_key) DO NOTHING
    RETURNING *;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_gate_seed(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gate_seed(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_reason text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_gate_set(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_cooldown_seconds double precision, p_end_cooldown boolean, p_create boolean, p_reason text)
 RETURNS SETOF egress_gates
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
BEGIN
    PERFORM set_config('bf4ps.change_reason', COALESCE(left(p_reason, 200), ''), true);
    IF p_create THEN
        RETURN QUERY
        INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests,
                                  window_seconds)
        VALUES (p_egress, p_min_interval, p_window_requests, p_window_seconds)
        RETURNING *;
        RETURN;
    END IF;
    -- a longer interval also holds the next slot back to the egress's last counted request
    -- plus the new interval (a slot reserved under the old one would come too soon after it)
    RETURN QUERY
    UPDATE egress_gates g
    SET min_interval_seconds = p_min_interval, window_requests = p_window_requests,
        window_seconds = p_window_seconds,
        cooldown_until = CASE WHEN p_end_cooldown THEN NULL
                              WHEN p_cooldown_seconds IS NOT NULL
                              THEN clock_timestamp() + make_interval(secs => p_cooldown_seconds)
                              ELSE g.cooldown_until END,
        throttle_streak = CASE WHEN p_end_cooldown THEN 0 ELSE g.throttle_streak END,
        updated_at = now(),
        next_slot_at = GREATEST(g.next_slot_at, COALESCE(
            (SELECT max(l.slot_at) FROM counted_requests l WHERE l.egress_key = g.egress_key)
            + make_interval(secs => p_min_interval), g.next_slot_at))
    WHERE g.egress_key = p_egress
    RETURNING g.*;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_gate_set(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_cooldown_seconds double precision, p_end_cooldown boolean, p_create boolean, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gate_set(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_cooldown_seconds double precision, p_end_cooldown boolean, p_create boolean, p_reason text) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_gate_throttled(p_egress text, p_base double precision, p_max double precision)
 RETURNS TABLE(throttle_streak integer, cooldown_until timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE egress_gates g
    SET throttle_streak = g.throttle_streak + 1, last_throttle_at = clock_timestamp(),
        cooldown_until = GREATEST(COALESCE(g.cooldown_until, '-infinity'), clock_timestamp()
            + make_interval(secs => LEAST(p_max, p_base * power(2, g.throttle_streak)))),
        updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.throttle_streak::integer, g.cooldown_until;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_gate_throttled(p_egress text, p_base double precision, p_max double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gate_throttled(p_egress text, p_base double precision, p_max double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_recon_gate_interval(p_egress text, p_min_interval double precision)
 RETURNS TABLE(min_interval_seconds double precision)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO '$user', 'public'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM set_config('bf4ps.change_reason', 'bf4ps recon: a ladder stage', true);
    RETURN QUERY
    UPDATE egress_gates g SET min_interval_seconds = p_min_interval, updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.min_interval_seconds;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_recon_gate_interval(p_egress text, p_min_interval double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_recon_gate_interval(p_egress text, p_min_interval double precision) TO bf4ps_operator;
