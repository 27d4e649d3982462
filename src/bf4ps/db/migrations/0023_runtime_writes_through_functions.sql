-- compatible-from: 0023
-- The rest of least privilege (docs/operations.md "Roles and what each may do"), after 0018:
--
-- 1. Events: no runtime role inserts into collection_events any more. Each event a collector,
--    the website or the scheduler records goes through bf4ps_event_record, which fixes what the
--    role may not choose: which event types it may write at all; a collector's own identity
--    (a collector-role login writes events only of a registration its login made, and the
--    name, host and egress come from the registry); no forged job or lease outcome (a `failed`
--    only of a lease the caller holds now, a `retry_scheduled`/`unavailable` only after that
--    lease's own `failed`, once; `succeeded`, `released`, `lease_expired`, `reclaimed` and the
--    settings audit only from the definer functions and triggers that make those transitions).
-- 2. Lease tokens of the event log (an ended lease's, or a reclaimed row's copy of a live one)
--    and every partition's direct read: the website reads the log's other columns only, as the
--    collector already did (0018).
-- 3. The scheduler's queue writes (feeder, reaper, BF4SW intake, the heartbeat detector, the
--    parked re-check) are SECURITY DEFINER functions with a fixed search_path, one call per
--    batch; the scheduler and operators keep EXECUTE, and lose INSERT/UPDATE/DELETE on
--    collection_jobs and collectors and INSERT on collection_events. Each is one RETURN QUERY
--    planned with its call's values (plan_cache_mode = force_custom_plan), as the named query
--    it replaces was: a generic plan (a LANGUAGE sql function's) misjudged the feeder's LIMIT.
--    The statement uses $n parameters so that a test can PREPARE it and EXPLAIN its plan
--    (tests/db/test_feeder.py).
-- 4. The /ops login lock-out counts (web/login_limit.py) live in ops_login_failures, written
--    only through bf4ps_ops_login_attempt: every web process and a restart share them.
-- 5. The restore guard also notices a rewind that keeps every identity (a running collector's
--    signed receipt of a ledger row the database no longer has; below).

-- ---------------------------------------------------------------- a registration's login
-- The login that registered (or first started) a collector: its events are that login's only.
ALTER TABLE collectors ADD COLUMN db_login text;

CREATE OR REPLACE FUNCTION bf4ps_collector_insert(p_collector uuid, p_name text,
                                                  p_hostname text, p_lane text, p_egress text,
                                                  p_source_address text, p_version text)
RETURNS SETOF collectors
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key,
                            source_address, software_version, db_login)
    VALUES (p_collector, p_name, p_hostname, p_lane, p_egress, p_source_address::inet,
            p_version, session_user)
    RETURNING *;
END
$$;

-- A start takes a registration made by no login yet (an older schema's) or by its own login;
-- another login that still exists keeps it (a new login registers anew, or `--replace`s it).
CREATE OR REPLACE FUNCTION bf4ps_collector_started(p_collector uuid, p_version text,
                                                   p_pid integer, p_source_address text)
RETURNS TABLE (c collectors, previous_health text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    before collectors;
    after collectors;
BEGIN
    SELECT * INTO before FROM collectors x WHERE x.collector_uuid = p_collector FOR UPDATE;
    IF FOUND AND before.db_login IS DISTINCT FROM session_user::text
            AND before.db_login IS NOT NULL
            AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = before.db_login)
            AND NOT bf4ps_caller_holds('bf4ps_operator') THEN
        RAISE EXCEPTION 'collector % was registered by login %, not %', before.collector_name,
            before.db_login, session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    UPDATE collectors x
    SET started_at = now(), stopped_at = NULL, software_version = p_version, pid = p_pid,
        source_address = p_source_address::inet, last_heartbeat_at = now(),
        health = 'healthy', heartbeat_lost_at = NULL, updated_at = now(),
        db_login = CASE WHEN bf4ps_caller_holds('bf4ps_operator')
                        THEN COALESCE(x.db_login, session_user) ELSE session_user END
    WHERE x.collector_uuid = p_collector
    RETURNING x.* INTO after;
    IF FOUND THEN
        RETURN QUERY SELECT after, before.health::text;
    END IF;
END
$$;

-- ---------------------------------------------------------------- recording an event
CREATE FUNCTION bf4ps_event_types_of(p_role text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_role
        WHEN 'bf4ps_collector' THEN ARRAY[
            'heartbeat_lost', 'heartbeat_restored', 'collector_registered', 'collector_started',
            'collector_stopped', 'collector_retired', 'clock_skew', 'clock_restored',
            'egress_throttled', 'egress_recovered', 'egress_cooled', 'circuit_opened',
            'circuit_probe', 'circuit_closed', 'settings_mismatch', 'stats_reset',
            'stats_unconfirmed', 'failed', 'retry_scheduled', 'unavailable',
            'stale_finalize_rejected', 'lookup_resolved', 'created', 'promoted',
            'recon_finished']
        WHEN 'bf4ps_web' THEN ARRAY[
            'created', 'promoted', 'collector_drained', 'collector_resumed',
            'collector_disabled', 'collector_retired', 'progress_flag_cleared']
        WHEN 'bf4ps_scheduler' THEN ARRAY[
            'created', 'promoted', 'scheduler_started', 'scheduler_stopped', 'progress_flagged']
    END
$$;

-- The live lease a collector names (its job row), or a refusal.
CREATE FUNCTION bf4ps_event_live_lease(p_job bigint, p_collector uuid, p_token uuid,
                                       p_kind text)
RETURNS collection_jobs
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    j collection_jobs;
BEGIN
    SELECT * INTO j FROM collection_jobs x
    WHERE x.job_id = p_job AND x.collector_uuid = p_collector AND x.lease_token = p_token
      AND x.status IN ('claimed', 'running') AND x.lease_expires_at > clock_timestamp();
    IF NOT FOUND THEN
        RAISE EXCEPTION 'a % event only of a lease its collector holds now (job %)', p_kind,
            p_job USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN j;
END
$$;

-- A collector-role caller's rules: its own registration; job events only of its leases.
CREATE FUNCTION bf4ps_event_as_collector(e collection_events) RETURNS collection_events
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    c collectors;
    j collection_jobs;
    f collection_events;
BEGIN
    IF e.event_type IN ('created', 'promoted') THEN
        RETURN e;  -- a look-up's chained jobs: checked like the website's (the caller)
    END IF;
    SELECT * INTO c FROM collectors x WHERE x.collector_uuid = e.collector_uuid;
    IF NOT FOUND OR (c.db_login IS DISTINCT FROM session_user::text
                     AND NOT (e.event_type = 'collector_retired' AND c.retired_at IS NOT NULL))
    THEN
        RAISE EXCEPTION 'a collector records events of its own registration only (%, login %)',
            COALESCE(e.collector_uuid::text, 'none named'), session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF e.event_type IN ('failed', 'stats_reset', 'stats_unconfirmed', 'lookup_resolved') THEN
        j := bf4ps_event_live_lease(e.job_id, e.collector_uuid, e.lease_token, e.event_type);
        IF e.event_type <> 'lookup_resolved' THEN
            e.soldier_id := j.soldier_id;
        END IF;
        e.resource := j.resource; e.lane := j.lane; e.priority_class := j.priority_class;
        e.attempt_number := j.attempt_count;
        IF e.event_type = 'failed' THEN
            e.claimed_at := j.claimed_at; e.started_at := j.started_at;
        END IF;
    ELSIF e.event_type IN ('retry_scheduled', 'unavailable') THEN
        SELECT * INTO f FROM collection_events x
        WHERE x.job_id = e.job_id AND x.lease_token = e.lease_token
          AND x.collector_uuid = e.collector_uuid AND x.event_type = 'failed';
        IF NOT FOUND OR e.lease_token IS NULL OR EXISTS (
                SELECT 1 FROM collection_events x
                WHERE x.job_id = e.job_id AND x.lease_token = e.lease_token
                  AND x.event_type IN ('retry_scheduled', 'unavailable')) THEN
            RAISE EXCEPTION 'a % event only once, after its own lease''s failed (job %)',
                e.event_type, e.job_id USING ERRCODE = 'insufficient_privilege';
        END IF;
        e.soldier_id := f.soldier_id; e.resource := f.resource; e.lane := f.lane;
        e.priority_class := f.priority_class; e.attempt_number := f.attempt_number;
        e.persona_id := f.persona_id; e.platform := f.platform;
    ELSIF e.event_type = 'stale_finalize_rejected' THEN
        IF e.lease_token IS NULL OR EXISTS (
                SELECT 1 FROM collection_jobs x
                WHERE x.job_id = e.job_id AND x.lease_token = e.lease_token
                  AND x.lease_expires_at > clock_timestamp()) THEN
            RAISE EXCEPTION 'lease of job % is live: its finalize is not stale', e.job_id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    ELSIF e.job_id IS NOT NULL OR e.lease_token IS NOT NULL THEN
        RAISE EXCEPTION 'a % event names no job or lease', e.event_type
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN e;
END
$$;

-- The website's and the scheduler's (and a look-up's chained jobs): no lease; a job event
-- describes the job as its row is.
CREATE FUNCTION bf4ps_event_no_lease(e collection_events) RETURNS collection_events
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    j collection_jobs;
BEGIN
    IF e.lease_token IS NOT NULL THEN
        RAISE EXCEPTION 'a % event carries no lease token', e.event_type
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF e.event_type IN ('created', 'promoted') THEN
        SELECT * INTO j FROM collection_jobs x WHERE x.job_id = e.job_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no job % to record as %', e.job_id, e.event_type
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        e.soldier_id := j.soldier_id; e.resource := j.resource; e.lane := j.lane;
        e.priority_class := j.priority_class;
    ELSIF e.job_id IS NOT NULL THEN
        RAISE EXCEPTION 'a % event names no job', e.event_type
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN e;
END
$$;

-- The one way a runtime role writes an event (queue/events.py record()). Operators (and the
-- owner) write as they say, like the direct INSERT they keep; every other caller writes only
-- its role's event types, under the rules above. A named collector's name, host and egress are
-- the registry's, whoever the caller.
CREATE FUNCTION bf4ps_event_record(
    event_type text, collector_uuid uuid DEFAULT NULL, collector_name text DEFAULT NULL,
    hostname text DEFAULT NULL, egress_key text DEFAULT NULL, lane text DEFAULT NULL,
    job_id bigint DEFAULT NULL, lease_token uuid DEFAULT NULL, soldier_id bigint DEFAULT NULL,
    persona_id bigint DEFAULT NULL, platform text DEFAULT NULL, resource text DEFAULT NULL,
    priority_class text DEFAULT NULL, attempt_number integer DEFAULT NULL,
    result text DEFAULT NULL, duration_ms integer DEFAULT NULL, wait_ms integer DEFAULT NULL,
    http_status integer DEFAULT NULL, error_class text DEFAULT NULL,
    error_message text DEFAULT NULL, details jsonb DEFAULT NULL,
    claimed_at timestamptz DEFAULT NULL, started_at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    e collection_events;
    r text;
    mine text[] := '{}';
    c collectors;
BEGIN
    e := ROW(NULL, clock_timestamp(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
             $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)::collection_events;
    IF NOT bf4ps_caller_holds('bf4ps_operator') THEN
        FOREACH r IN ARRAY ARRAY['bf4ps_collector', 'bf4ps_web', 'bf4ps_scheduler'] LOOP
            IF bf4ps_caller_holds(r) AND e.event_type = ANY(bf4ps_event_types_of(r)) THEN
                mine := mine || r;
            END IF;
        END LOOP;
        IF cardinality(mine) = 0 THEN
            RAISE EXCEPTION 'role % may not record % events', session_user, e.event_type
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF mine = ARRAY['bf4ps_collector'] THEN
            e := bf4ps_event_as_collector(e);
        END IF;
        IF mine <> ARRAY['bf4ps_collector'] OR e.event_type IN ('created', 'promoted') THEN
            e := bf4ps_event_no_lease(e);
        END IF;
    END IF;
    IF e.collector_uuid IS NOT NULL THEN  -- who it names: as the registry says
        SELECT * INTO c FROM collectors x WHERE x.collector_uuid = e.collector_uuid;
        IF FOUND OR NOT bf4ps_caller_holds('bf4ps_operator') THEN
            e.collector_name := c.collector_name; e.hostname := c.hostname;
            e.egress_key := c.egress_key;
        END IF;
    END IF;
    INSERT INTO collection_events (
        event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
        lease_token, soldier_id, persona_id, platform, resource, priority_class,
        attempt_number, result, duration_ms, wait_ms, http_status, error_class,
        error_message, details, claimed_at, started_at)
    VALUES (e.event_type, e.collector_uuid, e.collector_name, e.hostname, e.egress_key,
            e.lane, e.job_id, e.lease_token, e.soldier_id, e.persona_id, e.platform,
            e.resource, e.priority_class, e.attempt_number, e.result, e.duration_ms,
            e.wait_ms, e.http_status, e.error_class, e.error_message, e.details,
            e.claimed_at, e.started_at)
    RETURNING collection_events.event_id INTO e.event_id;
    RETURN e.event_id;
END
$$;

-- ---------------------------------------------------------------- the event log's columns
-- The log's lease tokens for the website too (0018 did the collector's), and no partition
-- read directly (0013's "every table" read included the default partition's lease tokens).
DO $$
DECLARE
    part regclass;
BEGIN
    FOR part IN SELECT i.inhrelid::regclass FROM pg_inherits i
                WHERE i.inhparent = 'collection_events'::regclass LOOP
        EXECUTE format('REVOKE ALL ON %s FROM bf4ps_collector, bf4ps_web, bf4ps_scheduler, '
                       'bf4ps_operator', part);
    END LOOP;
END
$$;
REVOKE SELECT ON collection_events, collection_events_log FROM bf4ps_web;
DO $$  -- every column of the log and its view but the lease token
DECLARE
    t text;
    cols text;
BEGIN
    FOREACH t IN ARRAY ARRAY['collection_events', 'collection_events_log'] LOOP
        SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
        FROM pg_attribute a
        WHERE a.attrelid = t::regclass AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname <> 'lease_token';
        EXECUTE format('GRANT SELECT (%s) ON %I TO bf4ps_web', cols, t);
    END LOOP;
END
$$;

-- The log's rows of one stored event from its instants (the event search names its columns:
-- a whole row would read the lease token).
CREATE FUNCTION bf4ps_event_log_rows(p_claimed_at timestamptz, p_started_at timestamptz,
                                     p_occurred_at timestamptz, p_event_type text,
                                     p_wait_ms integer)
RETURNS TABLE (ord smallint, occurred_at timestamptz, event_type text, wait_ms integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT x.ord, x.at, x.kind, x.wait_ms
    FROM (VALUES (0::smallint, p_claimed_at, 'claimed'::text, NULL::integer),
                 (1::smallint, p_started_at, 'started'::text,
                  (extract(epoch FROM p_started_at - p_claimed_at) * 1000)::integer),
                 (2::smallint, p_occurred_at, p_event_type, p_wait_ms))
         AS x(ord, at, kind, wait_ms)
    WHERE x.at IS NOT NULL
$$;
CREATE OR REPLACE FUNCTION bf4ps_event_log_rows(e collection_events)
RETURNS TABLE (ord smallint, occurred_at timestamptz, event_type text, wait_ms integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT * FROM bf4ps_event_log_rows(e.claimed_at, e.started_at, e.occurred_at,
                                       e.event_type, e.wait_ms)
$$;

-- ---------------------------------------------------------------- the scheduler's batches
-- The feeder: up to n jobs of one activity class and resource (their priority class is the
-- activity class, their lane background, their rank not before the pass's time), FIFO by
-- eligible_since, final refreshes first; created events in the same statement.
-- $1 class, $2 resource, $3 n (at most 10000), $4 the class's aging offset (seconds, >= 0).
CREATE FUNCTION bf4ps_feed_class(p_class text, p_resource text, p_n integer,
                                 p_aging_seconds double precision)
RETURNS TABLE (n bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan AS $$
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
     LIMIT least($3, 10000))
    UNION ALL
    (SELECT cs.soldier_id, cs.resource, cs.eligible_since, cs.status, cs.due_reason, 1
     FROM collection_state cs
     WHERE cs.activity_class = $1 AND cs.resource = $2
       AND cs.status IN ('never_attempted', 'due')
       AND cs.due_reason IS DISTINCT FROM 'final_refresh'
       AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                       WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
     ORDER BY cs.eligible_since, cs.soldier_id
     LIMIT least($3, 10000))
), picked AS (
    SELECT c.*, row_number() OVER (ORDER BY c.tier, c.eligible_since, c.soldier_id) AS pos
    FROM candidates c
    ORDER BY c.tier, c.eligible_since, c.soldier_id
    LIMIT least($3, 10000)
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
$$;

-- Retry-due resources whose job is gone: back into the queue (reason retry, due now).
-- $1 n (at most 10000).
CREATE FUNCTION bf4ps_feed_retry(p_n integer)
RETURNS TABLE (n bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan AS $$
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
    LIMIT least($1, 10000)
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
$$;

-- The heartbeat detector: healthy collectors silent for $1 seconds (at least 1) become lost,
-- once, with one heartbeat_lost event each.
CREATE FUNCTION bf4ps_collectors_mark_silent(p_silence_seconds double precision)
RETURNS TABLE (collector_name text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH lost AS (
    UPDATE collectors
    SET health = 'lost', heartbeat_lost_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE health = 'healthy' AND retired_at IS NULL
      AND last_heartbeat_at < clock_timestamp() - make_interval(secs => greatest($1, 1))
    RETURNING collector_uuid, collector_name, hostname, egress_key, lane, last_heartbeat_at
), ev AS (
    INSERT INTO collection_events (event_type, collector_uuid, collector_name, hostname,
                                   egress_key, lane, details)
    SELECT 'heartbeat_lost', collector_uuid, collector_name, hostname, egress_key, lane,
           jsonb_build_object('detected_by', 'scheduler',
                              'last_heartbeat_at', last_heartbeat_at)
    FROM lost
)
SELECT collector_name::text FROM lost;
END
$$;

-- Parked resources of active soldiers get one more try after the recheck interval ($1
-- seconds), $2 at most (at most 10000), with a recheck_scheduled event each.
CREATE FUNCTION bf4ps_parked_recheck(p_recheck_seconds double precision, p_n integer)
RETURNS TABLE (n bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH picked AS (
    SELECT soldier_id, resource
    FROM collection_state
    WHERE status = 'unavailable' AND activity_class = 'active'
      AND last_attempt_at <= clock_timestamp() - make_interval(secs => $1)
    ORDER BY last_attempt_at
    LIMIT least($2, 10000)
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
$$;

-- The reaper: expired leases only go back to pending, $1 at most (at most 10000), with
-- lease_expired (carrying the lost lease's claimed/started instants) + reclaimed.
CREATE FUNCTION bf4ps_reap_expired(p_limit integer)
RETURNS TABLE (job_id bigint, old_collector uuid, old_token uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan AS $$
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
$$;

-- The BF4SW intake: the first background job of soldiers that have none of that resource
-- (never another lane, never a job rewritten), with the `created` event; ids follow discovery
-- order. $1 soldiers, $2 their classes, $3 ranks, $4 resource, $5 reason, $6 eligible at.
CREATE FUNCTION bf4ps_intake_enqueue(p_soldiers bigint[], p_classes text[],
                                     p_ranks timestamptz[], p_resource text, p_reason text,
                                     p_now timestamptz)
RETURNS TABLE (soldier_id bigint, job_id bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan AS $$
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
$$;

-- ---------------------------------------------------------------- /ops login failures
-- One row per counted key (a client network, an account): failures in a row and the lock's
-- end. Read and written only through bf4ps_ops_login_attempt (the website's login guard).
CREATE TABLE ops_login_failures (
    key text PRIMARY KEY CHECK (length(key) <= 200),
    failures integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    locked_until timestamptz,
    last_failure_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON ops_login_failures FROM bf4ps_collector, bf4ps_scheduler, bf4ps_web,
    bf4ps_operator;
GRANT SELECT ON ops_login_failures TO bf4ps_operator;

-- p_outcome: 'check' (the wait left before an attempt may be judged; nothing written),
-- 'failed' (counted: past p_free failures each one locks the keys for p_base seconds doubling
-- up to p_max), 'succeeded' (the keys start again). A key quiet for p_forget seconds and not
-- locked is forgotten (every failure removes those). Returns, per key, the seconds left to wait
-- (0: none) and its failures in a row. At most four keys a call.
CREATE FUNCTION bf4ps_ops_login_attempt(p_keys text[], p_outcome text, p_free integer,
                                        p_base double precision, p_max double precision,
                                        p_forget double precision)
RETURNS TABLE (key text, wait_seconds double precision, failures integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

-- ---------------------------------------------------------------- the restore guard, again
-- What 0018's guard cannot see: a base backup restored onto the same cluster without a new
-- timeline, or a data-only restore (the ledger's table kept): system identifier, timeline,
-- database oid and the ledger's table oid are all as they were. What a running collector
-- knows is the ledger rows it was counted in: after each admission it takes a receipt of its
-- row (the row's id and slot, signed with a key only the database holds), and presents the
-- newest one at every check. A receipt the database signed, of a row sent within twice the
-- budget window (retention never deletes those) that the ledger no longer has, means the
-- database was rewound past that row: the fleet is held one window, as for any restore. A
-- forged receipt is ignored (no role reads the key), so no role can hold the fleet at will;
-- one of a row older than the hold already running adds nothing (that hold covers it).
-- docs/operations.md "Backups and restores" says which restores stay unseen.
CREATE TABLE ledger_receipt_key (
    key_id smallint PRIMARY KEY DEFAULT 1 CHECK (key_id = 1),
    secret bytea NOT NULL
);
INSERT INTO ledger_receipt_key (secret)
VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
REVOKE ALL ON ledger_receipt_key FROM bf4ps_collector, bf4ps_scheduler, bf4ps_web,
    bf4ps_operator;

CREATE FUNCTION bf4ps_ledger_sign(p_request bigint, p_slot_at timestamptz) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT encode(sha256(k.secret || sha256(k.secret || convert_to(
               p_request::text || ':' || (extract(epoch FROM p_slot_at) * 1000000)::bigint,
               'UTF8'))), 'hex')
    FROM ledger_receipt_key k
$$;

-- a receipt of an existing ledger row (proving only that it existed)
CREATE FUNCTION bf4ps_ledger_receipt(p_request bigint)
RETURNS TABLE (request_id bigint, slot_at timestamptz, receipt text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT l.request_id, l.slot_at, bf4ps_ledger_sign(l.request_id, l.slot_at)
    FROM request_ledger l WHERE l.request_id = p_request
$$;

CREATE FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamptz, p_receipt text)
RETURNS TABLE (hold_until timestamptz, reason text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    g restore_guard;
    span double precision := greatest(1.0,
        (SELECT b.window_seconds FROM fleet_budget b WHERE b.requests IS NOT NULL),
        (SELECT max(greatest(e.window_seconds, e.min_interval_seconds)) FROM egress_gates e));
BEGIN
    -- the guard's row or the key gone: the tables are being emptied and loaded (a data-only
    -- restore under way); held from now, as long as they are missing (nothing stored)
    IF NOT EXISTS (SELECT 1 FROM restore_guard) OR NOT EXISTS (SELECT 1 FROM ledger_receipt_key)
    THEN
        RETURN QUERY SELECT now() + make_interval(secs => span),
            'the restore guard''s own rows are missing: a restore is under way'::text;
        RETURN;
    END IF;
    IF p_request IS NOT NULL AND p_receipt = bf4ps_ledger_sign(p_request, p_slot_at)
            AND p_slot_at > clock_timestamp() - make_interval(
                secs => 2 * COALESCE((SELECT b.window_seconds FROM fleet_budget b), 60))
            -- the row itself (its id and slot): a rewound sequence hands its id out again
            AND NOT EXISTS (SELECT 1 FROM request_ledger l
                            WHERE l.request_id = p_request AND l.slot_at = p_slot_at) THEN
        SELECT * INTO g FROM restore_guard FOR UPDATE;
        IF g.detected_at IS NULL OR g.detected_at < p_slot_at THEN
            UPDATE restore_guard r
            SET hold_until = greatest(r.hold_until, now() + make_interval(secs => span)),
                detected_at = now(), updated_at = now(),
                reason = left('a ledger row a running collector was counted in (request '
                    || p_request || ', slot ' || p_slot_at || ') is gone: the database was '
                    || 'rewound (a base backup or a data-only restore)', 500);
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM bf4ps_restore_check();
END
$$;

-- ---------------------------------------------------------------- rights
REVOKE EXECUTE ON FUNCTION
    bf4ps_event_record(text, uuid, text, text, text, text, bigint, uuid, bigint, bigint, text,
                       text, text, integer, text, integer, integer, integer, text, text,
                       jsonb, timestamptz, timestamptz),
    bf4ps_event_as_collector(collection_events), bf4ps_event_no_lease(collection_events),
    bf4ps_event_live_lease(bigint, uuid, uuid, text),
    bf4ps_feed_class(text, text, integer, double precision), bf4ps_feed_retry(integer),
    bf4ps_collectors_mark_silent(double precision),
    bf4ps_parked_recheck(double precision, integer), bf4ps_reap_expired(integer),
    bf4ps_intake_enqueue(bigint[], text[], timestamptz[], text, text, timestamptz),
    bf4ps_ops_login_attempt(text[], text, integer, double precision, double precision,
                            double precision),
    bf4ps_ledger_sign(bigint, timestamptz), bf4ps_ledger_receipt(bigint),
    bf4ps_restore_check(bigint, timestamptz, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_receipt(bigint),
    bf4ps_restore_check(bigint, timestamptz, text)
TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION
    bf4ps_event_record(text, uuid, text, text, text, text, bigint, uuid, bigint, bigint, text,
                       text, text, integer, text, integer, integer, integer, text, text,
                       jsonb, timestamptz, timestamptz)
TO bf4ps_collector, bf4ps_web, bf4ps_scheduler, bf4ps_operator;
GRANT EXECUTE ON FUNCTION
    bf4ps_feed_class(text, text, integer, double precision), bf4ps_feed_retry(integer),
    bf4ps_collectors_mark_silent(double precision),
    bf4ps_parked_recheck(double precision, integer), bf4ps_reap_expired(integer),
    bf4ps_intake_enqueue(bigint[], text[], timestamptz[], text, text, timestamptz)
TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION
    bf4ps_ops_login_attempt(text[], text, integer, double precision, double precision,
                            double precision)
TO bf4ps_web;

-- the direct writes these replace (the operator holds the scheduler's and the website's
-- rights through its membership, and keeps its own INSERT on the log for its commands)
REVOKE INSERT ON collection_events FROM bf4ps_collector, bf4ps_web, bf4ps_scheduler;
REVOKE INSERT, UPDATE, DELETE ON collection_jobs FROM bf4ps_scheduler, bf4ps_operator;
REVOKE INSERT, UPDATE, DELETE ON collectors FROM bf4ps_scheduler, bf4ps_operator;
