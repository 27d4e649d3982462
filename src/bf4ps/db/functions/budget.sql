-- The fleet budget: a ceiling of requests per window over the whole fleet, shared by class.
-- `budget_window` counts the window from the ledger's counted requests (view `counted_requests`:
-- the ledger less what was marked unsent); `budget_allowed_classes` says which classes may send
-- now given their shares and demand. `bf4ps_budget_seed` (a collector's first start) and
-- `bf4ps_budget_set` (the operator's `bf4ps budget set`) write the policy, audited.
-- Calls no other room; admission reads it.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_budget_seed(p_requests integer, p_window_seconds double precision, p_reason text)
 RETURNS SETOF fleet_budget
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    RETURN QUERY
    UPDATE fleet_budget b
    SET requests = p_requests, window_seconds = p_window_seconds, configured_at = now(),
        updated_at = now()
    WHERE b.budget_id = 1 AND b.configured_at IS NULL
    RETURNING b.*;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_seed(p_requests integer, p_window_seconds double precision, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_budget_seed(p_requests integer, p_window_seconds double precision, p_reason text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_budget_set(p_requests integer, p_window_seconds double precision, p_configured boolean, p_reason text)
 RETURNS SETOF fleet_budget
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM set_config('bf4ps.change_reason', COALESCE(left(p_reason, 200), ''), true);
    RETURN QUERY
    UPDATE fleet_budget b
    SET requests = p_requests, window_seconds = p_window_seconds,
        configured_at = CASE WHEN p_configured THEN now() ELSE b.configured_at END,
        updated_at = now()
    WHERE b.budget_id = 1
    RETURNING b.*;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_set(p_requests integer, p_window_seconds double precision, p_configured boolean, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_budget_set(p_requests integer, p_window_seconds double precision, p_configured boolean, p_reason text) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION budget_allowed_classes(n integer, used jsonb, demand text[], policy jsonb, interactive_lane boolean)
 RETURNS text[]
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
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
        -- the active cap holds the rest for the other classes only while one of them has
        -- runnable work: an unused share is lent, as every floor is
        CONTINUE WHEN cls = 'active' AND COALESCE((used ->> 'active')::double precision, 0)
                                         >= (policy ->> 'cap_active')::double precision * n
                      AND demand && ARRAY['interactive', 'recent', 'bootstrap', 'retry'];
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
$function$;

-- The fleet budget's class shares, the database's policy (`bf4ps config set budget_*`, the
-- scheduler_policy table): the active class's cap and the floors kept free for interactive,
-- bootstrap and retry work while it waits, each within 0-1. The defaults are bf4ps.policy's
-- (tests/db/test_admission_trust.py holds them equal).
CREATE OR REPLACE FUNCTION budget_shares()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
    SELECT jsonb_object_agg(d.share, LEAST(1, GREATEST(0, COALESCE(
               CASE WHEN jsonb_typeof(p.value) = 'number' THEN (p.value #>> '{}')::float8 END,
               d.fallback))))
    FROM (VALUES ('cap_active', 0.75), ('floor_interactive', 0.25),
                 ('floor_bootstrap', 0.20), ('floor_retry', 0.05)) AS d(share, fallback)
    LEFT JOIN scheduler_policy p ON p.key = 'budget_' || d.share
$function$;

CREATE OR REPLACE FUNCTION budget_window(slot timestamp with time zone, span double precision, OUT used jsonb, OUT total integer, OUT last_slot timestamp with time zone)
 RETURNS record
 LANGUAGE sql
 STABLE
AS $function$
    SELECT jsonb_strip_nulls(jsonb_build_object(
               'interactive', NULLIF(count(*) FILTER (WHERE budget_class = 'interactive'), 0),
               'active', NULLIF(count(*) FILTER (WHERE budget_class = 'active'), 0),
               'recent', NULLIF(count(*) FILTER (WHERE budget_class = 'recent'), 0),
               'bootstrap', NULLIF(count(*) FILTER (WHERE budget_class = 'bootstrap'), 0),
               'retry', NULLIF(count(*) FILTER (WHERE budget_class = 'retry'), 0))),
           count(*)::integer, max(slot_at)
    FROM counted_requests
    WHERE slot_at > slot - make_interval(secs => span)
$function$;

CREATE OR REPLACE VIEW counted_requests AS
 SELECT request_id,
    slot_at,
    counted_at,
    egress_key,
    budget_class,
    collector_uuid,
    job_id,
    resource
   FROM request_ledger
  WHERE unsent_at IS NULL;
GRANT SELECT ON TABLE counted_requests TO bf4ps_collector;
GRANT SELECT ON TABLE counted_requests TO bf4ps_operator;
GRANT SELECT ON TABLE counted_requests TO bf4ps_scheduler;
GRANT SELECT ON TABLE counted_requests TO bf4ps_web;
