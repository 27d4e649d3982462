-- Egress rate gates: one row per egress (pacing interval, optional window, cool-down).
-- A collector seeds its gate on first start and reports throttles, cool-downs and recoveries,
-- each for the egress of its own registration only (`bf4ps_egress_own`) and each clamped to the
-- policy's bounds (`bf4ps_policy_number`): no caller's number seeds a faster gate than
-- gate_seed_min_interval_seconds or cools an egress longer than gate_cooldown_max_seconds.
-- The operator sets pacing (`bf4ps gate set`, audited through the settings room's triggers) and
-- recon's measured interval. Calls the registry room (`bf4ps_egress_own`) and the access room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_gate_cool(p_egress text, p_seconds double precision)
 RETURNS TABLE(cooldown_until timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'cool');
    RETURN QUERY
    UPDATE egress_gates g
    SET cooldown_until = GREATEST(COALESCE(g.cooldown_until, '-infinity'), clock_timestamp()
            + make_interval(secs => LEAST(GREATEST(p_seconds, 0),
                bf4ps_policy_number('gate_cooldown_max_seconds', 1800)))),
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
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'report the recovery of');
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
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    floor_s constant double precision :=
        bf4ps_policy_number('gate_seed_min_interval_seconds', 0.05);
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'seed the gate of');
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    -- the seed's pacing is the caller's, never faster than the policy's floor: neither the
    -- interval nor a window's average spacing
    RETURN QUERY
    INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds)
    VALUES (p_egress, GREATEST(p_min_interval, floor_s), p_window_requests,
            CASE WHEN p_window_requests IS NULL THEN p_window_seconds
                 ELSE GREATEST(p_window_seconds, p_window_requests * floor_s) END)
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
 SET search_path TO 'public', 'pg_temp'
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
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    top constant double precision := bf4ps_policy_number('gate_cooldown_max_seconds', 1800);
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'report a throttle of');
    -- the caller's base and cap, within [1 s, the policy's longest cool-down]
    RETURN QUERY
    UPDATE egress_gates g
    SET throttle_streak = g.throttle_streak + 1, last_throttle_at = clock_timestamp(),
        cooldown_until = GREATEST(COALESCE(g.cooldown_until, '-infinity'), clock_timestamp()
            + make_interval(secs => LEAST(LEAST(GREATEST(p_max, 1), top),
                GREATEST(LEAST(p_base, top), 1) * power(2, LEAST(g.throttle_streak, 30))))),
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
 SET search_path TO 'public', 'pg_temp'
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
