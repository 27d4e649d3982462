-- The database's own rights: who the caller is and what it may do.
-- `bf4ps_caller_holds` answers whether session_user holds a role (every function that acts for
-- a caller asks it, never an argument); `bf4ps_caller_owns` whether the caller may act for a
-- collector's registration (its login, or an operator); `bf4ps_grant_role` is `bf4ps db grant`; the operator
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

-- The one ownership rule: the caller may act for a registration whose recorded login
-- (`collectors.db_login`) is `p_owner` when that login is the caller's session_user, or when
-- the caller is an operator. A registration with no recorded login is no runtime login's (an
-- operator's start records one). Inlined where it is used (the claim's hot path included).
CREATE OR REPLACE FUNCTION bf4ps_caller_owns(p_owner text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT COALESCE(p_owner = session_user::text, false) OR bf4ps_caller_holds('bf4ps_operator')
$function$;
REVOKE ALL ON FUNCTION bf4ps_caller_owns(p_owner text) FROM PUBLIC;

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
    -- the caller's figures, within the lock-out's bounds: at least one free attempt and at
    -- most 100, a lock of at least a second growing to at most a day, failures remembered
    -- for a minute to a week
    free integer := LEAST(GREATEST(p_free, 1), 100);
    base double precision := LEAST(GREATEST(p_base, 1), 86400);
    top double precision := LEAST(GREATEST(p_max, base), 86400);
    forget interval := make_interval(secs => LEAST(GREATEST(p_forget, 60), 604800));
    k text;
    r ops_login_failures;
    n integer;
    refused text[] := '{}';
    verified boolean := p_outcome = 'verified';
BEGIN
    IF cardinality(p_keys) > 4 OR p_outcome NOT IN ('check', 'attempt', 'verified', 'failed',
                                                     'succeeded') THEN
        RAISE EXCEPTION 'at most four keys and an outcome of check, attempt, verified, failed, '
            'succeeded' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF verified THEN
        -- the caller compared the credentials and they were right: nothing is counted and the
        -- keys' records are cleared (as 'succeeded'), unless an attempt now would be refused
        -- (a key locked, or past its free attempts with no lock yet): then it is counted as an
        -- attempt, refused or (a lock that ended meanwhile) accepted as one. So concurrent
        -- right logins never count against each other, and a lock-out holds for them too.
        IF NOT EXISTS (SELECT 1 FROM ops_login_failures f
                       WHERE f.key = ANY(p_keys)
                         AND (f.locked_until > t
                              OR (f.locked_until IS NULL AND f.failures >= free
                                  AND f.last_failure_at >= t - forget))) THEN
            DELETE FROM ops_login_failures f WHERE f.key = ANY(p_keys);
            RETURN QUERY SELECT x, 0::double precision, 0 FROM unnest(p_keys) AS x;
            RETURN;
        END IF;
        p_outcome := 'attempt';
    END IF;
    IF p_outcome = 'succeeded' THEN
        DELETE FROM ops_login_failures f WHERE f.key = ANY(p_keys);
    ELSIF p_outcome IN ('attempt', 'failed') THEN
        DELETE FROM ops_login_failures f
        WHERE f.last_failure_at < t - forget
          AND (f.locked_until IS NULL OR f.locked_until <= t);
    END IF;
    IF p_outcome = 'attempt' THEN
        -- counted before any password is compared, each key's row locked in key order: the
        -- first `free` attempts are compared; the next is refused and starts a lock-out; once
        -- a lock-out is over, one attempt is compared and starts the next (twice as long),
        -- so concurrent guesses get no more comparisons than sequential ones
        FOR k IN SELECT DISTINCT x FROM unnest(p_keys) AS x ORDER BY x LOOP
            -- the key's row, made or locked in one statement: a row another attempt's
            -- success deleted meanwhile is made again (a separate read found none, and the
            -- count became NULL)
            INSERT INTO ops_login_failures AS f (key, failures, last_failure_at)
            VALUES (k, 0, t)
            ON CONFLICT (key) DO UPDATE SET key = f.key
            RETURNING f.* INTO r;
            IF r.locked_until > t THEN
                -- refused, nothing counted (also when the lock-out began after this attempt's
                -- own clock, in the attempt it waited for)
                refused := refused || k;
                CONTINUE;
            END IF;
            n := r.failures + 1;
            UPDATE ops_login_failures f
            SET failures = n, last_failure_at = t, updated_at = t,
                locked_until = CASE WHEN n <= free THEN f.locked_until
                    ELSE t + make_interval(secs => LEAST(top,
                             base * power(2, LEAST(n - free - 1, 40)))) END
            WHERE f.key = k;
            IF n > free AND r.locked_until IS NULL THEN
                refused := refused || k;  -- the first beyond the free ones: not compared
            END IF;
        END LOOP;
        IF verified AND cardinality(refused) = 0
                AND NOT EXISTS (SELECT 1 FROM ops_login_failures f
                                WHERE f.key = ANY(p_keys) AND f.locked_until > t
                                  AND f.last_failure_at < t) THEN
            DELETE FROM ops_login_failures f WHERE f.key = ANY(p_keys);  -- accepted: cleared
            RETURN QUERY SELECT x, 0::double precision, 0 FROM unnest(p_keys) AS x;
            RETURN;
        END IF;
        RETURN QUERY
        SELECT f.key, CASE WHEN f.key = ANY(refused) OR f.locked_until > t
                            AND f.last_failure_at < t
                           THEN greatest(extract(epoch FROM f.locked_until - t), 0)
                           ELSE 0 END::double precision,
               f.failures
        FROM ops_login_failures f WHERE f.key = ANY(p_keys);
        RETURN;
    END IF;
    IF p_outcome = 'failed' THEN  -- the older build's count after a comparison
        INSERT INTO ops_login_failures AS f (key, failures, last_failure_at, locked_until)
        SELECT x, 1, t, NULL FROM unnest(p_keys) AS x
        ON CONFLICT (key) DO UPDATE
        SET failures = f.failures + 1, last_failure_at = t, updated_at = t,
            locked_until = CASE WHEN f.failures + 1 > free THEN greatest(
                COALESCE(f.locked_until, '-infinity'), t + make_interval(secs => least(
                    top, base * power(2, least(f.failures - free, 40)))))
                ELSE f.locked_until END;
    END IF;
    RETURN QUERY
    SELECT x, greatest(0, COALESCE(extract(epoch FROM f.locked_until - t), 0))::double precision,
           COALESCE(f.failures, 0)
    FROM unnest(p_keys) AS x LEFT JOIN ops_login_failures f ON f.key = x
      AND (f.last_failure_at >= t - forget OR f.locked_until > t);
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_ops_login_attempt(p_keys text[], p_outcome text, p_free integer, p_base double precision, p_max double precision, p_forget double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ops_login_attempt(p_keys text[], p_outcome text, p_free integer, p_base double precision, p_max double precision, p_forget double precision) TO bf4ps_web;
