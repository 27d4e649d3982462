-- Putting work in the queue: BF4SW intake (`bf4ps_intake_enqueue`), the scheduler's feeder per
-- class (`bf4ps_feed_class`, `bf4ps_feed_retry`), the parked resources' re-check, and the
-- enqueue of one soldier-resource by a collector or the website (`bf4ps_enqueue_*`: a lane is
-- allowed by the caller's role). Calls the access room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_enqueue_insert(p_soldier bigint, p_resource text, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_eligible_at timestamp with time zone, p_request uuid, p_lookup_name text, p_lookup_platform text)
 RETURNS TABLE(job_id bigint, lane text, priority_class text, status text, attempt_count integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM bf4ps_enqueue_lane_allowed(p_lane);
    RETURN QUERY
    INSERT INTO collection_jobs AS j (soldier_id, resource, lane, priority_class, rank, reason,
                                      eligible_at, request_id, lookup_name, lookup_platform)
    VALUES (p_soldier, p_resource, p_lane, p_class, p_rank, p_reason, p_eligible_at,
            p_request, p_lookup_name, p_lookup_platform)
    ON CONFLICT DO NOTHING
    RETURNING j.job_id, j.lane::text, j.priority_class::text, j.status::text,
              j.attempt_count::integer;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_enqueue_insert(p_soldier bigint, p_resource text, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_eligible_at timestamp with time zone, p_request uuid, p_lookup_name text, p_lookup_platform text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_insert(p_soldier bigint, p_resource text, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_eligible_at timestamp with time zone, p_request uuid, p_lookup_name text, p_lookup_platform text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_insert(p_soldier bigint, p_resource text, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_eligible_at timestamp with time zone, p_request uuid, p_lookup_name text, p_lookup_platform text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_enqueue_lane_allowed(p_lane text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF p_lane <> 'interactive' AND NOT bf4ps_caller_holds('bf4ps_scheduler') THEN
        RAISE EXCEPTION 'role % may enqueue interactive jobs only, not %', session_user,
            p_lane USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_enqueue_lane_allowed(p_lane text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lane_allowed(p_lane text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lane_allowed(p_lane text) TO bf4ps_web;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lane_allowed(p_lane text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_enqueue_lock_existing(p_soldier bigint, p_resource text)
 RETURNS TABLE(job_id bigint, lane text, priority_class text, status text, rank timestamp with time zone, request_id uuid, attempt_count integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.job_id, j.lane::text, j.priority_class::text, j.status::text, j.rank,
           j.request_id, j.attempt_count::integer
    FROM collection_jobs j
    WHERE j.soldier_id = p_soldier AND j.resource = p_resource
    FOR UPDATE;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_enqueue_lock_existing(p_soldier bigint, p_resource text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lock_existing(p_soldier bigint, p_resource text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lock_existing(p_soldier bigint, p_resource text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_enqueue_promote(p_job bigint, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_request uuid, p_eligible_at timestamp with time zone)
 RETURNS TABLE(job_id bigint, lane text, priority_class text, status text, attempt_count integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM bf4ps_enqueue_lane_allowed(p_lane);
    RETURN QUERY
    UPDATE collection_jobs j
    SET lane = p_lane, priority_class = p_class, rank = LEAST(j.rank, p_rank),
        reason = p_reason, request_id = COALESCE(p_request, j.request_id),
        eligible_at = LEAST(j.eligible_at, p_eligible_at), updated_at = now()
    WHERE j.job_id = p_job AND j.status = 'pending'
    RETURNING j.job_id, j.lane::text, j.priority_class::text, j.status::text,
              j.attempt_count::integer;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_enqueue_promote(p_job bigint, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_request uuid, p_eligible_at timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_promote(p_job bigint, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_request uuid, p_eligible_at timestamp with time zone) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_promote(p_job bigint, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_request uuid, p_eligible_at timestamp with time zone) TO bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_feed_class(p_class text, p_resource text, p_n integer, p_aging_seconds double precision)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH candidates AS (
    (SELECT cs.soldier_id, cs.resource, cs.eligible_since, cs.status, cs.due_reason, 0 AS tier
     FROM collection_state cs
     WHERE cs.activity_class = $1 AND cs.resource = $2
       AND cs.status = 'due' AND cs.due_reason = 'final_refresh'
       AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                       WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
     ORDER BY cs.eligible_since, cs.soldier_id
     LIMIT least(greatest($3, 0), 10000))
    UNION ALL
    (SELECT cs.soldier_id, cs.resource, cs.eligible_since, cs.status, cs.due_reason, 1
     FROM collection_state cs
     WHERE cs.activity_class = $1 AND cs.resource = $2
       AND cs.status IN ('never_attempted', 'due')
       AND cs.due_reason IS DISTINCT FROM 'final_refresh'
       AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                       WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
     ORDER BY cs.eligible_since, cs.soldier_id
     LIMIT least(greatest($3, 0), 10000))
), picked AS (
    SELECT c.*, row_number() OVER (ORDER BY c.tier, c.eligible_since, c.soldier_id) AS pos
    FROM candidates c
    ORDER BY c.tier, c.eligible_since, c.soldier_id
    LIMIT least(greatest($3, 0), 10000)
), made AS (
    INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason)
    SELECT soldier_id, resource, 'background', $1,
           now() + make_interval(secs => greatest($4, 0) + pos * 1e-6),
           CASE WHEN status = 'due' THEN coalesce(due_reason, 'active_refresh')
                ELSE 'bootstrap' END
    FROM picked
    ORDER BY soldier_id
    ON CONFLICT DO NOTHING
    RETURNING job_id, soldier_id, resource, priority_class, reason
), ev AS (
    INSERT INTO collection_events (event_type, lane, job_id, soldier_id, persona_id, platform,
                                   resource, priority_class, result)
    SELECT 'created', 'background', m.job_id, m.soldier_id, s.persona_id, s.platform,
           m.resource, m.priority_class, m.reason
    FROM made m JOIN soldiers s ON s.soldier_id = m.soldier_id
)
SELECT count(*) FROM made;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_feed_class(p_class text, p_resource text, p_n integer, p_aging_seconds double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_feed_class(p_class text, p_resource text, p_n integer, p_aging_seconds double precision) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_feed_retry(p_n integer)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH picked AS (
    SELECT cs.soldier_id, cs.resource, cs.next_attempt_at, cs.activity_class
    FROM collection_state cs
    WHERE cs.status = 'retry_wait' AND cs.next_attempt_at <= clock_timestamp()
      AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                      WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
    ORDER BY cs.next_attempt_at
    LIMIT least(greatest($1, 0), 10000)
), made AS (
    INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason)
    SELECT soldier_id, resource, 'background', activity_class, clock_timestamp(), 'retry'
    FROM picked ORDER BY soldier_id
    ON CONFLICT DO NOTHING
    RETURNING job_id, soldier_id, resource, priority_class
), ev AS (
    INSERT INTO collection_events (event_type, lane, job_id, soldier_id, persona_id, platform,
                                   resource, priority_class, result)
    SELECT 'created', 'background', m.job_id, m.soldier_id, s.persona_id, s.platform,
           m.resource, m.priority_class, 'retry'
    FROM made m JOIN soldiers s ON s.soldier_id = m.soldier_id
)
SELECT count(*) FROM made;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_feed_retry(p_n integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_feed_retry(p_n integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_intake_enqueue(p_soldiers bigint[], p_classes text[], p_ranks timestamp with time zone[], p_resource text, p_reason text, p_now timestamp with time zone)
 RETURNS TABLE(soldier_id bigint, job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH wanted AS (
    SELECT * FROM unnest($1, $2, $3) WITH ORDINALITY AS w(soldier_id, priority_class, rank, ord)
), made AS (
    INSERT INTO collection_jobs (soldier_id, resource, lane, priority_class, rank, reason,
                                 eligible_at)
    SELECT w.soldier_id, $4, 'background', w.priority_class,
           w.rank, $5, $6
    FROM wanted w
    ORDER BY w.ord
    ON CONFLICT DO NOTHING
    RETURNING job_id, soldier_id, resource, lane, priority_class, reason
), ev AS (
    INSERT INTO collection_events (event_type, lane, job_id, soldier_id, persona_id, platform,
                                   resource, priority_class, result)
    SELECT 'created', m.lane, m.job_id, m.soldier_id, s.persona_id, s.platform, m.resource,
           m.priority_class, m.reason
    FROM made m JOIN soldiers s ON s.soldier_id = m.soldier_id
    ORDER BY m.job_id
)
SELECT soldier_id, job_id FROM made;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_intake_enqueue(p_soldiers bigint[], p_classes text[], p_ranks timestamp with time zone[], p_resource text, p_reason text, p_now timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_intake_enqueue(p_soldiers bigint[], p_classes text[], p_ranks timestamp with time zone[], p_resource text, p_reason text, p_now timestamp with time zone) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_parked_recheck(p_recheck_seconds double precision, p_n integer)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH picked AS (
    SELECT soldier_id, resource
    FROM collection_state
    WHERE status = 'unavailable' AND activity_class = 'active'
      -- never sooner than the policy's recheck interval, whatever the caller asks
      AND last_attempt_at <= clock_timestamp() - make_interval(secs => GREATEST($1,
          bf4ps_policy_number('unavailable_recheck_seconds', 604800)))
    ORDER BY last_attempt_at
    LIMIT least(greatest($2, 0), 10000)
    FOR UPDATE SKIP LOCKED
), revived AS (
    UPDATE collection_state cs
    SET status = 'retry_wait', next_attempt_at = clock_timestamp(),
        updated_at = clock_timestamp()
    FROM picked p
    WHERE cs.soldier_id = p.soldier_id AND cs.resource = p.resource
    RETURNING cs.soldier_id, cs.resource, cs.last_attempt_at, cs.last_error_class,
              cs.consecutive_failures
), ev AS (
    INSERT INTO collection_events (event_type, soldier_id, persona_id, platform, resource,
                                   priority_class, result, error_class, details)
    SELECT 'recheck_scheduled', r.soldier_id, s.persona_id, s.platform, r.resource, 'active',
           'retry', r.last_error_class,
           jsonb_build_object('parked_at', r.last_attempt_at,
                              'consecutive_failures', r.consecutive_failures)
    FROM revived r JOIN soldiers s ON s.soldier_id = r.soldier_id
)
SELECT count(*) FROM revived;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_parked_recheck(p_recheck_seconds double precision, p_n integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_parked_recheck(p_recheck_seconds double precision, p_n integer) TO bf4ps_scheduler;

-- The BF4SW intake's cursors (intake_state): 'bf4sw' the alias-id cursor, 'bf4sw_reconcile'
-- the reconcile watermark. Each only moves forward (a cursor or a watermark passed behind the
-- stored one changes nothing); `p_error` (NULL: a success) records a failed run, at most 500
-- characters, and leaves the cursors as they are.
CREATE OR REPLACE FUNCTION bf4ps_intake_mark(p_source text, p_last_alias_id bigint, p_watermark timestamp with time zone, p_error text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF p_source NOT IN ('bf4sw', 'bf4sw_reconcile') THEN
        RAISE EXCEPTION 'no intake cursor %', p_source USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_error IS NOT NULL THEN
        INSERT INTO intake_state AS st (source_name, last_run_at, last_error)
        VALUES (p_source, now(), left(p_error, 500))
        ON CONFLICT (source_name) DO UPDATE
        SET last_run_at = now(), last_error = excluded.last_error, updated_at = now();
        RETURN;
    END IF;
    INSERT INTO intake_state AS st (source_name, last_alias_id, reconcile_watermark,
                                    last_run_at, last_success_at)
    VALUES (p_source, GREATEST(COALESCE(p_last_alias_id, 0), 0), p_watermark, now(), now())
    ON CONFLICT (source_name) DO UPDATE
    SET last_alias_id = GREATEST(st.last_alias_id, excluded.last_alias_id),
        reconcile_watermark = GREATEST(st.reconcile_watermark, excluded.reconcile_watermark),
        last_run_at = now(), last_success_at = now(), last_error = NULL, updated_at = now();
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_intake_mark(p_source text, p_last_alias_id bigint, p_watermark timestamp with time zone, p_error text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_intake_mark(p_source text, p_last_alias_id bigint, p_watermark timestamp with time zone, p_error text) TO bf4ps_scheduler;

-- One BF4SW intake batch (scheduler/intake_store.py), the scheduler's: the soldiers, their
-- names and their bf4sw source, and the never-attempted state of the new ones. At most 10,000
-- soldiers (100,000 names) a call; a sighting is never believed ahead of the database's clock
-- (so no soldier is kept active by a date to come); the source is always bf4sw; the state's
-- eligibility is the import's time, never ahead of the database's clock (the scheduler, whose
-- feeder orders the backlog anyway, may name an earlier one).
-- Earlier first_seen and later last_seen win; the current name follows the newest sighting,
-- so importing the same identity twice (or in two halves) converges to the same row.
CREATE OR REPLACE FUNCTION bf4ps_intake_soldiers(p_persona_ids bigint[], p_platforms text[], p_names text[], p_first_seen timestamp with time zone[], p_played_at timestamp with time zone[])
 RETURNS TABLE(soldier_id bigint, persona_id bigint, platform text, inserted boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := clock_timestamp();
    n constant integer := cardinality(p_persona_ids);
BEGIN
    IF n > 10000 OR n IS DISTINCT FROM cardinality(p_platforms)
            OR n IS DISTINCT FROM cardinality(p_names)
            OR n IS DISTINCT FROM cardinality(p_first_seen)
            OR n IS DISTINCT FROM cardinality(p_played_at) THEN
        RAISE EXCEPTION 'at most 10000 soldiers a batch, each with its platform, name and times'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    INSERT INTO soldiers AS s (persona_id, platform, current_name, first_seen_at, last_seen_at)
    SELECT i.persona_id, i.platform, i.name,
           CASE WHEN i.first_seen > t THEN t ELSE i.first_seen END,
           CASE WHEN i.played_at > t THEN t ELSE i.played_at END  -- NULL: not a sighting
    FROM unnest(p_persona_ids, p_platforms, p_names, p_first_seen, p_played_at)
         WITH ORDINALITY AS i(persona_id, platform, name, first_seen, played_at, ord)
    ORDER BY i.ord
    ON CONFLICT (persona_id, platform) DO UPDATE
    SET current_name = CASE
            WHEN excluded.last_seen_at IS NOT NULL
                 AND (s.last_seen_at IS NULL OR excluded.last_seen_at >= s.last_seen_at)
            THEN excluded.current_name ELSE s.current_name END,
        first_seen_at = LEAST(s.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(s.last_seen_at, excluded.last_seen_at),
        updated_at = now()
    RETURNING s.soldier_id, s.persona_id, s.platform::text, (s.xmax = 0);
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_intake_soldiers(p_persona_ids bigint[], p_platforms text[], p_names text[], p_first_seen timestamp with time zone[], p_played_at timestamp with time zone[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_intake_soldiers(p_persona_ids bigint[], p_platforms text[], p_names text[], p_first_seen timestamp with time zone[], p_played_at timestamp with time zone[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_intake_names(p_soldier_ids bigint[], p_names text[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t constant timestamptz := clock_timestamp();
    n constant integer := cardinality(p_soldier_ids);
    added integer;
BEGIN
    IF n > 100000 OR n IS DISTINCT FROM cardinality(p_names)
            OR n IS DISTINCT FROM cardinality(p_first_seen)
            OR n IS DISTINCT FROM cardinality(p_last_seen) THEN
        RAISE EXCEPTION 'at most 100000 names a batch, each with its soldier and times'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH up AS (
        INSERT INTO soldier_names AS x (soldier_id, name, first_seen_at, last_seen_at)
        SELECT i.soldier_id, i.name, CASE WHEN i.first_seen > t THEN t ELSE i.first_seen END,
               CASE WHEN i.last_seen > t THEN t ELSE i.last_seen END
        FROM unnest(p_soldier_ids, p_names, p_first_seen, p_last_seen)
             AS i(soldier_id, name, first_seen, last_seen)
        ON CONFLICT (soldier_id, name) DO UPDATE
        SET first_seen_at = LEAST(x.first_seen_at, excluded.first_seen_at),
            last_seen_at = GREATEST(x.last_seen_at, excluded.last_seen_at)
        WHERE excluded.first_seen_at < x.first_seen_at OR excluded.last_seen_at > x.last_seen_at
        RETURNING (x.xmax = 0) AS inserted)
    SELECT count(*) FILTER (WHERE up.inserted) INTO added FROM up;
    RETURN added;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_intake_names(p_soldier_ids bigint[], p_names text[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_intake_names(p_soldier_ids bigint[], p_names text[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_intake_sources(p_soldier_ids bigint[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[], p_eligible_since timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t constant timestamptz := clock_timestamp();
    n constant integer := cardinality(p_soldier_ids);
BEGIN
    IF n > 10000 OR n IS DISTINCT FROM cardinality(p_first_seen)
            OR n IS DISTINCT FROM cardinality(p_last_seen) THEN
        RAISE EXCEPTION 'at most 10000 soldiers a batch, each with its times'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO soldier_sources AS src (soldier_id, source_type, first_seen_at, last_seen_at)
    SELECT i.soldier_id, 'bf4sw', CASE WHEN i.first_seen > t THEN t ELSE i.first_seen END,
           CASE WHEN i.last_seen > t THEN t ELSE i.last_seen END
    FROM unnest(p_soldier_ids, p_first_seen, p_last_seen) AS i(soldier_id, first_seen, last_seen)
    ON CONFLICT (soldier_id, source_type) DO UPDATE
    SET first_seen_at = LEAST(src.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(src.last_seen_at, excluded.last_seen_at)
    WHERE excluded.first_seen_at < src.first_seen_at OR excluded.last_seen_at > src.last_seen_at;
    -- every resource never attempted, eligible since the import (FIFO by import order)
    INSERT INTO collection_state (soldier_id, resource, eligible_since)
    SELECT s.soldier_id, r.resource,
           LEAST(COALESCE(p_eligible_since, t), t)
    FROM unnest(p_soldier_ids) AS s(soldier_id)
    CROSS JOIN unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r(resource)
    ORDER BY s.soldier_id, r.resource
    ON CONFLICT DO NOTHING;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_intake_sources(p_soldier_ids bigint[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[], p_eligible_since timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_intake_sources(p_soldier_ids bigint[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[], p_eligible_since timestamp with time zone) TO bf4ps_scheduler;
