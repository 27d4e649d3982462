-- compatible-from: 0018
-- Least privilege for the runtime roles (docs/operations.md "Roles and what each may do"):
-- every write a collector or the website needs on the queue, the registry, the rate gates, the
-- fleet budget and the ledger goes through a SECURITY DEFINER function with a fixed
-- search_path that enforces its own rule (the lease fence, a seed only of what was never
-- configured, an unsent mark only of a row just counted, ...); the roles keep EXECUTE on those
-- and SELECT only on the columns they read. Lease tokens (collection_jobs, and the events'
-- copy) are read by the scheduler and operators only, players' addresses
-- (interactive_requests.client_key) by the website and operators only. Every change of the
-- fleet's settings (fleet_budget, egress_gates, scheduler_policy) is recorded by a trigger
-- with session_user, whoever made it. The restore guard also notices an in-place
-- `pg_restore --clean` (the ledger's table re-created), from the database alone.
--
-- This migration runs after others that may CREATE OR REPLACE a function (which resets
-- SECURITY DEFINER and its search_path): existing functions are changed with ALTER FUNCTION,
-- and tests/system/test_roles.py fails when any function a runtime role may execute
-- writes as its caller (not SECURITY DEFINER or without a fixed search_path).

-- ---------------------------------------------------------------- no temporary objects
-- A temporary function shadows the schema's (pg_temp is searched first for relations, and a
-- temporary function could be called by name from a careless definer): no runtime role may
-- create temporary tables or functions. (The migrate role and superusers keep TEMP.) A
-- database's own rights are not copied by CREATE DATABASE ... TEMPLATE nor restored by
-- pg_restore without --create: `bf4ps db upgrade` calls this on every run, not only here.
CREATE FUNCTION bf4ps_no_temporary() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM bf4ps_collector, bf4ps_scheduler, '
                   'bf4ps_web, bf4ps_operator', current_database());
END;
$$;
REVOKE EXECUTE ON FUNCTION bf4ps_no_temporary() FROM PUBLIC;
SELECT bf4ps_no_temporary();

-- ---------------------------------------------------------------- table rights taken back
REVOKE INSERT, UPDATE, DELETE ON collection_jobs, collectors, egress_gates, fleet_budget,
    request_ledger, fleet_settings_changes, circuit_holds FROM bf4ps_collector;
REVOKE INSERT, UPDATE, DELETE ON collection_jobs, collectors FROM bf4ps_web;
REVOKE INSERT, UPDATE, DELETE ON egress_gates, fleet_budget, fleet_settings_changes
    FROM bf4ps_operator;
REVOKE UPDATE ON request_ledger FROM bf4ps_operator;
-- a player's request: the look-up collector fills in the soldier it found and the plan
REVOKE UPDATE ON interactive_requests FROM bf4ps_collector;
GRANT UPDATE (soldier_id, resources, eta_at, status, finished_at, message, updated_at)
    ON interactive_requests TO bf4ps_collector;

-- ---------------------------------------------------------------- column reads
-- collection_jobs without lease_token for the collector and the website (a token is the
-- fence of a lease: whoever reads another's could finish or fail its job)
REVOKE SELECT ON collection_jobs FROM bf4ps_collector, bf4ps_web;
GRANT SELECT (job_id, soldier_id, resource, lane, priority_class, status, rank, reason,
              eligible_at, attempt_count, collector_uuid, claimed_at, started_at,
              lease_expires_at, last_error_class, last_error_message, last_error_at,
              request_id, lookup_name, lookup_platform, created_at, updated_at)
    ON collection_jobs TO bf4ps_collector, bf4ps_web;
-- the event log's lease tokens (a reclaimed row carries the new, live lease's), for the
-- collector: everything else of the log
REVOKE SELECT ON collection_events, collection_events_log FROM bf4ps_collector;
GRANT SELECT (event_id, occurred_at, event_type, collector_uuid, collector_name, hostname,
              egress_key, lane, job_id, soldier_id, persona_id, platform, resource,
              priority_class, attempt_number, result, duration_ms, wait_ms, http_status,
              error_class, error_message, details, claimed_at, started_at)
    ON collection_events TO bf4ps_collector;
GRANT SELECT (event_id, ord, occurred_at, event_type, collector_uuid, collector_name, hostname,
              egress_key, lane, job_id, soldier_id, persona_id, platform, resource,
              priority_class, attempt_number, result, duration_ms, wait_ms, http_status,
              error_class, error_message, details)
    ON collection_events_log TO bf4ps_collector;
-- players' addresses: the website (its rate limit) and operators only
REVOKE SELECT ON interactive_requests FROM bf4ps_collector, bf4ps_scheduler;
GRANT SELECT (request_id, soldier_id, lookup_name, platform, status, resources, eta_at,
              first_request_at, finished_at, message, created_at, updated_at)
    ON interactive_requests TO bf4ps_collector, bf4ps_scheduler;

-- ---------------------------------------------------------------- who may do what
-- The caller (the login, not the definer) holds a role: a superuser holds them all.
CREATE FUNCTION bf4ps_caller_holds(role_name text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_has_role(session_user, role_name, 'MEMBER')
$$;

-- ---------------------------------------------------------------- the queue's transitions
ALTER FUNCTION queue_claim(uuid, text, double precision, bigint, text[], boolean)
    SECURITY DEFINER SET search_path FROM CURRENT;
ALTER FUNCTION queue_succeed(bigint, uuid, uuid, double precision, integer, integer, jsonb,
                             boolean, text, double precision, bigint, boolean, jsonb)
    SECURITY DEFINER SET search_path FROM CURRENT;
ALTER FUNCTION admission_slot(text, uuid, bigint, uuid, boolean, double precision,
                              double precision, double precision, jsonb, text, text)
    SECURITY DEFINER SET search_path FROM CURRENT;
ALTER FUNCTION bf4ps_coverage_fold() SECURITY DEFINER SET search_path FROM CURRENT;

-- claimed → running at the slot (fenced by the lease)
CREATE FUNCTION bf4ps_job_start(p_job bigint, p_collector uuid, p_token uuid,
                                p_started_at timestamptz, p_lease double precision)
RETURNS TABLE (started_at timestamptz, claimed_at timestamptz, lease_expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collection_jobs j
    SET status = 'running', started_at = GREATEST(p_started_at, j.claimed_at),
        lease_expires_at = GREATEST(p_started_at, clock_timestamp())
                           + make_interval(secs => p_lease),
        updated_at = clock_timestamp()
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status = 'claimed' AND j.lease_expires_at > clock_timestamp()
    RETURNING j.started_at, j.claimed_at, j.lease_expires_at;
END
$$;

-- a running job's start moved to the later slot it was sent in (fenced by the lease)
CREATE FUNCTION bf4ps_job_reslot(p_job bigint, p_collector uuid, p_token uuid,
                                 p_sent_at timestamptz, p_lease double precision)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE collection_jobs j
    SET started_at = p_sent_at,
        lease_expires_at = GREATEST(j.lease_expires_at,
                                    p_sent_at + make_interval(secs => p_lease)),
        updated_at = clock_timestamp()
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status = 'running' AND j.lease_expires_at > clock_timestamp();
END
$$;

CREATE FUNCTION bf4ps_job_renew(p_job bigint, p_collector uuid, p_token uuid,
                                p_lease double precision)
RETURNS TABLE (lease_expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collection_jobs j
    SET lease_expires_at = GREATEST(j.lease_expires_at,
                                    clock_timestamp() + make_interval(secs => p_lease))
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status IN ('claimed', 'running') AND j.lease_expires_at > clock_timestamp()
    RETURNING j.lease_expires_at;
END
$$;

-- a restarted collector's leases from its previous process end now (its own only)
CREATE FUNCTION bf4ps_jobs_expire_abandoned(p_collector uuid)
RETURNS TABLE (job_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collection_jobs j
    SET lease_expires_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE j.collector_uuid = p_collector AND j.lease_token IS NOT NULL
      AND j.lease_expires_at > clock_timestamp()
    RETURNING j.job_id;
END
$$;

-- the fence of finalize and fail: the row, locked, when the caller still holds its lease
CREATE FUNCTION bf4ps_job_lock_owned(p_job bigint, p_collector uuid, p_token uuid,
                                     p_statuses text[])
RETURNS TABLE (job_id bigint, soldier_id bigint, resource text, lane text,
               priority_class text, status text, attempt_count integer, lease_token uuid,
               claimed_at timestamptz, started_at timestamptz, request_id uuid,
               lookup_name text, lookup_platform text, persona_id bigint, platform text,
               collector_name text, hostname text, egress_key text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

CREATE FUNCTION bf4ps_job_owned_now(p_job bigint, p_collector uuid, p_token uuid)
RETURNS TABLE (job_id bigint, now timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.job_id, clock_timestamp()
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector AND j.lease_token = p_token
      AND j.status = 'running' AND j.lease_expires_at > clock_timestamp();
END
$$;

-- a job's state as its holder sees it (the token shown only to the lease's holder)
CREATE FUNCTION bf4ps_job_snapshot(p_job bigint, p_token uuid)
RETURNS TABLE (job_id bigint, soldier_id bigint, resource text, lane text,
               priority_class text, status text, attempt_count integer, collector_uuid uuid,
               lease_token uuid, lease_expires_at timestamptz, persona_id bigint,
               platform text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

CREATE FUNCTION bf4ps_job_note_error(p_job bigint, p_token uuid, p_error_class text,
                                     p_error_message text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE collection_jobs j
    SET last_error_class = p_error_class, last_error_message = p_error_message,
        last_error_at = clock_timestamp()
    WHERE j.job_id = p_job AND j.lease_token = p_token;
END
$$;

-- a parked job leaves the queue: only by its lease's holder (the token)
CREATE FUNCTION bf4ps_job_delete(p_job bigint, p_token uuid)
RETURNS TABLE (job_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    DELETE FROM collection_jobs j WHERE j.job_id = p_job AND j.lease_token = p_token
    RETURNING j.job_id;
END
$$;

CREATE FUNCTION bf4ps_job_retry(p_job bigint, p_token uuid, p_eligible_at timestamptz,
                                p_error_class text, p_error_message text)
RETURNS TABLE (job_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

-- a claimed (never sent) job back to pending, with its released event
CREATE FUNCTION bf4ps_job_release(p_job bigint, p_collector uuid, p_token uuid, p_why text)
RETURNS TABLE (job_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

-- ---------------------------------------------------------------- enqueue
-- Whoever does not hold bf4ps_scheduler (the website, a look-up's collector) creates and
-- promotes interactive jobs only: a background job is never rewritten by them, only lifted
-- into the interactive lane by a player's request.
CREATE FUNCTION bf4ps_enqueue_lane_allowed(p_lane text) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF p_lane <> 'interactive' AND NOT bf4ps_caller_holds('bf4ps_scheduler') THEN
        RAISE EXCEPTION 'role % may enqueue interactive jobs only, not %', session_user,
            p_lane USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

CREATE FUNCTION bf4ps_enqueue_insert(p_soldier bigint, p_resource text, p_lane text,
                                     p_class text, p_rank timestamptz, p_reason text,
                                     p_eligible_at timestamptz, p_request uuid,
                                     p_lookup_name text, p_lookup_platform text)
RETURNS TABLE (job_id bigint, lane text, priority_class text, status text,
               attempt_count integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

CREATE FUNCTION bf4ps_enqueue_lock_existing(p_soldier bigint, p_resource text)
RETURNS TABLE (job_id bigint, lane text, priority_class text, status text, rank timestamptz,
               request_id uuid, attempt_count integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.job_id, j.lane::text, j.priority_class::text, j.status::text, j.rank,
           j.request_id, j.attempt_count::integer
    FROM collection_jobs j
    WHERE j.soldier_id = p_soldier AND j.resource = p_resource
    FOR UPDATE;
END
$$;

CREATE FUNCTION bf4ps_enqueue_promote(p_job bigint, p_lane text, p_class text,
                                      p_rank timestamptz, p_reason text, p_request uuid,
                                      p_eligible_at timestamptz)
RETURNS TABLE (job_id bigint, lane text, priority_class text, status text,
               attempt_count integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

CREATE FUNCTION bf4ps_job_attach_request(p_job bigint, p_request uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE collection_jobs j SET request_id = p_request, updated_at = now()
    WHERE j.job_id = p_job AND j.request_id IS NULL;
END
$$;

-- ---------------------------------------------------------------- the circuit breaker
-- Holding back a lane/resource's pending jobs (only their eligibility moves) and releasing
-- them: whichever collector sees the circuit open or close.
CREATE FUNCTION bf4ps_circuit_hold_pending(p_lane text, p_resource text,
                                           p_hold_seconds double precision)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    WITH held AS (
        UPDATE collection_jobs j
        SET eligible_at = GREATEST(j.eligible_at,
                                   clock_timestamp() + make_interval(secs => p_hold_seconds)),
            updated_at = clock_timestamp()
        WHERE j.lane = p_lane AND j.resource = p_resource AND j.status = 'pending'
        RETURNING j.job_id
    )
    INSERT INTO circuit_holds (job_id, lane, resource)
    SELECT held.job_id, p_lane, p_resource FROM held
    ON CONFLICT (job_id) DO NOTHING;
END
$$;

CREATE FUNCTION bf4ps_circuit_hold_job(p_job bigint, p_lane text, p_resource text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO circuit_holds (job_id, lane, resource) VALUES (p_job, p_lane, p_resource)
    ON CONFLICT (job_id) DO NOTHING;
END
$$;

CREATE FUNCTION bf4ps_circuit_release_one(p_lane text, p_resource text)
RETURNS TABLE (job_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collection_jobs j
    SET eligible_at = clock_timestamp(), updated_at = clock_timestamp()
    FROM (
        SELECT c.job_id FROM circuit_holds h
        JOIN collection_jobs c ON c.job_id = h.job_id AND c.status = 'pending'
        WHERE h.lane = p_lane AND h.resource = p_resource
        ORDER BY c.rank, c.job_id
        LIMIT 1
        FOR UPDATE OF c SKIP LOCKED
    ) AS pick
    WHERE j.job_id = pick.job_id
    RETURNING j.job_id;
END
$$;

CREATE FUNCTION bf4ps_circuit_release_all(p_lane text, p_resource text)
RETURNS TABLE (n bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH gone AS (
        DELETE FROM circuit_holds h WHERE h.lane = p_lane AND h.resource = p_resource
        RETURNING h.job_id
    ), released AS (
        UPDATE collection_jobs j
        SET eligible_at = clock_timestamp(), updated_at = clock_timestamp()
        FROM gone WHERE j.job_id = gone.job_id AND j.status = 'pending'
        RETURNING j.job_id
    )
    SELECT count(*) FROM released;
END
$$;

-- ---------------------------------------------------------------- the registry
-- A collector writes its own health only: registration, start, heartbeat, clock, stop. Its
-- flags (enabled, drained) are the operators' and the console's (bf4ps_collector_set_flags).
CREATE FUNCTION bf4ps_collector_insert(p_collector uuid, p_name text, p_hostname text,
                                       p_lane text, p_egress text, p_source_address text,
                                       p_version text)
RETURNS SETOF collectors
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key,
                            source_address, software_version)
    VALUES (p_collector, p_name, p_hostname, p_lane, p_egress, p_source_address::inet,
            p_version)
    RETURNING *;
END
$$;

CREATE FUNCTION bf4ps_collector_started(p_collector uuid, p_version text, p_pid integer,
                                        p_source_address text)
RETURNS TABLE (c collectors, previous_health text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    before text;
    after collectors;
BEGIN
    SELECT x.health INTO before FROM collectors x WHERE x.collector_uuid = p_collector
    FOR UPDATE;
    UPDATE collectors x
    SET started_at = now(), stopped_at = NULL, software_version = p_version, pid = p_pid,
        source_address = p_source_address::inet, last_heartbeat_at = now(),
        health = 'healthy', heartbeat_lost_at = NULL, updated_at = now()
    WHERE x.collector_uuid = p_collector
    RETURNING x.* INTO after;
    IF FOUND THEN
        RETURN QUERY SELECT after, before;
    END IF;
END
$$;

CREATE FUNCTION bf4ps_collector_heartbeat(p_collector uuid)
RETURNS TABLE (enabled boolean, drained boolean, retired_at timestamptz,
               previous_health text, lost_since timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collectors c
    SET last_heartbeat_at = now(), health = 'healthy', heartbeat_lost_at = NULL,
        updated_at = now()
    FROM (SELECT x.collector_uuid, x.health AS previous_health, x.heartbeat_lost_at AS lost
          FROM collectors x WHERE x.collector_uuid = p_collector FOR UPDATE) AS prev
    WHERE c.collector_uuid = prev.collector_uuid
    RETURNING c.enabled, c.drained, c.retired_at, prev.previous_health::text, prev.lost;
END
$$;

CREATE FUNCTION bf4ps_collector_mark_lost(p_collector uuid)
RETURNS TABLE (collector_uuid uuid, collector_name text, hostname text, egress_key text,
               lane text, last_heartbeat_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collectors c
    SET health = 'lost', heartbeat_lost_at = now(), updated_at = now()
    WHERE c.collector_uuid = p_collector AND c.health IN ('healthy', 'unknown')
      AND c.retired_at IS NULL
    RETURNING c.collector_uuid, c.collector_name::text, c.hostname::text, c.egress_key::text,
              c.lane::text, c.last_heartbeat_at;
END
$$;

CREATE FUNCTION bf4ps_collector_stopped(p_collector uuid)
RETURNS TABLE (collector_uuid uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collectors c
    SET health = 'stopped', stopped_at = now(), heartbeat_lost_at = NULL, pid = NULL,
        updated_at = now()
    WHERE c.collector_uuid = p_collector
    RETURNING c.collector_uuid;
END
$$;

CREATE FUNCTION bf4ps_collector_clock(p_collector uuid, p_offset double precision,
                                      p_rtt double precision, p_skewed boolean)
RETURNS TABLE (was_skewed_since timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collectors c
    SET clock_offset_seconds = p_offset, clock_rtt_seconds = p_rtt,
        clock_checked_at = clock_timestamp(),
        clock_skewed_since = CASE WHEN p_skewed
                                  THEN COALESCE(prev.skewed, clock_timestamp()) END
    FROM (SELECT x.collector_uuid, x.clock_skewed_since AS skewed FROM collectors x
          WHERE x.collector_uuid = p_collector FOR UPDATE) AS prev
    WHERE c.collector_uuid = prev.collector_uuid
    RETURNING prev.skewed;
END
$$;

-- Retiring a registration (`--replace`, `bf4ps collector retire`). A collector may retire
-- only a registration that is not alive (no heartbeat for 30 s, or stopped/lost) and that no
-- operator disabled or drained: it cannot switch off a working collector.
CREATE FUNCTION bf4ps_collector_retire(p_collector uuid, p_replaced_by uuid)
RETURNS TABLE (collector_uuid uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    x collectors;
BEGIN
    SELECT * INTO x FROM collectors c WHERE c.collector_uuid = p_collector FOR UPDATE;
    IF FOUND AND x.retired_at IS NULL AND NOT bf4ps_caller_holds('bf4ps_web') AND (
            NOT x.enabled OR x.drained OR (x.health = 'healthy'
                AND x.last_heartbeat_at > clock_timestamp() - interval '30 seconds')) THEN
        RAISE EXCEPTION 'collector % is %: only an operator may retire it', x.collector_name,
            CASE WHEN NOT x.enabled THEN 'disabled' WHEN x.drained THEN 'drained'
                 ELSE 'alive (a heartbeat in the last 30 s)' END
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY
    UPDATE collectors c
    SET retired_at = now(), enabled = false, replaced_by = p_replaced_by,
        health = CASE WHEN c.health = 'lost' THEN 'stopped' ELSE c.health END,
        heartbeat_lost_at = NULL, updated_at = now()
    WHERE c.collector_uuid = p_collector AND c.retired_at IS NULL
    RETURNING c.collector_uuid;
END
$$;

-- the replacement's uuid on a registration retired for it (only one not replaced yet)
CREATE FUNCTION bf4ps_collector_replaced_by(p_collector uuid, p_replaced_by uuid)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE collectors c SET replaced_by = p_replaced_by
    WHERE c.collector_uuid = p_collector AND c.retired_at IS NOT NULL
      AND (c.replaced_by IS NULL OR bf4ps_caller_holds('bf4ps_web'));
END
$$;

CREATE FUNCTION bf4ps_collector_set_flags(p_name text, p_enabled boolean, p_drained boolean,
                                          p_reason text)
RETURNS SETOF collectors
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    UPDATE collectors c
    SET enabled = COALESCE(p_enabled, c.enabled),
        drained = COALESCE(p_drained, c.drained),
        drained_at = CASE WHEN p_drained IS NULL THEN c.drained_at
                          WHEN p_drained THEN COALESCE(c.drained_at, now()) END,
        drain_reason = CASE WHEN p_drained IS NULL THEN c.drain_reason
                            WHEN p_drained THEN p_reason END,
        updated_at = now()
    WHERE lower(c.collector_name) = lower(p_name) AND c.retired_at IS NULL
    RETURNING c.*;
END
$$;

-- ---------------------------------------------------------------- rate gates and the ledger
-- A throttle's cool-down and its decay: the streak and cool-down only, never the pacing.
CREATE FUNCTION bf4ps_gate_throttled(p_egress text, p_base double precision,
                                     p_max double precision)
RETURNS TABLE (throttle_streak integer, cooldown_until timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

CREATE FUNCTION bf4ps_gate_recovered(p_egress text)
RETURNS TABLE (throttle_streak integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE egress_gates g
    SET throttle_streak = g.throttle_streak - 1, updated_at = now()
    WHERE g.egress_key = p_egress AND g.throttle_streak > 0
      AND (g.cooldown_until IS NULL OR g.cooldown_until <= clock_timestamp())
    RETURNING g.throttle_streak::integer;
END
$$;

-- A collector's first start on an egress never configured seeds its gate; an existing gate
-- is never changed by it (nothing returned).
CREATE FUNCTION bf4ps_gate_seed(p_egress text, p_min_interval double precision,
                                p_window_requests integer, p_window_seconds double precision,
                                p_reason text)
RETURNS SETOF egress_gates
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    RETURN QUERY
    INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds)
    VALUES (p_egress, p_min_interval, p_window_requests, p_window_seconds)
    ON CONFLICT (egress_key) DO NOTHING
    RETURNING *;
END
$$;

-- ... and the first fleet budget, only when none was ever configured (a removed one stays so)
CREATE FUNCTION bf4ps_budget_seed(p_requests integer, p_window_seconds double precision,
                                  p_reason text)
RETURNS SETOF fleet_budget
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    RETURN QUERY
    UPDATE fleet_budget b
    SET requests = p_requests, window_seconds = p_window_seconds, configured_at = now(),
        updated_at = now()
    WHERE b.budget_id = 1 AND b.configured_at IS NULL
    RETURNING b.*;
END
$$;

-- Its collector gave a slot up before writing a byte: the row stops counting. Only the row's
-- own collector, while it still holds the row's job, and only within 10 s of the slot: a row
-- of a request that may have gone out is never freed.
CREATE FUNCTION bf4ps_ledger_unsent(p_request bigint, p_collector uuid, p_token uuid)
RETURNS TABLE (request_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE request_ledger l SET unsent_at = clock_timestamp()
    WHERE l.request_id = p_request AND l.collector_uuid = p_collector AND l.unsent_at IS NULL
      AND l.slot_at > clock_timestamp() - interval '10 seconds'
      AND (l.job_id IS NULL  -- a recon request: of no queue job
           OR EXISTS (SELECT 1 FROM collection_jobs j
                      WHERE j.job_id = l.job_id AND j.collector_uuid = p_collector
                        AND j.lease_token = p_token))
    RETURNING l.request_id;
END
$$;

-- an operator's own request (`bf4ps battlelog fetch`, recon) given up, under the same bound
CREATE FUNCTION bf4ps_ledger_unsent_operator(p_request bigint)
RETURNS TABLE (request_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE request_ledger l SET unsent_at = clock_timestamp()
    WHERE l.request_id = p_request AND l.collector_uuid IS NULL AND l.job_id IS NULL
      AND l.unsent_at IS NULL AND l.slot_at > clock_timestamp() - interval '10 seconds'
    RETURNING l.request_id;
END
$$;

-- ---------------------------------------------------------------- fleet settings, audited
-- An operator's change of an egress's gate (`bf4ps gate set`) or of the fleet budget
-- (`bf4ps budget set|remove`): the audit trigger below records it with the reason given.
CREATE FUNCTION bf4ps_gate_set(p_egress text, p_min_interval double precision,
                               p_window_requests integer, p_window_seconds double precision,
                               p_cooldown_seconds double precision, p_end_cooldown boolean,
                               p_create boolean, p_reason text)
RETURNS SETOF egress_gates
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

CREATE FUNCTION bf4ps_budget_set(p_requests integer, p_window_seconds double precision,
                                 p_configured boolean, p_reason text)
RETURNS SETOF fleet_budget
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

-- `bf4ps recon`'s ladder: one stage's pacing (an operator's command)
CREATE FUNCTION bf4ps_recon_gate_interval(p_egress text, p_min_interval double precision)
RETURNS TABLE (min_interval_seconds double precision)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('bf4ps.change_reason', 'bf4ps recon: a ladder stage', true);
    RETURN QUERY
    UPDATE egress_gates g SET min_interval_seconds = p_min_interval, updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.min_interval_seconds;
END
$$;

-- The audit: every change of a gate's pacing or cool-down, of the fleet budget, or of a policy
-- key (the budget's class shares among them) gets a fleet_settings_changes row and a
-- fleet_settings_changed event, with session_user as who made it — also a superuser's direct
-- UPDATE. The reason is the one an audited function set for its transaction
-- (bf4ps.change_reason), else none. A gate's and the budget's updated_by is set here too.
ALTER TABLE fleet_settings_changes DROP CONSTRAINT fleet_settings_changes_setting_check;
ALTER TABLE fleet_settings_changes ADD CONSTRAINT fleet_settings_changes_setting_check
    CHECK (setting IN ('gate', 'budget', 'shares', 'policy'));

CREATE FUNCTION bf4ps_settings_stamp() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    NEW.updated_by := left(session_user, 200);
    RETURN NEW;
END
$$;

CREATE FUNCTION bf4ps_settings_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    kind text;
    subj text;
    before jsonb;
    after jsonb;
    why text := NULLIF(current_setting('bf4ps.change_reason', true), '');
    id bigint;
BEGIN
    IF TG_TABLE_NAME = 'egress_gates' THEN
        kind := 'gate';
        subj := COALESCE(NEW.egress_key, OLD.egress_key);
        IF TG_OP <> 'INSERT' THEN
            before := jsonb_build_object(
                'min_interval_seconds', OLD.min_interval_seconds,
                'window_requests', OLD.window_requests, 'window_seconds', OLD.window_seconds,
                'cooldown_until', OLD.cooldown_until, 'throttle_streak', OLD.throttle_streak);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            after := jsonb_build_object(
                'min_interval_seconds', NEW.min_interval_seconds,
                'window_requests', NEW.window_requests, 'window_seconds', NEW.window_seconds,
                'cooldown_until', NEW.cooldown_until, 'throttle_streak', NEW.throttle_streak);
        END IF;
    ELSIF TG_TABLE_NAME = 'fleet_budget' THEN
        kind := 'budget';
        subj := 'fleet';
        before := jsonb_build_object('requests', OLD.requests,
                                     'window_seconds', OLD.window_seconds);
        after := jsonb_build_object('requests', NEW.requests,
                                    'window_seconds', NEW.window_seconds);
    ELSE
        subj := COALESCE(NEW.key, OLD.key);
        kind := CASE WHEN subj LIKE 'budget\_%' THEN 'shares' ELSE 'policy' END;
        IF TG_OP <> 'INSERT' THEN
            before := jsonb_build_object(subj, OLD.value);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            after := jsonb_build_object(subj, NEW.value);
        END IF;
    END IF;
    IF before IS NOT DISTINCT FROM after THEN
        RETURN NULL;
    END IF;
    INSERT INTO fleet_settings_changes (setting, subject, old_value, new_value, changed_by,
                                        reason)
    VALUES (kind, left(subj, 100), before, after, left(session_user, 200), left(why, 200))
    RETURNING change_id INTO id;
    INSERT INTO collection_events (event_type, egress_key, result, details)
    VALUES ('fleet_settings_changed', CASE WHEN kind = 'gate' THEN subj END, kind,
            jsonb_build_object('change_id', id, 'setting', kind, 'subject', subj,
                               'old', before, 'new', after, 'by', session_user::text,
                               'reason', why));
    RETURN NULL;
END
$$;

-- A gate's row changes on every admission (its next slot, its count) and on a throttle (its
-- streak and cool-down, the throttle's own event): the triggers fire only for its pacing and
-- for a cool-down set by other than a throttle (an operator's).
CREATE TRIGGER settings_stamp BEFORE INSERT ON egress_gates
    FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_stamp();
CREATE TRIGGER settings_stamp_change BEFORE UPDATE ON egress_gates
    FOR EACH ROW WHEN (OLD.min_interval_seconds IS DISTINCT FROM NEW.min_interval_seconds
                       OR OLD.window_requests IS DISTINCT FROM NEW.window_requests
                       OR OLD.window_seconds IS DISTINCT FROM NEW.window_seconds
                       OR (OLD.cooldown_until IS DISTINCT FROM NEW.cooldown_until
                           AND OLD.last_throttle_at IS NOT DISTINCT FROM NEW.last_throttle_at))
    EXECUTE FUNCTION bf4ps_settings_stamp();
CREATE TRIGGER settings_audit AFTER INSERT OR DELETE ON egress_gates
    FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();
CREATE TRIGGER settings_audit_change AFTER UPDATE ON egress_gates
    FOR EACH ROW WHEN (OLD.min_interval_seconds IS DISTINCT FROM NEW.min_interval_seconds
                       OR OLD.window_requests IS DISTINCT FROM NEW.window_requests
                       OR OLD.window_seconds IS DISTINCT FROM NEW.window_seconds
                       OR (OLD.cooldown_until IS DISTINCT FROM NEW.cooldown_until
                           AND OLD.last_throttle_at IS NOT DISTINCT FROM NEW.last_throttle_at))
    EXECUTE FUNCTION bf4ps_settings_audit();
CREATE TRIGGER settings_stamp BEFORE UPDATE ON fleet_budget
    FOR EACH ROW WHEN (OLD.requests IS DISTINCT FROM NEW.requests
                       OR OLD.window_seconds IS DISTINCT FROM NEW.window_seconds)
    EXECUTE FUNCTION bf4ps_settings_stamp();
CREATE TRIGGER settings_audit AFTER UPDATE ON fleet_budget
    FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();
CREATE TRIGGER settings_stamp BEFORE INSERT OR UPDATE ON scheduler_policy
    FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_stamp();
CREATE TRIGGER settings_audit AFTER INSERT OR UPDATE OR DELETE ON scheduler_policy
    FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();

-- ---------------------------------------------------------------- the restore guard
-- An in-place `pg_restore --clean` keeps the cluster, its timeline and the database (same
-- system identifier, timeline and oid): but it drops and re-creates every table, so
-- request_ledger gets a new oid, while the restored guard row keeps the one it had when the
-- dump was taken. A guard row never filled (a dump of a database never checked) is a reason
-- too when the ledger's table is not the one the schema made (recorded by this migration).
-- The check takes no reason from its caller any more: a role that could name one could hold
-- the whole fleet.
ALTER TABLE restore_guard ADD COLUMN ledger_relid oid;

DROP FUNCTION bf4ps_restore_check(text);
CREATE FUNCTION bf4ps_restore_check()
RETURNS TABLE (hold_until timestamptz, reason text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    g restore_guard;
    sysid bigint := (SELECT c.system_identifier FROM pg_control_system() c);
    tl integer := (SELECT c.timeline_id FROM pg_control_checkpoint() c);
    dboid oid := (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
    ledger oid := 'request_ledger'::regclass::oid;
    why text;
    span double precision;
BEGIN
    SELECT * INTO g FROM restore_guard;
    IF g.system_identifier = sysid AND g.timeline_id = tl AND g.database_oid = dboid
            AND g.ledger_relid = ledger THEN
        RETURN QUERY SELECT g.hold_until, g.reason;  -- the common case: one read, no lock
        RETURN;
    END IF;
    SELECT * INTO g FROM restore_guard FOR UPDATE;
    why := CASE
        WHEN g.system_identifier IS NULL THEN
            CASE WHEN g.ledger_relid IS DISTINCT FROM ledger THEN
                'the restore guard was never filled and request_ledger is not the table the '
                || 'schema made (a dump of a database never checked was restored): the ledger '
                || 'may miss requests' END  -- else a new database, whole
        WHEN g.system_identifier <> sysid THEN 'restored into another cluster (system '
            || 'identifier ' || g.system_identifier || ' -> ' || sysid || ')'
        WHEN g.timeline_id <> tl THEN 'the cluster changed timeline (' || g.timeline_id
            || ' -> ' || tl || '): a point-in-time recovery or a promoted standby'
        WHEN g.database_oid <> dboid THEN 'the database was re-created (a restored dump)'
        WHEN g.ledger_relid <> ledger THEN 'request_ledger was re-created (table '
            || g.ledger_relid || ' -> ' || ledger || '): a dump restored in place '
            || '(pg_restore --clean)'
    END;
    IF why IS NOT NULL THEN
        span := greatest(1.0,
            (SELECT b.window_seconds FROM fleet_budget b WHERE b.requests IS NOT NULL),
            (SELECT max(greatest(e.window_seconds, e.min_interval_seconds)) FROM egress_gates e));
        UPDATE restore_guard r SET hold_until = greatest(r.hold_until,
                                                         now() + make_interval(secs => span)),
            detected_at = now(), reason = left(why, 500);
    END IF;
    UPDATE restore_guard r SET system_identifier = sysid, timeline_id = tl,
        database_oid = dboid, ledger_relid = ledger, updated_at = now();
    RETURN QUERY SELECT r.hold_until, r.reason FROM restore_guard r;
END;
$$;
-- The guard learns the ledger's table now, filled or not: a new database's row stays
-- otherwise empty until the first check (a template's copy keeps the table's oid and is a new
-- database), while a restored dump's row, never filled, names a table that is gone.
UPDATE restore_guard SET ledger_relid = 'request_ledger'::regclass;

-- ---------------------------------------------------------------- execute rights
REVOKE EXECUTE ON FUNCTION
    queue_claim(uuid, text, double precision, bigint, text[], boolean),
    queue_succeed(bigint, uuid, uuid, double precision, integer, integer, jsonb, boolean,
                  text, double precision, bigint, boolean, jsonb),
    admission_slot(text, uuid, bigint, uuid, boolean, double precision, double precision,
                   double precision, jsonb, text, text),
    bf4ps_coverage_fold(), bf4ps_restore_check(), bf4ps_enqueue_lane_allowed(text),
    bf4ps_job_start(bigint, uuid, uuid, timestamptz, double precision),
    bf4ps_job_reslot(bigint, uuid, uuid, timestamptz, double precision),
    bf4ps_job_renew(bigint, uuid, uuid, double precision),
    bf4ps_jobs_expire_abandoned(uuid),
    bf4ps_job_lock_owned(bigint, uuid, uuid, text[]),
    bf4ps_job_owned_now(bigint, uuid, uuid),
    bf4ps_job_snapshot(bigint, uuid),
    bf4ps_job_note_error(bigint, uuid, text, text),
    bf4ps_job_delete(bigint, uuid),
    bf4ps_job_retry(bigint, uuid, timestamptz, text, text),
    bf4ps_job_release(bigint, uuid, uuid, text),
    bf4ps_enqueue_insert(bigint, text, text, text, timestamptz, text, timestamptz, uuid, text,
                         text),
    bf4ps_enqueue_lock_existing(bigint, text),
    bf4ps_enqueue_promote(bigint, text, text, timestamptz, text, uuid, timestamptz),
    bf4ps_job_attach_request(bigint, uuid),
    bf4ps_circuit_hold_pending(text, text, double precision),
    bf4ps_circuit_hold_job(bigint, text, text),
    bf4ps_circuit_release_one(text, text),
    bf4ps_circuit_release_all(text, text),
    bf4ps_collector_insert(uuid, text, text, text, text, text, text),
    bf4ps_collector_started(uuid, text, integer, text),
    bf4ps_collector_heartbeat(uuid),
    bf4ps_collector_mark_lost(uuid),
    bf4ps_collector_stopped(uuid),
    bf4ps_collector_clock(uuid, double precision, double precision, boolean),
    bf4ps_collector_retire(uuid, uuid),
    bf4ps_collector_replaced_by(uuid, uuid),
    bf4ps_collector_set_flags(text, boolean, boolean, text),
    bf4ps_gate_throttled(text, double precision, double precision),
    bf4ps_gate_recovered(text),
    bf4ps_gate_seed(text, double precision, integer, double precision, text),
    bf4ps_budget_seed(integer, double precision, text),
    bf4ps_ledger_unsent(bigint, uuid, uuid),
    bf4ps_ledger_unsent_operator(bigint),
    bf4ps_gate_set(text, double precision, integer, double precision, double precision,
                   boolean, boolean, text),
    bf4ps_budget_set(integer, double precision, boolean, text),
    bf4ps_recon_gate_interval(text, double precision),
    bf4ps_settings_stamp(), bf4ps_settings_audit()
FROM PUBLIC;

-- what a collector runs (the operator holds bf4ps_collector: `bf4ps battlelog fetch`, recon)
GRANT EXECUTE ON FUNCTION
    queue_claim(uuid, text, double precision, bigint, text[], boolean),
    queue_succeed(bigint, uuid, uuid, double precision, integer, integer, jsonb, boolean,
                  text, double precision, bigint, boolean, jsonb),
    admission_slot(text, uuid, bigint, uuid, boolean, double precision, double precision,
                   double precision, jsonb, text, text),
    bf4ps_restore_check(), bf4ps_enqueue_lane_allowed(text),
    bf4ps_job_start(bigint, uuid, uuid, timestamptz, double precision),
    bf4ps_job_reslot(bigint, uuid, uuid, timestamptz, double precision),
    bf4ps_job_renew(bigint, uuid, uuid, double precision),
    bf4ps_jobs_expire_abandoned(uuid),
    bf4ps_job_lock_owned(bigint, uuid, uuid, text[]),
    bf4ps_job_owned_now(bigint, uuid, uuid),
    bf4ps_job_snapshot(bigint, uuid),
    bf4ps_job_note_error(bigint, uuid, text, text),
    bf4ps_job_delete(bigint, uuid),
    bf4ps_job_retry(bigint, uuid, timestamptz, text, text),
    bf4ps_job_release(bigint, uuid, uuid, text),
    bf4ps_enqueue_insert(bigint, text, text, text, timestamptz, text, timestamptz, uuid, text,
                         text),
    bf4ps_enqueue_lock_existing(bigint, text),
    bf4ps_enqueue_promote(bigint, text, text, timestamptz, text, uuid, timestamptz),
    bf4ps_job_attach_request(bigint, uuid),
    bf4ps_circuit_hold_pending(text, text, double precision),
    bf4ps_circuit_hold_job(bigint, text, text),
    bf4ps_circuit_release_one(text, text),
    bf4ps_circuit_release_all(text, text),
    bf4ps_collector_insert(uuid, text, text, text, text, text, text),
    bf4ps_collector_started(uuid, text, integer, text),
    bf4ps_collector_heartbeat(uuid),
    bf4ps_collector_mark_lost(uuid),
    bf4ps_collector_stopped(uuid),
    bf4ps_collector_clock(uuid, double precision, double precision, boolean),
    bf4ps_collector_retire(uuid, uuid),
    bf4ps_collector_replaced_by(uuid, uuid),
    bf4ps_gate_throttled(text, double precision, double precision),
    bf4ps_gate_recovered(text),
    bf4ps_gate_seed(text, double precision, integer, double precision, text),
    bf4ps_budget_seed(integer, double precision, text),
    bf4ps_ledger_unsent(bigint, uuid, uuid)
TO bf4ps_collector;
-- the website: players' requests (enqueue), the console's drain/resume, the restore hold
GRANT EXECUTE ON FUNCTION
    bf4ps_restore_check(), bf4ps_enqueue_lane_allowed(text),
    bf4ps_enqueue_insert(bigint, text, text, text, timestamptz, text, timestamptz, uuid, text,
                         text),
    bf4ps_enqueue_lock_existing(bigint, text),
    bf4ps_enqueue_promote(bigint, text, text, timestamptz, text, uuid, timestamptz),
    bf4ps_job_attach_request(bigint, uuid),
    bf4ps_collector_set_flags(text, boolean, boolean, text),
    bf4ps_collector_retire(uuid, uuid),
    bf4ps_collector_replaced_by(uuid, uuid)
TO bf4ps_web;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(), bf4ps_coverage_fold(),
    bf4ps_enqueue_lane_allowed(text), bf4ps_collector_mark_lost(uuid)
TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION
    bf4ps_ledger_unsent_operator(bigint),
    bf4ps_gate_set(text, double precision, integer, double precision, double precision,
                   boolean, boolean, text),
    bf4ps_budget_set(integer, double precision, boolean, text),
    bf4ps_recon_gate_interval(text, double precision)
TO bf4ps_operator;
