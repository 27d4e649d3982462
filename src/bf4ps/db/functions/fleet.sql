-- The collectors' registry: each collector's registration, its heartbeat and clock, start and
-- stop, the website's drain and resume, and the operator's drain, resume, disable and retire. A
-- collector acts for a registration whose `db_login` is its session_user (`bf4ps_collector_own`)
-- and for the egress of such a registration (`bf4ps_egress_own`); it registers only on an
-- egress that is unclaimed or already its own login's (`bf4ps_collector_insert`), so no
-- registration brings another login's egress into its reach; the `_any` variants are the
-- internal forms the owned ones call. The `collectors_kept` trigger keeps a
-- registration that events still name. Calls the access room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_collector_clock(p_collector uuid, p_offset double precision, p_rtt double precision, p_skewed boolean)
 RETURNS TABLE(was_skewed_since timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'report the clock of');
    RETURN QUERY SELECT * FROM bf4ps_collector_clock_any(p_collector, p_offset, p_rtt,
                                                         p_skewed);
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_clock(p_collector uuid, p_offset double precision, p_rtt double precision, p_skewed boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_clock(p_collector uuid, p_offset double precision, p_rtt double precision, p_skewed boolean) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_collector_clock_any(p_collector uuid, p_offset double precision, p_rtt double precision, p_skewed boolean)
 RETURNS TABLE(was_skewed_since timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_clock_any(p_collector uuid, p_offset double precision, p_rtt double precision, p_skewed boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_collector_heartbeat(p_collector uuid)
 RETURNS TABLE(enabled boolean, drained boolean, retired_at timestamp with time zone, previous_health text, lost_since timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'heartbeat');
    RETURN QUERY SELECT * FROM bf4ps_collector_heartbeat_any(p_collector);
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_heartbeat(p_collector uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_heartbeat(p_collector uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_collector_heartbeat_any(p_collector uuid)
 RETURNS TABLE(enabled boolean, drained boolean, retired_at timestamp with time zone, previous_health text, lost_since timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_heartbeat_any(p_collector uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_collector_insert(p_collector uuid, p_name text, p_hostname text, p_lane text, p_egress text, p_source_address text, p_version text)
 RETURNS SETOF collectors
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    holder text;
BEGIN
    -- a login registers only on an egress that is unclaimed or already its own: one a current
    -- registration of another (existing) login is on is that login's, so its gate (throttles,
    -- cool-downs, seeding) stays out of this caller's reach; an operator registers anywhere.
    -- Serialised per egress, so two logins racing for an unclaimed egress cannot both win.
    PERFORM pg_advisory_xact_lock(hashtext('bf4ps egress claim ' || p_egress));
    SELECT x.db_login INTO holder FROM collectors x
    WHERE x.egress_key = p_egress AND x.retired_at IS NULL AND x.db_login IS NOT NULL
      AND NOT bf4ps_caller_owns(x.db_login)
      AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = x.db_login)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a collector may register only on an egress that is unclaimed or its '
            'own login''s (egress % is login %''s, not %)', p_egress, holder, session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'hosts that share an egress key share one login';
    END IF;
    RETURN QUERY
    INSERT INTO collectors (collector_uuid, collector_name, hostname, lane, egress_key,
                            source_address, software_version, db_login)
    VALUES (p_collector, p_name, p_hostname, p_lane, p_egress, p_source_address::inet,
            p_version, session_user)
    RETURNING *;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_insert(p_collector uuid, p_name text, p_hostname text, p_lane text, p_egress text, p_source_address text, p_version text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_insert(p_collector uuid, p_name text, p_hostname text, p_lane text, p_egress text, p_source_address text, p_version text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_collector_mark_lost(p_collector uuid)
 RETURNS TABLE(collector_uuid uuid, collector_name text, hostname text, egress_key text, lane text, last_heartbeat_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- a collector marks its own registration lost (its failed heartbeats); the scheduler's
    -- detector is bf4ps_collectors_mark_silent
    PERFORM bf4ps_collector_own(p_collector, 'mark lost');
    RETURN QUERY
    UPDATE collectors c
    SET health = 'lost', heartbeat_lost_at = now(), updated_at = now()
    WHERE c.collector_uuid = p_collector AND c.health IN ('healthy', 'unknown')
      AND c.retired_at IS NULL
    RETURNING c.collector_uuid, c.collector_name::text, c.hostname::text, c.egress_key::text,
              c.lane::text, c.last_heartbeat_at;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_mark_lost(p_collector uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_mark_lost(p_collector uuid) TO bf4ps_collector;
REVOKE EXECUTE ON FUNCTION bf4ps_collector_mark_lost(p_collector uuid) FROM bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_collector_own(p_collector uuid, p_action text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    owner text;
BEGIN
    SELECT x.db_login INTO owner FROM collectors x WHERE x.collector_uuid = p_collector;
    IF FOUND AND NOT bf4ps_caller_owns(owner) THEN
        RAISE EXCEPTION 'a collector may % only its own registration (collector %, registered '
            'by login %, not %)', p_action, p_collector, owner, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_own(p_collector uuid, p_action text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_egress_own(p_egress text, p_action text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF NOT bf4ps_caller_holds('bf4ps_operator') AND NOT EXISTS (
            SELECT 1 FROM collectors x WHERE x.egress_key = p_egress AND x.retired_at IS NULL
              AND bf4ps_caller_owns(x.db_login)) THEN
        RAISE EXCEPTION 'a collector may % only the egress of its own registration (egress %, '
            'login %)', p_action, p_egress, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_egress_own(p_egress text, p_action text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_collector_replaced_by(p_collector uuid, p_replaced_by uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'name the successor of');
    UPDATE collectors c SET replaced_by = p_replaced_by
    WHERE c.collector_uuid = p_collector AND c.retired_at IS NOT NULL
      AND (c.replaced_by IS NULL OR bf4ps_caller_holds('bf4ps_operator'));
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_replaced_by(p_collector uuid, p_replaced_by uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_replaced_by(p_collector uuid, p_replaced_by uuid) TO bf4ps_collector;
REVOKE EXECUTE ON FUNCTION bf4ps_collector_replaced_by(p_collector uuid, p_replaced_by uuid) FROM bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_collector_retire(p_collector uuid, p_replaced_by uuid)
 RETURNS TABLE(collector_uuid uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    x collectors;
BEGIN
    -- a collector retires only its own login's registration (`--replace`), and only when
    -- it is neither disabled, drained nor alive; an operator (`bf4ps collector retire`) any
    PERFORM bf4ps_collector_own(p_collector, 'retire');
    SELECT * INTO x FROM collectors c WHERE c.collector_uuid = p_collector FOR UPDATE;
    IF FOUND AND x.retired_at IS NULL AND NOT bf4ps_caller_holds('bf4ps_operator') AND (
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_retire(p_collector uuid, p_replaced_by uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_retire(p_collector uuid, p_replaced_by uuid) TO bf4ps_collector;
REVOKE EXECUTE ON FUNCTION bf4ps_collector_retire(p_collector uuid, p_replaced_by uuid) FROM bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_collector_set_flags(p_name text, p_enabled boolean, p_drained boolean, p_reason text)
 RETURNS SETOF collectors
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    -- the website drains and resumes (a resume names enabled: true, which it may only keep);
    -- disable and enable are an operator's (the CLI)
    IF p_enabled IS NOT NULL AND NOT bf4ps_caller_holds('bf4ps_operator') AND EXISTS (
            SELECT 1 FROM collectors x WHERE lower(x.collector_name) = lower(p_name)
              AND x.retired_at IS NULL AND x.enabled IS DISTINCT FROM p_enabled) THEN
        RAISE EXCEPTION 'only an operator may % a collector (the website drains and resumes)',
            CASE WHEN p_enabled THEN 'enable' ELSE 'disable' END
            USING ERRCODE = 'insufficient_privilege';
    END IF;
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_set_flags(p_name text, p_enabled boolean, p_drained boolean, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_set_flags(p_name text, p_enabled boolean, p_drained boolean, p_reason text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_collector_started(p_collector uuid, p_version text, p_pid integer, p_source_address text)
 RETURNS TABLE(c collectors, previous_health text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    before collectors;
    after collectors;
BEGIN
    SELECT * INTO before FROM collectors x WHERE x.collector_uuid = p_collector FOR UPDATE;
    -- a start records the caller's login: of its own registration; of one whose login was
    -- dropped (a host moved to another login); of one from before logins were recorded (no
    -- db_login: a registration of an older build) only while it is not alive, so a first
    -- start after the upgrade adopts it but no login takes over a running collector
    IF FOUND AND NOT bf4ps_caller_owns(before.db_login)
            AND NOT (before.db_login IS NOT NULL
                     AND NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = before.db_login))
            AND NOT (before.db_login IS NULL AND before.retired_at IS NULL
                     AND NOT (before.health = 'healthy' AND before.last_heartbeat_at
                              > clock_timestamp() - interval '30 seconds')) THEN
        RAISE EXCEPTION 'collector % was registered by login %, not %', before.collector_name,
            COALESCE(before.db_login, '(none recorded, and it is alive)'), session_user
            USING ERRCODE = 'insufficient_privilege';
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_started(p_collector uuid, p_version text, p_pid integer, p_source_address text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_started(p_collector uuid, p_version text, p_pid integer, p_source_address text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_collector_stopped(p_collector uuid)
 RETURNS TABLE(collector_uuid uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'stop');
    RETURN QUERY SELECT * FROM bf4ps_collector_stopped_any(p_collector);
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_stopped(p_collector uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_stopped(p_collector uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_collector_stopped_any(p_collector uuid)
 RETURNS TABLE(collector_uuid uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE collectors c
    SET health = 'stopped', stopped_at = now(), heartbeat_lost_at = NULL, pid = NULL,
        updated_at = now()
    WHERE c.collector_uuid = p_collector
    RETURNING c.collector_uuid;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_collector_stopped_any(p_collector uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_collectors_kept()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'a collector is retired, never deleted (its jobs and events name it)'
        USING ERRCODE = 'restrict_violation';
END
$function$;

CREATE OR REPLACE FUNCTION bf4ps_collectors_mark_silent(p_silence_seconds double precision)
 RETURNS TABLE(collector_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_collectors_mark_silent(p_silence_seconds double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collectors_mark_silent(p_silence_seconds double precision) TO bf4ps_scheduler;

CREATE OR REPLACE TRIGGER collectors_kept BEFORE DELETE ON collectors FOR EACH ROW EXECUTE FUNCTION bf4ps_collectors_kept();
