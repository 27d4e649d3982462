-- Production operations, in three parts: least-privilege roles (here), the restore guard and
-- the schema-compatibility table (below).
--
-- Least-privilege group roles, one per kind of process. Login roles get one with
-- `bf4ps db grant ROLE LOGIN_ROLE`; only the schema owner (the role that runs `bf4ps db
-- upgrade`) owns tables and may change the schema.
--
--   bf4ps_collector  claim, renew, finalize, write stats and the ledger through the queue's
--                    statements; no DDL, deletes nothing but its own finished job
--   bf4ps_scheduler  feeder, reaper, BF4SW intake, retention (old events and ledger rows)
--   bf4ps_web        the website: reads, players' requests, the console's drain/resume
--   bf4ps_operator   the CLI's operator commands: the three above plus the run-time policy,
--                    and may grant the three process roles to login roles
--
-- Roles belong to the PostgreSQL cluster, grants to this database: the roles are created once
-- (CREATEROLE is needed the first time; an existing role is kept), the grants in every
-- database migrated. A later migration that adds a table or function a process needs adds
-- its grant to the list below's role; tests/integration/test_roles.py runs the processes as
-- these roles and names any privilege missing.

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['bf4ps_collector', 'bf4ps_scheduler', 'bf4ps_web', 'bf4ps_operator']
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        END IF;
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), r);
        -- reading is shared: statistics and the event log hold no secrets (never a payload)
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', current_schema(), r);
    END LOOP;
END;
$$;

-- ---------------------------------------------------------------- collector
-- registration and heartbeats
GRANT INSERT, UPDATE ON collectors TO bf4ps_collector;
-- claim, renew, reslot, release, retry (UPDATE), the chained interactive resources (INSERT),
-- and the finished job's removal (DELETE): the only row a collector ever deletes
GRANT INSERT, UPDATE, DELETE ON collection_jobs TO bf4ps_collector;
GRANT INSERT ON collection_events TO bf4ps_collector;
GRANT UPDATE ON interactive_requests TO bf4ps_collector;
-- collection state and its coverage counters (kept by the state table's trigger)
GRANT INSERT, UPDATE ON collection_state, coverage_counters TO bf4ps_collector;
-- admission: gates, the fleet budget row, the ledger (marked unsent, never deleted)
GRANT INSERT, UPDATE ON egress_gates, request_ledger TO bf4ps_collector;
GRANT UPDATE ON fleet_budget TO bf4ps_collector;
-- a look-up's soldier, and the statistics: current rows are upserted, history only appended
GRANT INSERT, UPDATE ON soldiers, soldier_names, soldier_sources TO bf4ps_collector;
GRANT INSERT, UPDATE ON detailed_stats_current, profile_current, soldier_weapon_stats,
    soldier_vehicle_stats, weapon_catalog, vehicle_catalog TO bf4ps_collector;
GRANT INSERT ON detailed_stats_history, soldier_weapon_history, soldier_vehicle_history
    TO bf4ps_collector;
-- the fleet circuit breaker (0009): opened, probed and closed by whichever collector sees it
GRANT INSERT, UPDATE ON circuit_breakers TO bf4ps_collector;
GRANT INSERT, DELETE ON circuit_holds TO bf4ps_collector;
-- `bf4ps recon` runs as a collector of its egress (0009); seeding an egress or the budget
-- records the change (0010)
GRANT INSERT, UPDATE ON recon_runs, recon_samples TO bf4ps_collector;
GRANT INSERT ON fleet_settings_changes TO bf4ps_collector;

-- ---------------------------------------------------------------- scheduler
GRANT INSERT, UPDATE ON soldiers, soldier_names, soldier_sources, intake_state,
    collection_state, coverage_counters, interactive_requests TO bf4ps_scheduler;
GRANT INSERT, UPDATE, DELETE ON collection_jobs TO bf4ps_scheduler;
GRANT UPDATE ON collectors TO bf4ps_scheduler;
-- retention: old events and old ledger rows, in batches (whole partitions: the function below)
GRANT INSERT, DELETE ON collection_events TO bf4ps_scheduler;
GRANT DELETE ON request_ledger TO bf4ps_scheduler;
-- the fleet history and the capacity check (0012), pruned like the event log
GRANT INSERT, DELETE ON fleet_history TO bf4ps_scheduler;
GRANT INSERT, UPDATE ON capacity_check TO bf4ps_scheduler;

-- ---------------------------------------------------------------- website
GRANT INSERT, UPDATE ON interactive_requests, soldiers, soldier_names, soldier_sources,
    collection_state, coverage_counters TO bf4ps_web;
GRANT INSERT, UPDATE ON collection_jobs TO bf4ps_web;
GRANT INSERT ON collection_events TO bf4ps_web;
GRANT UPDATE ON collectors TO bf4ps_web;

-- ---------------------------------------------------------------- operator
GRANT bf4ps_collector, bf4ps_scheduler, bf4ps_web TO bf4ps_operator WITH ADMIN OPTION;
GRANT INSERT, UPDATE, DELETE ON scheduler_policy TO bf4ps_operator;
GRANT UPDATE ON egress_gates, fleet_budget TO bf4ps_operator;
-- the fleet settings commands (0010): a new egress's gate, each change audited (a row and an
-- event); `bf4ps battlelog fetch` counts its request and marks it unsent when it gives it up
GRANT INSERT ON egress_gates, fleet_settings_changes, collection_events TO bf4ps_operator;
GRANT INSERT, UPDATE ON request_ledger TO bf4ps_operator;
GRANT INSERT, UPDATE ON recon_runs, recon_samples TO bf4ps_operator;

-- ---------------------------------------------------------------- partitions
-- Creating and dropping partitions needs the table's owner: two owner-run functions do
-- exactly that and nothing else, for the scheduler and operators (never PUBLIC).
ALTER FUNCTION bf4ps_ensure_event_partitions(date, integer)
    SECURITY DEFINER SET search_path FROM CURRENT;

CREATE FUNCTION bf4ps_drop_event_partition(part text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    -- only a monthly partition of the event log, never the table itself or its default
    IF part !~ '^collection_events_[0-9]{6}$' OR NOT EXISTS (
            SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'collection_events'::regclass AND c.relname = part) THEN
        RAISE EXCEPTION 'not a monthly partition of collection_events: %', part
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE format('DROP TABLE %I', part);
    RETURN true;
END;
$$;

REVOKE EXECUTE ON FUNCTION bf4ps_ensure_event_partitions(date, integer),
    bf4ps_drop_event_partition(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ensure_event_partitions(date, integer),
    bf4ps_drop_event_partition(text) TO bf4ps_scheduler;

-- ---------------------------------------------------------------- granting
-- `bf4ps db grant`: one of the four roles to a login role, by a role allowed to grant it
-- (the owner, a CREATEROLE role, or bf4ps_operator for the three process roles).
CREATE FUNCTION bf4ps_grant_role(role_name text, login_name text) RETURNS void
LANGUAGE plpgsql AS $$
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
$$;

-- ---------------------------------------------------------------- restore guard
-- A restored backup rewinds request_ledger: requests sent after the backup was taken are
-- forgotten, and the budgets would allow them again within their windows. The guard notices a
-- restore through the cluster's identity (system identifier, timeline, this database's oid:
-- recorded by the first check, restored with the rest, then differing from the live ones),
-- or through a collector's own last ledger row (kept in its data directory) gone missing, and
-- then holds every collector's sends for the longest window any budget counts over, from the
-- moment of detection: every forgotten request was sent before it.
CREATE TABLE restore_guard (
    guard_id smallint PRIMARY KEY DEFAULT 1 CHECK (guard_id = 1),
    -- this database's own id: a dump or a backup carries it, a new database has another one, so
    -- a collector's last-counted mark (its data directory) is compared only within one database
    instance_id uuid NOT NULL DEFAULT gen_random_uuid(),
    system_identifier bigint,
    timeline_id integer,
    database_oid oid,
    hold_until timestamptz,
    detected_at timestamptz,
    reason text CHECK (length(reason) <= 500),
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO restore_guard (guard_id) VALUES (1);
GRANT SELECT ON restore_guard TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;

CREATE FUNCTION bf4ps_restore_check(missing_request text DEFAULT NULL)
RETURNS TABLE (hold_until timestamptz, reason text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    g restore_guard;
    sysid bigint := (SELECT c.system_identifier FROM pg_control_system() c);
    tl integer := (SELECT c.timeline_id FROM pg_control_checkpoint() c);
    dboid oid := (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
    why text;
    span double precision;
BEGIN
    SELECT * INTO g FROM restore_guard;
    IF missing_request IS NULL AND g.system_identifier = sysid AND g.timeline_id = tl
            AND g.database_oid = dboid THEN
        RETURN QUERY SELECT g.hold_until, g.reason;  -- the common case: one read, no lock
        RETURN;
    END IF;
    SELECT * INTO g FROM restore_guard FOR UPDATE;
    IF g.system_identifier IS NOT NULL THEN
        why := CASE
            WHEN g.system_identifier <> sysid THEN 'restored into another cluster (system '
                || 'identifier ' || g.system_identifier || ' -> ' || sysid || ')'
            WHEN g.timeline_id <> tl THEN 'the cluster changed timeline (' || g.timeline_id
                || ' -> ' || tl || '): a point-in-time recovery or a promoted standby'
            WHEN g.database_oid <> dboid THEN 'the database was re-created (a restored dump)'
        END;
    END IF;
    -- a missing row reported while a hold is on adds nothing: that hold began after the row
    IF why IS NULL AND (g.hold_until IS NULL OR g.hold_until <= now()) THEN
        why := missing_request;
    END IF;
    IF why IS NOT NULL THEN
        span := greatest(1.0,
            (SELECT b.window_seconds FROM fleet_budget b WHERE b.requests IS NOT NULL),
            (SELECT max(greatest(e.window_seconds, e.min_interval_seconds)) FROM egress_gates e));
        UPDATE restore_guard r SET hold_until = greatest(r.hold_until,
                                                         now() + make_interval(secs => span)),
            detected_at = now(), reason = left(why, 500);
    END IF;
    UPDATE restore_guard r SET system_identifier = sysid, timeline_id = tl,
        database_oid = dboid, updated_at = now();
    RETURN QUERY SELECT r.hold_until, r.reason FROM restore_guard r;
END;
$$;
REVOKE EXECUTE ON FUNCTION bf4ps_restore_check(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(text)
    TO bf4ps_collector, bf4ps_scheduler, bf4ps_operator;

-- ---------------------------------------------------------------- schema compatibility
-- Per applied migration, the oldest build schema that still works once it is applied (its
-- `-- compatible-from:` line; bf4ps/db/compat.py). Written by `bf4ps db upgrade`, read by
-- every process at start, so that an older build knows whether a newer schema admits it.
CREATE TABLE schema_compat (
    version integer PRIMARY KEY,
    compatible_from integer NOT NULL CHECK (compatible_from <= version)
);
GRANT SELECT ON schema_compat TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;
