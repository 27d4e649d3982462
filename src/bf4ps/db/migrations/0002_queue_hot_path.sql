-- The queue's hot path (claim → start → finalize, three statements per job) without avoidable
-- per-statement work (1, 2; measured with bench/queue_cycle.py, see bench/RESULTS.md), and
-- unsent requests in the ledger (3).
--
-- 1. Single-column rules of the hot tables (collection_events, collection_jobs, collection_state)
--    become domains. A table CHECK is re-read from the catalog's text form, planned and compiled
--    on every INSERT/UPDATE statement (13 of them per event insert, 14 per job update); a
--    domain's rule is compiled once per session and checked only for the columns written. The
--    rules are the same; multi-column rules (lease shape, lookup shape, error pairs, state
--    shapes) stay table CHECKs. Converting validates existing rows but rewrites nothing.

-- The domains start without their rule, so changing a column's type rewrites no table; the
-- rules are added afterwards (each one validates the rows already stored).
CREATE DOMAIN bf4ps_platform AS text;
CREATE DOMAIN bf4ps_lane AS text;
CREATE DOMAIN bf4ps_priority_class AS text;
CREATE DOMAIN bf4ps_job_resource AS text;
CREATE DOMAIN bf4ps_resource AS text;
CREATE DOMAIN bf4ps_error_class AS text;
CREATE DOMAIN bf4ps_message AS text;
CREATE DOMAIN bf4ps_count AS integer;
CREATE DOMAIN bf4ps_event_type AS text;
CREATE DOMAIN bf4ps_job_status AS text;
CREATE DOMAIN bf4ps_job_reason AS text;
CREATE DOMAIN bf4ps_state_status AS text;
CREATE DOMAIN bf4ps_activity_class AS text;
CREATE DOMAIN bf4ps_soldier_name AS text;
CREATE DOMAIN bf4ps_http_status AS integer;
CREATE DOMAIN bf4ps_event_result AS text;
CREATE DOMAIN bf4ps_event_details AS jsonb;

ALTER TABLE collection_events
    DROP CONSTRAINT collection_events_attempt_number_check,
    DROP CONSTRAINT collection_events_details_check,
    DROP CONSTRAINT collection_events_duration_ms_check,
    DROP CONSTRAINT collection_events_error_class_check,
    DROP CONSTRAINT collection_events_error_message_check,
    DROP CONSTRAINT collection_events_event_type_check,
    DROP CONSTRAINT collection_events_http_status_check,
    DROP CONSTRAINT collection_events_lane_check,
    DROP CONSTRAINT collection_events_platform_check,
    DROP CONSTRAINT collection_events_priority_class_check,
    DROP CONSTRAINT collection_events_resource_check,
    DROP CONSTRAINT collection_events_result_check,
    DROP CONSTRAINT collection_events_wait_ms_check,
    ALTER COLUMN event_type TYPE bf4ps_event_type,
    ALTER COLUMN lane TYPE bf4ps_lane,
    ALTER COLUMN platform TYPE bf4ps_platform,
    ALTER COLUMN resource TYPE bf4ps_job_resource,
    ALTER COLUMN priority_class TYPE bf4ps_priority_class,
    ALTER COLUMN attempt_number TYPE bf4ps_count,
    ALTER COLUMN result TYPE bf4ps_event_result,
    ALTER COLUMN duration_ms TYPE bf4ps_count,
    ALTER COLUMN wait_ms TYPE bf4ps_count,
    ALTER COLUMN http_status TYPE bf4ps_http_status,
    ALTER COLUMN error_class TYPE bf4ps_error_class,
    ALTER COLUMN error_message TYPE bf4ps_message,
    ALTER COLUMN details TYPE bf4ps_event_details;

ALTER TABLE collection_jobs
    DROP CONSTRAINT collection_jobs_attempt_count_check,
    DROP CONSTRAINT collection_jobs_lane_check,
    DROP CONSTRAINT collection_jobs_last_error_class_check,
    DROP CONSTRAINT collection_jobs_last_error_message_check,
    DROP CONSTRAINT collection_jobs_lookup_name_check,
    DROP CONSTRAINT collection_jobs_lookup_platform_check,
    DROP CONSTRAINT collection_jobs_priority_class_check,
    DROP CONSTRAINT collection_jobs_reason_check,
    DROP CONSTRAINT collection_jobs_resource_check,
    DROP CONSTRAINT collection_jobs_status_check,
    ALTER COLUMN attempt_count TYPE bf4ps_count,
    ALTER COLUMN lane TYPE bf4ps_lane,
    ALTER COLUMN last_error_class TYPE bf4ps_error_class,
    ALTER COLUMN last_error_message TYPE bf4ps_message,
    ALTER COLUMN lookup_name TYPE bf4ps_soldier_name,
    ALTER COLUMN lookup_platform TYPE bf4ps_platform,
    ALTER COLUMN priority_class TYPE bf4ps_priority_class,
    ALTER COLUMN reason TYPE bf4ps_job_reason,
    ALTER COLUMN resource TYPE bf4ps_job_resource,
    ALTER COLUMN status TYPE bf4ps_job_status;

ALTER TABLE collection_state
    DROP CONSTRAINT collection_state_activity_class_check,
    DROP CONSTRAINT collection_state_attempts_total_check,
    DROP CONSTRAINT collection_state_consecutive_failures_check,
    DROP CONSTRAINT collection_state_last_error_class_check,
    DROP CONSTRAINT collection_state_last_error_message_check,
    DROP CONSTRAINT collection_state_resource_check,
    DROP CONSTRAINT collection_state_status_check,
    ALTER COLUMN activity_class TYPE bf4ps_activity_class,
    ALTER COLUMN attempts_total TYPE bf4ps_count,
    ALTER COLUMN consecutive_failures TYPE bf4ps_count,
    ALTER COLUMN last_error_class TYPE bf4ps_error_class,
    ALTER COLUMN last_error_message TYPE bf4ps_message,
    ALTER COLUMN resource TYPE bf4ps_resource,
    ALTER COLUMN status TYPE bf4ps_state_status;

ALTER DOMAIN bf4ps_platform ADD CONSTRAINT bf4ps_platform_check
    CHECK (VALUE IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone'));
ALTER DOMAIN bf4ps_lane ADD CONSTRAINT bf4ps_lane_check
    CHECK (VALUE IN ('background', 'interactive'));
ALTER DOMAIN bf4ps_priority_class ADD CONSTRAINT bf4ps_priority_class_check
    CHECK (VALUE IN ('interactive', 'active', 'recent', 'bootstrap'));
ALTER DOMAIN bf4ps_job_resource ADD CONSTRAINT bf4ps_job_resource_check
    CHECK (VALUE IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup'));
ALTER DOMAIN bf4ps_resource ADD CONSTRAINT bf4ps_resource_check
    CHECK (VALUE IN ('detailed', 'profile', 'weapons', 'vehicles'));
ALTER DOMAIN bf4ps_error_class ADD CONSTRAINT bf4ps_error_class_check
    CHECK (VALUE IN ('throttle', 'timeout', 'server', 'not_found', 'malformed', 'internal'));
ALTER DOMAIN bf4ps_message ADD CONSTRAINT bf4ps_message_check CHECK (length(VALUE) <= 500);
ALTER DOMAIN bf4ps_count ADD CONSTRAINT bf4ps_count_check CHECK (VALUE >= 0);
ALTER DOMAIN bf4ps_event_type ADD CONSTRAINT bf4ps_event_type_check
    CHECK (VALUE ~ '^[a-z][a-z_]{1,40}$');
ALTER DOMAIN bf4ps_job_status ADD CONSTRAINT bf4ps_job_status_check
    CHECK (VALUE IN ('pending', 'claimed', 'running'));
ALTER DOMAIN bf4ps_job_reason ADD CONSTRAINT bf4ps_job_reason_check
    CHECK (VALUE IN ('bf4sw_discovery', 'bootstrap', 'active_refresh', 'retry', 'manual', 'lookup'));
ALTER DOMAIN bf4ps_state_status ADD CONSTRAINT bf4ps_state_status_check
    CHECK (VALUE IN ('never_attempted', 'current', 'due', 'retry_wait', 'unavailable'));
ALTER DOMAIN bf4ps_activity_class ADD CONSTRAINT bf4ps_activity_class_check
    CHECK (VALUE IN ('active', 'recent', 'bootstrap'));
ALTER DOMAIN bf4ps_soldier_name ADD CONSTRAINT bf4ps_soldier_name_check
    CHECK (btrim(VALUE) <> '' AND length(VALUE) <= 64);
ALTER DOMAIN bf4ps_http_status ADD CONSTRAINT bf4ps_http_status_check
    CHECK (VALUE BETWEEN 100 AND 599);
ALTER DOMAIN bf4ps_event_result ADD CONSTRAINT bf4ps_event_result_check
    CHECK (length(VALUE) <= 40);
ALTER DOMAIN bf4ps_event_details ADD CONSTRAINT bf4ps_event_details_check
    CHECK (pg_column_size(VALUE) <= 4096);

-- 2. A collector's current job is derived from the live queue (the job it holds a lease on)
--    instead of being stored: the stored pointer cost every claim an update of the collector's row
--    with a foreign-key check, and every job removal a SET NULL action on the registry.
ALTER TABLE collectors DROP COLUMN current_job_id;

-- Per-collector look-up of leased jobs (the registry's current job); the claim's reclaim scan
-- reads the same few entries by lane.
DROP INDEX ix_jobs_leased;
CREATE INDEX ix_jobs_leased ON collection_jobs (lane, collector_uuid)
    WHERE status IN ('claimed', 'running');

-- 3. A request counted in the ledger whose collector then gave the slot up before writing a byte
--    (late at the on-time check or at the socket) is marked unsent and stops counting against
--    the budgets; a row without the mark always counts (ambiguous outcomes included).
ALTER TABLE request_ledger ADD COLUMN unsent_at timestamptz;
ALTER TABLE request_ledger ADD CONSTRAINT ledger_unsent_order CHECK (unsent_at >= counted_at);
