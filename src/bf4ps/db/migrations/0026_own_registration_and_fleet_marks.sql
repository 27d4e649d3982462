-- The rest of "production trust" (docs/operations.md "Roles and what each may do",
-- docs/architecture.md "The restore guard"), after 0023:
--
-- 1. A collector's lifecycle writes (heartbeat, clock report, stop) are its own registration's
--    only, as its events and its start already were (0023): a collector login cannot keep
--    another login's collector alive, stop it, or report its clock.
-- 2. No runtime role keeps a direct INSERT on the event log: the operators' goes too. An
--    operator login records events through bf4ps_event_record under the rules of the roles it
--    holds (its event types, no lease it does not hold, a collector's events of a registration
--    its login made); only the schema's owner and superusers write as they say.
-- 3. The restore guard without files: every check hands the caller a signed mark of where the
--    database stood (its WAL position, the ledger's newest row, the server's start), and the
--    caller shows its newest mark at its next check. A mark that the database no longer
--    reaches (a ledger row it saw is gone; a WAL position beyond where this server's run
--    began) means the database was rewound: the fleet is held one window. Each server start is
--    a new run; until a running process shows a mark of an earlier run that the database
--    still reaches (it vouches that this is the database it knew), the fleet is held from the
--    start for one window at most, so that a base backup restored under a fleet whose every
--    process was restarted is still not trusted at once.

-- ---------------------------------------------------------------- 1. own registration only
-- A collector-role login acts on a registration its own login made (or that no login made
-- yet: an older schema's, which its start then takes); operators (and superusers) on any.
CREATE FUNCTION bf4ps_collector_own(p_collector uuid, p_action text) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    owner text;
BEGIN
    SELECT x.db_login INTO owner FROM collectors x WHERE x.collector_uuid = p_collector;
    IF owner IS NOT NULL AND owner <> session_user::text
            AND NOT bf4ps_caller_holds('bf4ps_operator') THEN
        RAISE EXCEPTION 'a collector may % only its own registration (collector %, registered '
            'by login %, not %)', p_action, p_collector, owner, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION bf4ps_collector_own(uuid, text) FROM PUBLIC;

-- Each of the three keeps its body (0018) under a new name that no runtime role may execute,
-- behind a function of the old name that first asks whose registration it is.
ALTER FUNCTION bf4ps_collector_heartbeat(uuid) RENAME TO bf4ps_collector_heartbeat_any;
ALTER FUNCTION bf4ps_collector_stopped(uuid) RENAME TO bf4ps_collector_stopped_any;
ALTER FUNCTION bf4ps_collector_clock(uuid, double precision, double precision, boolean)
    RENAME TO bf4ps_collector_clock_any;
REVOKE EXECUTE ON FUNCTION bf4ps_collector_heartbeat_any(uuid),
    bf4ps_collector_stopped_any(uuid),
    bf4ps_collector_clock_any(uuid, double precision, double precision, boolean)
FROM PUBLIC, bf4ps_collector;

CREATE FUNCTION bf4ps_collector_heartbeat(p_collector uuid)
RETURNS TABLE (enabled boolean, drained boolean, retired_at timestamptz,
               previous_health text, lost_since timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'heartbeat');
    RETURN QUERY SELECT * FROM bf4ps_collector_heartbeat_any(p_collector);
END
$$;

CREATE FUNCTION bf4ps_collector_stopped(p_collector uuid)
RETURNS TABLE (collector_uuid uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'stop');
    RETURN QUERY SELECT * FROM bf4ps_collector_stopped_any(p_collector);
END
$$;

CREATE FUNCTION bf4ps_collector_clock(p_collector uuid, p_offset double precision,
                                      p_rtt double precision, p_skewed boolean)
RETURNS TABLE (was_skewed_since timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'report the clock of');
    RETURN QUERY SELECT * FROM bf4ps_collector_clock_any(p_collector, p_offset, p_rtt,
                                                         p_skewed);
END
$$;

REVOKE EXECUTE ON FUNCTION bf4ps_collector_heartbeat(uuid), bf4ps_collector_stopped(uuid),
    bf4ps_collector_clock(uuid, double precision, double precision, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_collector_heartbeat(uuid), bf4ps_collector_stopped(uuid),
    bf4ps_collector_clock(uuid, double precision, double precision, boolean)
TO bf4ps_collector;

-- ---------------------------------------------------------------- 2. events: no direct INSERT
-- As 0023's, but only the owner and superusers write as they say: an operator login is
-- judged by the roles it holds (it is a member of the collector's, the scheduler's and the
-- website's), like every other caller.
CREATE OR REPLACE FUNCTION bf4ps_event_record(
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
    free boolean := session_user::text = current_user::text
        OR (SELECT a.rolsuper FROM pg_roles a WHERE a.rolname = session_user);
BEGIN
    e := ROW(NULL, clock_timestamp(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
             $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)::collection_events;
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
$$;

-- (retention's DELETE of old events stays the scheduler's, and its operators')
REVOKE INSERT ON collection_events FROM bf4ps_operator;

-- ---------------------------------------------------------------- 3. the fleet's marks
-- This server's run (its postmaster start) and the WAL position at the guard's first look at
-- it; vouched_at: when a running process showed a mark of an earlier run that the database
-- still reaches (or the run was judged a restore). NULL start: the guard never looked (a new
-- database): its first run is vouched for.
ALTER TABLE restore_guard ADD COLUMN run_started_at timestamptz,
    ADD COLUMN run_lsn pg_lsn, ADD COLUMN run_vouched_at timestamptz;

CREATE FUNCTION bf4ps_mark_sign(p_payload text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT encode(sha256(k.secret || sha256(k.secret || convert_to('mark:' || p_payload,
                                                                   'UTF8'))), 'hex')
    FROM ledger_receipt_key k
$$;

-- What a process saw at `t` (a mark's issue, a receipt's slot) adds nothing to a hold that
-- lasts past `t`: nothing is admitted while the fleet is held, so every row the process saw
-- was admitted before that hold was noticed, and leaves every window by the hold's end.
-- (0023's receipts alone compared with the detection's instant: a row whose slot lay just
-- after it was noticed again once the hold ended, and named that rewind instead.)
CREATE FUNCTION bf4ps_guard_after(g restore_guard, t timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT g.hold_until IS NULL OR t > g.hold_until
$$;

-- A mark: system identifier : server start (µs) : WAL position : ledger's newest row id :
-- issued at (µs) : signature. Opaque to its holder.
CREATE FUNCTION bf4ps_restore_check(p_request bigint, p_slot_at timestamptz, p_receipt text,
                                    p_mark text)
RETURNS TABLE (hold_until timestamptz, reason text, mark text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
$$;

REVOKE EXECUTE ON FUNCTION bf4ps_mark_sign(text),
    bf4ps_restore_check(bigint, timestamptz, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(bigint, timestamptz, text, text)
TO bf4ps_collector, bf4ps_scheduler;
