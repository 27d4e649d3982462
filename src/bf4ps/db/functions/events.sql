-- The event log: the fleet's audit trail, one row per thing that happened.
-- `bf4ps_event_record` is the one way to write an event: it takes the writer's identity from
-- session_user (a collector may write only for its own registration and live leases), checks the
-- event types each role may write, and fills what the database knows. The monthly partitions are
-- made (`bf4ps_ensure_event_partitions`) and dropped (`bf4ps_drop_event_partition`) here, and
-- `bf4ps_events_prune` removes what retention allows: neither ever removes an event younger than
-- the policy's event_retention_days (`bf4ps_event_retention`), whatever cut-off it is given; `collection_events_log` is the readable
-- view. Calls the access room (`bf4ps_caller_holds`).
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_drop_event_partition(part text)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    -- only a monthly partition of the event log, never the table itself or its default
    IF part !~ '^collection_events_[0-9]{6}$' OR NOT EXISTS (
            SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'collection_events'::regclass AND c.relname = part) THEN
        RAISE EXCEPTION 'not a monthly partition of collection_events: %', part
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- only a month wholly older than the policy's event_retention_days
    IF to_date(right(part, 6), 'YYYYMM') + interval '1 month'
            > clock_timestamp() - bf4ps_event_retention() THEN
        RAISE EXCEPTION 'partition % holds events younger than event_retention_days (%): kept',
            part, bf4ps_event_retention() USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('DROP TABLE %I', part);
    RETURN true;
END;
$function$;
REVOKE ALL ON FUNCTION bf4ps_drop_event_partition(part text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_drop_event_partition(part text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_ensure_event_partitions(from_month date, months integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    m date := date_trunc('month', from_month)::date;
    created integer := 0;
    part text;
BEGIN
    -- at most two years of partitions a call, whatever the caller asks
    FOR i IN 0 .. LEAST(months, 24) - 1 LOOP
        part := format('collection_events_%s', to_char(m + make_interval(months => i), 'YYYYMM'));
        IF to_regclass(part) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF collection_events FOR VALUES FROM (%L) TO (%L)',
                part, (m + make_interval(months => i))::timestamptz,
                (m + make_interval(months => i + 1))::timestamptz);
            PERFORM bf4ps_events_brin_open(part::regclass);
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$function$;
REVOKE ALL ON FUNCTION bf4ps_ensure_event_partitions(from_month date, months integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ensure_event_partitions(from_month date, months integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_event_as_collector(e collection_events)
 RETURNS collection_events
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_event_as_collector(e collection_events) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_event_live_lease(p_job bigint, p_collector uuid, p_token uuid, p_kind text)
 RETURNS collection_jobs
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_event_live_lease(p_job bigint, p_collector uuid, p_token uuid, p_kind text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_event_log_rows(e collection_events)
 RETURNS TABLE(ord smallint, occurred_at timestamp with time zone, event_type text, wait_ms integer)
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT * FROM bf4ps_event_log_rows(e.claimed_at, e.started_at, e.occurred_at,
                                       e.event_type, e.wait_ms)
$function$;

CREATE OR REPLACE FUNCTION bf4ps_event_log_rows(p_claimed_at timestamp with time zone, p_started_at timestamp with time zone, p_occurred_at timestamp with time zone, p_event_type text, p_wait_ms integer)
 RETURNS TABLE(ord smallint, occurred_at timestamp with time zone, event_type text, wait_ms integer)
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT x.ord, x.at, x.kind, x.wait_ms
    FROM (VALUES (0::smallint, p_claimed_at, 'claimed'::text, NULL::integer),
                 (1::smallint, p_started_at, 'started'::text,
                  (extract(epoch FROM p_started_at - p_claimed_at) * 1000)::integer),
                 (2::smallint, p_occurred_at, p_event_type, p_wait_ms))
         AS x(ord, at, kind, wait_ms)
    WHERE x.at IS NOT NULL
$function$;

CREATE OR REPLACE FUNCTION bf4ps_event_no_lease(e collection_events)
 RETURNS collection_events
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_event_no_lease(e collection_events) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_event_record(event_type text, collector_uuid uuid DEFAULT NULL::uuid, collector_name text DEFAULT NULL::text, hostname text DEFAULT NULL::text, egress_key text DEFAULT NULL::text, lane text DEFAULT NULL::text, job_id bigint DEFAULT NULL::bigint, lease_token uuid DEFAULT NULL::uuid, soldier_id bigint DEFAULT NULL::bigint, persona_id bigint DEFAULT NULL::bigint, platform text DEFAULT NULL::text, resource text DEFAULT NULL::text, priority_class text DEFAULT NULL::text, attempt_number integer DEFAULT NULL::integer, result text DEFAULT NULL::text, duration_ms integer DEFAULT NULL::integer, wait_ms integer DEFAULT NULL::integer, http_status integer DEFAULT NULL::integer, error_class text DEFAULT NULL::text, error_message text DEFAULT NULL::text, details jsonb DEFAULT NULL::jsonb, claimed_at timestamp with time zone DEFAULT NULL::timestamp with time zone, started_at timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    e collection_events;
    r text;
    mine text[] := '{}';
    c collectors;
    free boolean := session_user::text = current_user::text
        OR (SELECT a.rolsuper FROM pg_roles a WHERE a.rolname = session_user);
BEGIN
    e := ROW(NULL, clock_timestamp(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
             $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, session_user)::collection_events;
    IF NOT free THEN
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
        IF FOUND OR NOT free THEN
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_event_record(event_type text, collector_uuid uuid, collector_name text, hostname text, egress_key text, lane text, job_id bigint, lease_token uuid, soldier_id bigint, persona_id bigint, platform text, resource text, priority_class text, attempt_number integer, result text, duration_ms integer, wait_ms integer, http_status integer, error_class text, error_message text, details jsonb, claimed_at timestamp with time zone, started_at timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_event_record(event_type text, collector_uuid uuid, collector_name text, hostname text, egress_key text, lane text, job_id bigint, lease_token uuid, soldier_id bigint, persona_id bigint, platform text, resource text, priority_class text, attempt_number integer, result text, duration_ms integer, wait_ms integer, http_status integer, error_class text, error_message text, details jsonb, claimed_at timestamp with time zone, started_at timestamp with time zone) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_event_record(event_type text, collector_uuid uuid, collector_name text, hostname text, egress_key text, lane text, job_id bigint, lease_token uuid, soldier_id bigint, persona_id bigint, platform text, resource text, priority_class text, attempt_number integer, result text, duration_ms integer, wait_ms integer, http_status integer, error_class text, error_message text, details jsonb, claimed_at timestamp with time zone, started_at timestamp with time zone) TO bf4ps_web;
GRANT EXECUTE ON FUNCTION bf4ps_event_record(event_type text, collector_uuid uuid, collector_name text, hostname text, egress_key text, lane text, job_id bigint, lease_token uuid, soldier_id bigint, persona_id bigint, platform text, resource text, priority_class text, attempt_number integer, result text, duration_ms integer, wait_ms integer, http_status integer, error_class text, error_message text, details jsonb, claimed_at timestamp with time zone, started_at timestamp with time zone) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_event_record(event_type text, collector_uuid uuid, collector_name text, hostname text, egress_key text, lane text, job_id bigint, lease_token uuid, soldier_id bigint, persona_id bigint, platform text, resource text, priority_class text, attempt_number integer, result text, duration_ms integer, wait_ms integer, http_status integer, error_class text, error_message text, details jsonb, claimed_at timestamp with time zone, started_at timestamp with time zone) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_event_types_of(p_role text)
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT CASE p_role
        WHEN 'bf4ps_collector' THEN ARRAY[
            'heartbeat_lost', 'heartbeat_restored', 'collector_registered', 'collector_started',
            'collector_stopped', 'collector_retired', 'clock_skew', 'clock_restored',
            'egress_throttled', 'egress_recovered', 'egress_cooled', 'session_expired',
            'session_renewed', 'circuit_opened',
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
$function$;

CREATE OR REPLACE FUNCTION bf4ps_events_brin_open(part regclass)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    idx regclass;
    pages bigint := pg_relation_size(part) / current_setting('block_size')::bigint;
BEGIN
    SELECT x.indexrelid INTO idx FROM pg_index x
    JOIN pg_inherits i ON i.inhrelid = x.indexrelid AND i.inhparent = 'ix_events_id'::regclass
    WHERE x.indrelid = part;
    IF idx IS NOT NULL THEN
        PERFORM brin_desummarize_range(idx, pages - pages % 128);
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_events_brin_open(part regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_event_retention()
 RETURNS interval
 LANGUAGE sql
 STABLE
AS $function$
    SELECT make_interval(secs => 86400 * GREATEST(
        bf4ps_policy_number('event_retention_days', 180), 1))
$function$;
REVOKE ALL ON FUNCTION bf4ps_event_retention() FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_events_prune(p_cutoff timestamp with time zone, p_batch integer)
 RETURNS SETOF bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    DELETE FROM collection_events
    WHERE (event_id, occurred_at) IN (
        SELECT e.event_id, e.occurred_at FROM collection_events e
        WHERE e.occurred_at < least(p_cutoff, clock_timestamp() - bf4ps_event_retention())
        LIMIT greatest(p_batch, 0))
    RETURNING event_id
$function$;
REVOKE ALL ON FUNCTION bf4ps_events_prune(p_cutoff timestamp with time zone, p_batch integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_events_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_events_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_operator;

CREATE OR REPLACE VIEW collection_events_log AS
 SELECT e.event_id,
    x.ord,
    x.occurred_at,
    x.event_type,
    e.collector_uuid,
    e.collector_name,
    e.hostname,
    e.egress_key,
    e.lane,
    e.job_id,
    e.lease_token,
    e.soldier_id,
    e.persona_id,
    e.platform,
    e.resource,
    e.priority_class,
    e.attempt_number,
        CASE
            WHEN x.ord = 2 THEN e.result::text
            ELSE NULL::text
        END AS result,
        CASE
            WHEN x.ord = 2 THEN e.duration_ms::integer
            ELSE NULL::integer
        END AS duration_ms,
    x.wait_ms,
        CASE
            WHEN x.ord = 2 THEN e.http_status::integer
            ELSE NULL::integer
        END AS http_status,
        CASE
            WHEN x.ord = 2 THEN e.error_class::text
            ELSE NULL::text
        END AS error_class,
        CASE
            WHEN x.ord = 2 THEN e.error_message::text
            ELSE NULL::text
        END AS error_message,
        CASE
            WHEN x.ord = 2 THEN e.details::jsonb
            ELSE NULL::jsonb
        END AS details
   FROM collection_events e
     CROSS JOIN LATERAL bf4ps_event_log_rows(e.*) x(ord, occurred_at, event_type, wait_ms);
GRANT SELECT ON TABLE collection_events_log TO bf4ps_operator;
