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

-- ---------------------------------------------------------------- scheduler
GRANT INSERT, UPDATE ON soldiers, soldier_names, soldier_sources, intake_state,
    collection_state, coverage_counters, interactive_requests TO bf4ps_scheduler;
GRANT INSERT, UPDATE, DELETE ON collection_jobs TO bf4ps_scheduler;
GRANT UPDATE ON collectors TO bf4ps_scheduler;
-- retention: old events and old ledger rows, in batches (whole partitions: the function below)
GRANT INSERT, DELETE ON collection_events TO bf4ps_scheduler;
GRANT DELETE ON request_ledger TO bf4ps_scheduler;

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
