-- The restore guard: a database restored from an older backup must not let the fleet re-send
-- what the lost ledger had counted. `bf4ps_restore_check` (three forms: the run rule, the
-- receipts, the marks) holds collection until it is safe; `bf4ps_restore_hold` and
-- `bf4ps_restore_span` say for how long; `bf4ps_restore_vouch` is the operator's word.
-- Calls the ledger room (the signatures) and the access room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_guard_after(g restore_guard, t timestamp with time zone)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT g.hold_until IS NULL OR t > g.hold_until
$function$;

CREATE OR REPLACE FUNCTION bf4ps_restore_check()
 RETURNS TABLE(hold_until timestamp with time zone, reason text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_restore_check() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check() TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check() TO bf4ps_web;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check() TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text)
 RETURNS TABLE(hold_until timestamp with time zone, reason text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text, p_mark text)
 RETURNS TABLE(hold_until timestamp with time zone, reason text, mark text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    g restore_guard;
    started timestamptz := pg_postmaster_start_time();
    started_us bigint := (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint;
    sysid bigint := (SELECT c.system_identifier FROM pg_control_system() c);
    newest bigint := COALESCE((SELECT max(l.request_id) FROM request_ledger l), 0);
    part text[];
    m_issued timestamptz;
    why text;
    run_hold timestamptz;
    span double precision := greatest(1.0,
        (SELECT b.window_seconds FROM fleet_budget b WHERE b.requests IS NOT NULL),
        (SELECT max(greatest(e.window_seconds, e.min_interval_seconds)) FROM egress_gates e));
    payload text;
BEGIN
    SELECT * INTO g FROM restore_guard;
    IF NOT FOUND OR NOT EXISTS (SELECT 1 FROM ledger_receipt_key) THEN  -- a restore under way
        RETURN QUERY SELECT h.hold_until, h.reason, NULL::text
            FROM bf4ps_restore_check(p_request, p_slot_at, p_receipt) h;
        RETURN;
    END IF;
    -- a run the guard has not seen: where it began (before any of its own writes count)
    IF g.run_started_at IS DISTINCT FROM started THEN
        SELECT * INTO g FROM restore_guard FOR UPDATE;
        IF g.run_started_at IS DISTINCT FROM started THEN
            UPDATE restore_guard x
            SET run_started_at = started, run_lsn = pg_current_wal_lsn(), updated_at = now(),
                run_vouched_at = CASE WHEN x.run_started_at IS NULL THEN now() END
            RETURNING * INTO g;
        END IF;
    END IF;
    -- the caller's mark, if the database signed it (a forged or foreign one shows nothing)
    IF p_mark ~ '^[0-9]+:[0-9]+:[0-9A-F]+/[0-9A-F]+:[0-9]+:[0-9]+:[0-9a-f]{64}$' THEN
        part := string_to_array(p_mark, ':');
        IF part[1]::bigint = sysid
                AND bf4ps_mark_sign(array_to_string(part[1:5], ':')) = part[6] THEN
            m_issued := to_timestamp(part[5]::double precision / 1000000);
            why := CASE
                WHEN part[4]::bigint > newest THEN
                    'the ledger''s newest row a running process saw (request ' || part[4]
                    || ', at ' || m_issued || ') is gone (now ' || newest || '): the '
                    || 'database was rewound (a base backup or a data-only restore)'
                WHEN part[2]::bigint <> started_us AND part[3]::pg_lsn > g.run_lsn THEN
                    'a running process saw WAL position ' || part[3] || ' before this server '
                    || 'started at ' || started || ', at WAL ' || g.run_lsn || ': the database '
                    || 'was rewound (a base backup or a copy of the data directory restored)'
            END;
            IF why IS NOT NULL AND bf4ps_guard_after(g, m_issued) THEN
                SELECT * INTO g FROM restore_guard FOR UPDATE;
                IF bf4ps_guard_after(g, m_issued) THEN
                    UPDATE restore_guard x
                    SET hold_until = greatest(x.hold_until, now() + make_interval(secs => span)),
                        detected_at = now(), reason = left(why, 500), updated_at = now(),
                        run_vouched_at = COALESCE(x.run_vouched_at, now())
                    RETURNING * INTO g;
                END IF;
            ELSIF why IS NULL AND part[2]::bigint <> started_us AND g.run_vouched_at IS NULL THEN
                UPDATE restore_guard x SET run_vouched_at = now(), updated_at = now()
                WHERE x.run_vouched_at IS NULL
                RETURNING * INTO g;
            END IF;
        END IF;
    END IF;
    IF g.run_vouched_at IS NULL THEN  -- nobody vouched for this run yet: one window from its start
        run_hold := started + make_interval(secs => span);
    END IF;
    payload := sysid || ':' || started_us || ':' || pg_current_wal_lsn() || ':' || newest
        || ':' || (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    RETURN QUERY  -- a receipt, too, adds nothing to a hold that lasts past its slot
    SELECT CASE WHEN run_hold > COALESCE(h.hold_until, '-infinity') THEN run_hold
                ELSE h.hold_until END,
           CASE WHEN run_hold > COALESCE(h.hold_until, '-infinity') THEN
                    'the server started at ' || started || ' and no running process has '
                    || 'vouched yet that it is the database it knew (a restored base backup '
                    || 'looks the same)'
                ELSE h.reason END,
           payload || ':' || bf4ps_mark_sign(payload)
    FROM bf4ps_restore_check(CASE WHEN bf4ps_guard_after(g, p_slot_at) THEN p_request END,
                             p_slot_at, p_receipt) h;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text, p_mark text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text, p_mark text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text, p_mark text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_restore_hold()
 RETURNS TABLE(hold_until timestamp with time zone, reason text, run_rule boolean)
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    g restore_guard;
    started timestamptz := pg_postmaster_start_time();
    run_hold timestamptz;
BEGIN
    SELECT * INTO g FROM restore_guard;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF g.run_started_at IS NOT NULL
            AND (g.run_started_at IS DISTINCT FROM started OR g.run_vouched_at IS NULL) THEN
        run_hold := started + make_interval(secs => bf4ps_restore_span());
    END IF;
    IF run_hold > now() AND run_hold > COALESCE(g.hold_until, '-infinity') THEN
        RETURN QUERY SELECT run_hold,
            'the server started at ' || started || ' and no running process has vouched yet '
            || 'that it is the database it knew (`bf4ps db vouch` if it is)', true;
    ELSIF g.hold_until > now() THEN
        RETURN QUERY SELECT g.hold_until, COALESCE(g.reason, 'unknown'), false;
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_restore_hold() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_web;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_restore_span()
 RETURNS double precision
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT greatest(1.0,
        (SELECT b.window_seconds FROM fleet_budget b WHERE b.requests IS NOT NULL),
        (SELECT max(greatest(e.window_seconds, e.min_interval_seconds)) FROM egress_gates e))
$function$;
REVOKE ALL ON FUNCTION bf4ps_restore_span() FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_restore_vouch(p_reason text)
 RETURNS TABLE(outcome text, run_started_at timestamp with time zone, vouched_at timestamp with time zone, hold_until timestamp with time zone, reason text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    g restore_guard;
    started timestamptz := pg_postmaster_start_time();
    result text := 'already vouched';
    id bigint;
    before jsonb;
    after jsonb;
BEGIN
    IF NOT bf4ps_caller_holds('bf4ps_operator') THEN
        RAISE EXCEPTION 'only an operator may vouch for a server start (not %)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF btrim(COALESCE(p_reason, '')) = '' THEN
        RAISE EXCEPTION 'a vouch needs a reason' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO g FROM restore_guard FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'no guard'::text, NULL::timestamptz, NULL::timestamptz,
                            NULL::timestamptz, NULL::text;
        RETURN;
    END IF;
    IF g.run_started_at IS DISTINCT FROM started THEN  -- as the guard's check registers a run
        UPDATE restore_guard x
        SET run_started_at = started, run_lsn = pg_current_wal_lsn(), updated_at = now(),
            run_vouched_at = CASE WHEN x.run_started_at IS NULL THEN now() END
        RETURNING * INTO g;
    END IF;
    IF g.run_vouched_at IS NULL THEN
        before := jsonb_build_object('run_started_at', g.run_started_at, 'run_vouched_at', NULL);
        UPDATE restore_guard x SET run_vouched_at = now(), updated_at = now()
        WHERE x.run_vouched_at IS NULL
        RETURNING * INTO g;
        after := jsonb_build_object('run_started_at', g.run_started_at,
                                    'run_vouched_at', g.run_vouched_at);
        INSERT INTO fleet_settings_changes (setting, subject, old_value, new_value, changed_by,
                                            reason)
        VALUES ('restore', 'run', before, after, left(session_user, 200), left(p_reason, 200))
        RETURNING change_id INTO id;
        INSERT INTO collection_events (event_type, result, details)
        VALUES ('fleet_settings_changed', 'restore',
                jsonb_build_object('change_id', id, 'setting', 'restore', 'subject', 'run',
                                   'old', before, 'new', after, 'by', session_user::text,
                                   'reason', p_reason));
        result := 'vouched';
    END IF;
    RETURN QUERY SELECT result, g.run_started_at, g.run_vouched_at,
        CASE WHEN g.hold_until > now() THEN g.hold_until END,
        CASE WHEN g.hold_until > now() THEN g.reason END;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_restore_vouch(p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_vouch(p_reason text) TO bf4ps_operator;
