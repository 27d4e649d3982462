-- The database's own rights: who the caller is and what it may do.
-- `bf4ps_caller_holds` answers whether session_user holds a role (every function that acts for
-- a caller asks it, never an argument); `bf4ps_grant_role` is `bf4ps db grant`; the operator
-- console's login lock-out (`bf4ps_ops_login_attempt`, the web role's); `bf4ps_no_temporary`,
-- re-run on every upgrade, revokes TEMPORARY from the runtime roles; `bf4ps_policy_number`
-- reads a number of the policy (table scheduler_policy, else the default given: the defaults of
-- bf4ps.policy.Policy), so a function's bounds come from the database, never from its caller.
-- Calls no other room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_caller_holds(role_name text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT pg_has_role(session_user, role_name, 'MEMBER')
$function$;

CREATE OR REPLACE FUNCTION bf4ps_policy_number(p_key text, p_default double precision)
 RETURNS double precision
 LANGUAGE sql
 STABLE
AS $function$
    SELECT COALESCE((SELECT (p.value #>> '{}')::double precision FROM scheduler_policy p
                     WHERE p.key = p_key AND jsonb_typeof(p.value) = 'number'), p_default)
$function$;
REVOKE ALL ON FUNCTION bf4ps_policy_number(p_key text, p_default double precision) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_grant_role(role_name text, login_name text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF role_name NOT IN ('bf4ps_collector', 'bf4ps_scheduler', 'bf4ps_web', 'bf4ps_operator')
    THEN
        RAISE EXCEPTION 'not a BF4PS role: % (bf4ps_collector, bf4ps_scheduler, bf4ps_web, '
            'bf4ps_operator)', role_name USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = login_name) THEN
        RAISE EXCEPTION 'no role named % (CREATE ROLE % LOGIN PASSWORD ''…'' first)',
            login_name, login_name USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE format('GRANT %I TO %I', role_name, login_name);
END;
$function$;

CREATE OR REPLACE FUNCTION bf4ps_no_temporary()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM bf4ps_collector, bf4ps_scheduler, '
                   'bf4ps_web, bf4ps_operator', current_database());
END;
$function$;
REVOKE ALL ON FUNCTION bf4ps_no_temporary() FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_ops_login_attempt(p_keys text[], p_outcome text, p_free integer, p_base double precision, p_max double precision, p_forget double precision)
 RETURNS TABLE(key text, wait_seconds double precision, failures integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    free integer := greatest(p_free, 0);
BEGIN
    IF cardinality(p_keys) > 4 OR p_outcome NOT IN ('check', 'failed', 'succeeded') THEN
        RAISE EXCEPTION 'at most four keys and an outcome of check, failed, succeeded'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_outcome = 'succeeded' THEN
        DELETE FROM ops_login_failures f WHERE f.key = ANY(p_keys);
    ELSIF p_outcome = 'failed' THEN
        DELETE FROM ops_login_failures f
        WHERE f.last_failure_at < t - make_interval(secs => greatest(p_forget, 1))
          AND (f.locked_until IS NULL OR f.locked_until <= t);
        INSERT INTO ops_login_failures AS f (key, failures, last_failure_at, locked_until)
        SELECT k, 1, t, CASE WHEN free = 0
                             THEN t + make_interval(secs => least(p_max, p_base)) END
        FROM unnest(p_keys) AS k
        ON CONFLICT (key) DO UPDATE
        SET failures = f.failures + 1, last_failure_at = t, updated_at = t,
            locked_until = CASE WHEN f.failures + 1 > free THEN greatest(
                COALESCE(f.locked_until, '-infinity'), t + make_interval(secs => least(
                    greatest(p_max, 0),
                    greatest(p_base, 0) * power(2, least(f.failures - free, 40)))))
                ELSE f.locked_until END;
    END IF;
    RETURN QUERY
    SELECT k, greatest(0, COALESCE(extract(epoch FROM f.locked_until - t), 0))::double precision,
           COALESCE(f.failures, 0)
    FROM unnest(p_keys) AS k LEFT JOIN ops_login_failures f ON f.key = k
      AND (f.last_failure_at >= t - make_interval(secs => greatest(p_forget, 1))
           OR f.locked_until > t);
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_ops_login_attempt(p_keys text[], p_outcome text, p_free integer, p_base double precision, p_max double precision, p_forget double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ops_login_attempt(p_keys text[], p_outcome text, p_free integer, p_base double precision, p_max double precision, p_forget double precision) TO bf4ps_web;
