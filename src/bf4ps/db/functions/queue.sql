-- The queue engine: a job is claimed in one statement (`queue_claim`: fairness, priority classes,
-- SKIP LOCKED) and every later change is fenced by its lease_token (the `bf4ps_job_*` functions:
-- start, renew, reslot, note an error, retry, release, delete); `queue_succeed` finishes a job
-- and may claim the collector's next one; the scheduler's reaper returns expired leases.
-- Calls the circuit room (the claim asks `bf4ps_circuit_lets`) and the access room; never the
-- admission or the gates: a success that continues behind a gate goes through the admission
-- room's admission_succeed, which calls queue_succeed and queue_claim here.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_claim_wanted(soldier bigint, klass text, retrying boolean, p_soldier bigint, p_classes text[])
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT CASE WHEN p_soldier IS NULL THEN true ELSE soldier = p_soldier END
       AND CASE WHEN p_classes IS NULL THEN true
                ELSE (CASE WHEN retrying THEN 'retry' ELSE klass END) = ANY(p_classes) END
$function$;

-- A lease's length within the policy's bounds, whatever the caller passes: never negative, at
-- most `lease_max_seconds` (a lease of a year would keep a dead collector's job from the reaper
-- that long; a short one only lets the caller's own job be reclaimed sooner). Inlined into the
-- claim, start, renew and reslot.
CREATE OR REPLACE FUNCTION bf4ps_lease_length(p_lease double precision)
 RETURNS interval
 LANGUAGE sql
 STABLE
AS $function$
    SELECT make_interval(secs => LEAST(GREATEST(p_lease, 0),
                                       GREATEST(bf4ps_policy_number('lease_max_seconds', 1800), 1)))
$function$;
REVOKE ALL ON FUNCTION bf4ps_lease_length(p_lease double precision) FROM PUBLIC;

-- A resource's freshness, the policy's (`freshness_<resource>_seconds`), read in the database:
-- a success's next due time never comes from its caller.
CREATE OR REPLACE FUNCTION bf4ps_freshness(p_resource text)
 RETURNS interval
 LANGUAGE sql
 STABLE
AS $function$
    SELECT make_interval(secs => CASE p_resource
        WHEN 'detailed' THEN bf4ps_policy_number('freshness_detailed_seconds', 604800)
        WHEN 'profile' THEN bf4ps_policy_number('freshness_profile_seconds', 4838400)
        WHEN 'weapons' THEN bf4ps_policy_number('freshness_weapons_seconds', 4838400)
        WHEN 'vehicles' THEN bf4ps_policy_number('freshness_vehicles_seconds', 4838400)
        ELSE 0 END)
$function$;
REVOKE ALL ON FUNCTION bf4ps_freshness(p_resource text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_job_attach_request(p_job bigint, p_request uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    -- a player's open request joins a job of no request only when the job collects what the
    -- request asks for: its soldier's (or, for a look-up, the same name and platform); a
    -- collector attaches only the request of a look-up job whose lease it holds (the soldier
    -- that look-up found), never another player's request to another soldier's work
    UPDATE collection_jobs j SET request_id = p_request, updated_at = now()
    FROM interactive_requests r
    WHERE j.job_id = p_job AND j.request_id IS NULL AND r.request_id = p_request
      AND r.status IN ('queued', 'collecting')
      AND (r.soldier_id = j.soldier_id
           OR (j.soldier_id IS NULL AND r.soldier_id IS NULL
               AND lower(j.lookup_name) = lower(r.lookup_name)
               AND j.lookup_platform::text = r.platform::text))
      AND (bf4ps_caller_holds('bf4ps_web') OR EXISTS (
            SELECT 1 FROM collection_jobs l JOIN collectors c
                ON c.collector_uuid = l.collector_uuid
            WHERE l.request_id = p_request AND l.lease_token IS NOT NULL
              AND l.lease_expires_at > clock_timestamp() AND bf4ps_caller_owns(c.db_login)));
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_attach_request(p_job bigint, p_request uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_attach_request(p_job bigint, p_request uuid) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_job_attach_request(p_job bigint, p_request uuid) TO bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_job_delete(p_job bigint, p_token uuid)
 RETURNS TABLE(job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    DELETE FROM collection_jobs j WHERE j.job_id = p_job AND j.lease_token = p_token
    RETURNING j.job_id;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_delete(p_job bigint, p_token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_delete(p_job bigint, p_token uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_lock_owned(p_job bigint, p_collector uuid, p_token uuid, p_statuses text[])
 RETURNS TABLE(job_id bigint, soldier_id bigint, resource text, lane text, priority_class text, status text, attempt_count integer, lease_token uuid, claimed_at timestamp with time zone, started_at timestamp with time zone, request_id uuid, lookup_name text, lookup_platform text, persona_id bigint, platform text, collector_name text, hostname text, egress_key text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.job_id, j.soldier_id, j.resource::text, j.lane::text, j.priority_class::text,
           j.status::text, j.attempt_count::integer, j.lease_token, j.claimed_at,
           j.started_at, j.request_id, j.lookup_name::text, j.lookup_platform::text,
           s.persona_id, s.platform::text, c.collector_name::text, c.hostname::text,
           c.egress_key::text
    FROM collection_jobs j
    LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
    JOIN collectors c ON c.collector_uuid = j.collector_uuid
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status = ANY(p_statuses) AND j.lease_expires_at > clock_timestamp()
    FOR UPDATE OF j;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_lock_owned(p_job bigint, p_collector uuid, p_token uuid, p_statuses text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_lock_owned(p_job bigint, p_collector uuid, p_token uuid, p_statuses text[]) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_note_error(p_job bigint, p_token uuid, p_error_class text, p_error_message text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    UPDATE collection_jobs j
    SET last_error_class = p_error_class, last_error_message = p_error_message,
        last_error_at = clock_timestamp()
    WHERE j.job_id = p_job AND j.lease_token = p_token;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_note_error(p_job bigint, p_token uuid, p_error_class text, p_error_message text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_note_error(p_job bigint, p_token uuid, p_error_class text, p_error_message text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_owned_now(p_job bigint, p_collector uuid, p_token uuid)
 RETURNS TABLE(job_id bigint, now timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.job_id, clock_timestamp()
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status = 'running' AND j.lease_expires_at > clock_timestamp();
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_owned_now(p_job bigint, p_collector uuid, p_token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_owned_now(p_job bigint, p_collector uuid, p_token uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_release(p_job bigint, p_collector uuid, p_token uuid, p_why text)
 RETURNS TABLE(job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH held AS (
        SELECT j.* FROM collection_jobs j
        WHERE j.job_id = p_job AND j.collector_uuid = p_collector
          AND j.lease_token = p_token AND j.status = 'claimed'
        FOR UPDATE
    ), back AS (
        UPDATE collection_jobs j
        SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
            started_at = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
        FROM held WHERE j.job_id = held.job_id
        RETURNING j.job_id
    ), ev AS (
        INSERT INTO collection_events (
            event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
            lease_token, soldier_id, persona_id, platform, resource, priority_class,
            attempt_number, result, claimed_at)
        SELECT 'released', h.collector_uuid, c.collector_name, c.hostname, c.egress_key,
               h.lane, h.job_id, h.lease_token, h.soldier_id, s.persona_id,
               COALESCE(s.platform, h.lookup_platform), h.resource, h.priority_class,
               h.attempt_count, p_why, h.claimed_at
        FROM held h
        JOIN back b ON b.job_id = h.job_id
        LEFT JOIN collectors c ON c.collector_uuid = h.collector_uuid
        LEFT JOIN soldiers s ON s.soldier_id = h.soldier_id
    )
    SELECT back.job_id FROM back;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_release(p_job bigint, p_collector uuid, p_token uuid, p_why text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_release(p_job bigint, p_collector uuid, p_token uuid, p_why text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_renew(p_job bigint, p_collector uuid, p_token uuid, p_lease double precision)
 RETURNS TABLE(lease_expires_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collection_jobs j
    SET lease_expires_at = GREATEST(j.lease_expires_at,
                                    clock_timestamp() + bf4ps_lease_length(p_lease))
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status IN ('claimed', 'running') AND j.lease_expires_at > clock_timestamp()
    RETURNING j.lease_expires_at;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_renew(p_job bigint, p_collector uuid, p_token uuid, p_lease double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_renew(p_job bigint, p_collector uuid, p_token uuid, p_lease double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_reslot(p_job bigint, p_collector uuid, p_token uuid, p_sent_at timestamp with time zone, p_lease double precision)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    UPDATE collection_jobs j
    SET started_at = LEAST(p_sent_at, clock_timestamp()),
        lease_expires_at = GREATEST(j.lease_expires_at,
                                    LEAST(p_sent_at, clock_timestamp())
                                    + bf4ps_lease_length(p_lease)),
        updated_at = clock_timestamp()
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status = 'running' AND j.lease_expires_at > clock_timestamp();
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_reslot(p_job bigint, p_collector uuid, p_token uuid, p_sent_at timestamp with time zone, p_lease double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_reslot(p_job bigint, p_collector uuid, p_token uuid, p_sent_at timestamp with time zone, p_lease double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_retry(p_job bigint, p_token uuid, p_eligible_at timestamp with time zone, p_error_class text, p_error_message text)
 RETURNS TABLE(job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collection_jobs j
    SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
        started_at = NULL, lease_expires_at = NULL, eligible_at = p_eligible_at,
        last_error_class = p_error_class, last_error_message = p_error_message,
        last_error_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE j.job_id = p_job AND j.lease_token = p_token
    RETURNING j.job_id;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_retry(p_job bigint, p_token uuid, p_eligible_at timestamp with time zone, p_error_class text, p_error_message text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_retry(p_job bigint, p_token uuid, p_eligible_at timestamp with time zone, p_error_class text, p_error_message text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_snapshot(p_job bigint, p_token uuid)
 RETURNS TABLE(job_id bigint, soldier_id bigint, resource text, lane text, priority_class text, status text, attempt_count integer, collector_uuid uuid, lease_token uuid, lease_expires_at timestamp with time zone, persona_id bigint, platform text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.job_id, j.soldier_id, j.resource::text, j.lane::text, j.priority_class::text,
           j.status::text, j.attempt_count::integer, j.collector_uuid,
           CASE WHEN j.lease_token = p_token THEN j.lease_token END, j.lease_expires_at,
           s.persona_id, s.platform::text
    FROM collection_jobs j LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
    WHERE j.job_id = p_job;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_snapshot(p_job bigint, p_token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_snapshot(p_job bigint, p_token uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_job_start(p_job bigint, p_collector uuid, p_token uuid, p_started_at timestamp with time zone, p_lease double precision)
 RETURNS TABLE(started_at timestamp with time zone, claimed_at timestamp with time zone, lease_expires_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collection_jobs j
    SET status = 'running',
        started_at = GREATEST(LEAST(p_started_at, clock_timestamp() + interval '60 seconds'),
                              j.claimed_at),
        lease_expires_at = GREATEST(LEAST(p_started_at,
                                          clock_timestamp() + interval '60 seconds'),
                                    clock_timestamp()) + bf4ps_lease_length(p_lease),
        updated_at = clock_timestamp()
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status = 'claimed' AND j.lease_expires_at > clock_timestamp()
    RETURNING j.started_at, j.claimed_at, j.lease_expires_at;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_job_start(p_job bigint, p_collector uuid, p_token uuid, p_started_at timestamp with time zone, p_lease double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_job_start(p_job bigint, p_collector uuid, p_token uuid, p_started_at timestamp with time zone, p_lease double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_jobs_expire_abandoned(p_collector uuid)
 RETURNS TABLE(job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- a collector expires only its own registration's leases
    IF NOT EXISTS (SELECT 1 FROM collectors c WHERE c.collector_uuid = p_collector
                     AND bf4ps_caller_owns(c.db_login)) THEN
        RAISE EXCEPTION 'a collector may expire the leases of only its own registration '
            '(collector %, login %)', p_collector, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY
    UPDATE collection_jobs j
    SET lease_expires_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE j.collector_uuid = p_collector AND j.lease_token IS NOT NULL
      AND j.lease_expires_at > clock_timestamp()
    RETURNING j.job_id;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_jobs_expire_abandoned(p_collector uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_jobs_expire_abandoned(p_collector uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_lease_outcome(p_job_id bigint, p_lease_token uuid)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT event_type FROM collection_events
    WHERE job_id = p_job_id AND lease_token = p_lease_token
      AND event_type IN ('succeeded', 'failed')
    ORDER BY event_id DESC
    LIMIT 1
$function$;
REVOKE ALL ON FUNCTION bf4ps_lease_outcome(p_job_id bigint, p_lease_token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_lease_outcome(p_job_id bigint, p_lease_token uuid) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_lease_outcome(p_job_id bigint, p_lease_token uuid) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_lease_outcome(p_job_id bigint, p_lease_token uuid) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_reap_expired(p_limit integer)
 RETURNS TABLE(job_id bigint, old_collector uuid, old_token uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH expired AS (
    SELECT job_id, collector_uuid, lease_token, claimed_at, started_at
    FROM collection_jobs
    WHERE lease_token IS NOT NULL AND lease_expires_at <= clock_timestamp()
    ORDER BY lease_expires_at
    LIMIT least($1, 10000)
    FOR UPDATE SKIP LOCKED
), reset AS (
    UPDATE collection_jobs j
    SET status = 'pending', collector_uuid = NULL, lease_token = NULL, claimed_at = NULL,
        started_at = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
    FROM expired e WHERE j.job_id = e.job_id
    RETURNING j.*, e.collector_uuid AS old_collector, e.lease_token AS old_token,
              e.claimed_at AS old_claimed_at, e.started_at AS old_started_at
), ev AS (
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, details, claimed_at, started_at)
    SELECT kind.event_type, r.old_collector, c.collector_name, c.hostname, c.egress_key,
           r.lane, r.job_id, r.old_token, r.soldier_id, s.persona_id,
           COALESCE(s.platform, r.lookup_platform), r.resource, r.priority_class,
           r.attempt_count, jsonb_build_object('by', 'reaper'),
           CASE WHEN kind.ord = 1 THEN r.old_claimed_at END,
           CASE WHEN kind.ord = 1 THEN r.old_started_at END
    FROM reset r
    LEFT JOIN soldiers s ON s.soldier_id = r.soldier_id
    LEFT JOIN collectors c ON c.collector_uuid = r.old_collector
    CROSS JOIN (VALUES ('lease_expired', 1), ('reclaimed', 2)) AS kind(event_type, ord)
    ORDER BY r.job_id, kind.ord
)
SELECT job_id, old_collector, old_token FROM reset;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_reap_expired(p_limit integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_reap_expired(p_limit integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION queue_claim(p_collector uuid, p_lane text, p_lease double precision, p_soldier bigint DEFAULT NULL::bigint, p_classes text[] DEFAULT NULL::text[], p_start boolean DEFAULT false)
 RETURNS SETOF queue_claimed
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    old collection_jobs;
BEGIN
    SELECT * INTO old FROM collection_jobs j
    WHERE j.lane = p_lane AND j.lease_token IS NOT NULL
      AND j.lease_expires_at <= clock_timestamp()
      AND bf4ps_claim_wanted(j.soldier_id, j.priority_class, j.last_error_at IS NOT NULL,
                             p_soldier, p_classes)
      AND bf4ps_circuit_lets(j.job_id, j.lane, j.resource)
    ORDER BY j.rank, j.job_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED;

    RETURN QUERY
    WITH claimed AS (
        UPDATE collection_jobs j
        SET status = CASE WHEN p_start THEN 'running' ELSE 'claimed' END,
            collector_uuid = p_collector, lease_token = gen_random_uuid(),
            claimed_at = clock_timestamp(),
            started_at = CASE WHEN p_start THEN clock_timestamp() END,
            lease_expires_at = clock_timestamp() + bf4ps_lease_length(p_lease),
            attempt_count = j.attempt_count + 1, updated_at = clock_timestamp()
        WHERE j.job_id = COALESCE(old.job_id, (
                SELECT f.job_id FROM collection_jobs f
                WHERE f.lane = p_lane AND f.lease_token IS NULL
                  AND f.eligible_at <= clock_timestamp()
                  AND bf4ps_claim_wanted(f.soldier_id, f.priority_class,
                                         f.last_error_at IS NOT NULL, p_soldier, p_classes)
                  AND bf4ps_circuit_lets(f.job_id, f.lane, f.resource)
                ORDER BY f.rank, f.job_id
                LIMIT 1
                FOR UPDATE SKIP LOCKED))
          AND EXISTS (SELECT 1 FROM collectors me
                      WHERE me.collector_uuid = p_collector AND me.enabled AND NOT me.drained
                        AND me.retired_at IS NULL
                        -- a collector claims only for its own registration
                        AND bf4ps_caller_owns(me.db_login))
        RETURNING j.*
    )
    SELECT NULL::bigint, NULL::timestamptz, c.job_id, c.soldier_id, c.resource::text,
           c.lane::text, c.priority_class::text, c.rank, c.reason::text,
           c.attempt_count::integer, c.last_error_at IS NOT NULL, c.lease_token, c.claimed_at,
           c.started_at, c.lease_expires_at, c.request_id, c.lookup_name::text,
           c.lookup_platform::text, old.job_id IS NOT NULL, s.persona_id, s.platform::text,
           s.current_name::text
    FROM claimed c LEFT JOIN soldiers s ON s.soldier_id = c.soldier_id;

    IF FOUND AND old.job_id IS NOT NULL THEN
        INSERT INTO collection_events (
            occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key,
            lane, job_id, lease_token, soldier_id, persona_id, platform, resource,
            priority_class, attempt_number, claimed_at, started_at)
        SELECT j.claimed_at, kind.event_type,
               CASE WHEN kind.ord = 1 THEN old.collector_uuid ELSE p_collector END,
               who.collector_name, who.hostname, who.egress_key, j.lane, j.job_id,
               CASE WHEN kind.ord = 1 THEN old.lease_token ELSE j.lease_token END,
               j.soldier_id, s.persona_id, COALESCE(s.platform, j.lookup_platform), j.resource,
               j.priority_class, j.attempt_count,
               CASE WHEN kind.ord = 1 THEN old.claimed_at END,
               CASE WHEN kind.ord = 1 THEN old.started_at END
        FROM collection_jobs j
        CROSS JOIN (VALUES ('lease_expired', 1), ('reclaimed', 2)) AS kind(event_type, ord)
        LEFT JOIN collectors who ON who.collector_uuid = CASE WHEN kind.ord = 1
                                                         THEN old.collector_uuid
                                                         ELSE p_collector END
        LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
        WHERE j.job_id = old.job_id
        ORDER BY kind.ord;
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION queue_claim(p_collector uuid, p_lane text, p_lease double precision, p_soldier bigint, p_classes text[], p_start boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queue_claim(p_collector uuid, p_lane text, p_lease double precision, p_soldier bigint, p_classes text[], p_start boolean) TO bf4ps_collector;

-- The fenced success: the job deleted, its state current, the succeeded event, all only when
-- the lease is the caller's (else nothing is written and `finished` is NULL; with `p_strict`
-- it raises BF401 instead, so a COMMIT sent with it rolls back); with `p_next`, the collector's
-- next claim in the same commit, of any class (no gate: the bench's cycle). A success that
-- continues behind a gate is admission_succeed's (admission room), which calls this. The
-- state's next due time is the policy's freshness of the resource (bf4ps_freshness):
-- `p_freshness` is the caller's, not read (kept in the signature for the builds that pass it).
DROP FUNCTION IF EXISTS queue_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_next boolean, p_lane text, p_lease double precision, p_soldier bigint, p_start boolean, p_gate jsonb);
CREATE OR REPLACE FUNCTION queue_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_strict boolean DEFAULT false, p_next boolean DEFAULT false, p_lane text DEFAULT NULL::text, p_lease double precision DEFAULT NULL::double precision, p_soldier bigint DEFAULT NULL::bigint, p_start boolean DEFAULT false)
 RETURNS SETOF queue_claimed
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    fin bigint;
    r queue_claimed;
BEGIN
    WITH gone AS (
        DELETE FROM collection_jobs d
        WHERE d.job_id = p_job AND d.collector_uuid = p_collector AND d.lease_token = p_token
          AND d.status = 'running' AND d.lease_expires_at > clock_timestamp()
        RETURNING d.*
    ), state AS (
        UPDATE collection_state cs
        SET status = 'current', last_attempt_at = clock_timestamp(),
            last_success_at = clock_timestamp(),
            next_due_at = clock_timestamp() + bf4ps_freshness(gone.resource::text),
            next_attempt_at = NULL, consecutive_failures = 0,
            attempts_total = cs.attempts_total + 1, updated_at = clock_timestamp()
        FROM gone
        WHERE cs.soldier_id = gone.soldier_id AND cs.resource = gone.resource
    ), ev AS (
        INSERT INTO collection_events (
            event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
            lease_token, soldier_id, persona_id, platform, resource, priority_class,
            attempt_number, result, http_status, duration_ms, details, claimed_at, started_at)
        SELECT 'succeeded', g.collector_uuid, c.collector_name, c.hostname, c.egress_key,
               g.lane, g.job_id, g.lease_token, g.soldier_id, s.persona_id,
               COALESCE(s.platform, g.lookup_platform), g.resource, g.priority_class,
               g.attempt_count, 'ok', p_http, p_duration, p_details, g.claimed_at, g.started_at
        FROM gone g
        JOIN collectors c ON c.collector_uuid = g.collector_uuid
        LEFT JOIN soldiers s ON s.soldier_id = g.soldier_id
    )
    SELECT gone.job_id INTO fin FROM gone;
    IF fin IS NULL AND p_strict THEN
        RAISE EXCEPTION 'job %: the lease is no longer ours; nothing is written', p_job
            USING ERRCODE = 'BF401';
    END IF;

    IF fin IS NOT NULL AND p_next THEN
        FOR r IN SELECT * FROM queue_claim(p_collector, p_lane, p_lease, p_soldier, NULL,
                                           p_start) LOOP
            r.finished := fin;
            RETURN NEXT r;
        END LOOP;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    r := NULL;
    r.finished := fin;
    RETURN NEXT r;
END
$function$;
REVOKE ALL ON FUNCTION queue_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_strict boolean, p_next boolean, p_lane text, p_lease double precision, p_soldier bigint, p_start boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queue_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_strict boolean, p_next boolean, p_lane text, p_lease double precision, p_soldier bigint, p_start boolean) TO bf4ps_collector;
