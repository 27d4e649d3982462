-- The BF4PS schema as the migrations and the code files (db/functions/) leave it, read back
-- from an upgraded database.
-- GENERATED, do not edit: after changing a migration or a code file run
--     python -m tests.schema.regenerate
-- (tests/db/test_schema.py fails while this file and the migrations disagree).
-- Grants name every role but the owner; a function is executable by the roles granted here.

-- Domains and types

CREATE DOMAIN bf4ps_activity_class AS text CHECK ((VALUE = ANY (ARRAY['active'::text, 'recent'::text, 'bootstrap'::text])));
CREATE DOMAIN bf4ps_count AS integer CHECK ((VALUE >= 0));
CREATE DOMAIN bf4ps_error_class AS text CHECK ((VALUE = ANY (ARRAY['throttle'::text, 'timeout'::text, 'server'::text, 'not_found'::text, 'malformed'::text, 'internal'::text, 'unrecognized'::text, 'implausible'::text])));
CREATE DOMAIN bf4ps_event_details AS jsonb CHECK ((pg_column_size(VALUE) <= 4096));
CREATE DOMAIN bf4ps_event_result AS text CHECK ((length(VALUE) <= 40));
CREATE DOMAIN bf4ps_event_type AS text CHECK ((VALUE ~ '^[a-z][a-z_]{1,40}$'::text));
CREATE DOMAIN bf4ps_http_status AS integer CHECK (((VALUE >= 100) AND (VALUE <= 599)));
CREATE DOMAIN bf4ps_job_reason AS text CHECK ((VALUE = ANY (ARRAY['bf4sw_discovery'::text, 'bootstrap'::text, 'active_refresh'::text, 'final_refresh'::text, 'scheduled_profile'::text, 'retry'::text, 'manual'::text, 'lookup'::text])));
CREATE DOMAIN bf4ps_job_resource AS text CHECK ((VALUE = ANY (ARRAY['detailed'::text, 'profile'::text, 'weapons'::text, 'vehicles'::text, 'lookup'::text])));
CREATE DOMAIN bf4ps_job_status AS text CHECK ((VALUE = ANY (ARRAY['pending'::text, 'claimed'::text, 'running'::text])));
CREATE DOMAIN bf4ps_lane AS text CHECK ((VALUE = ANY (ARRAY['background'::text, 'interactive'::text])));
CREATE DOMAIN bf4ps_message AS text CHECK ((length(VALUE) <= 500));
CREATE DOMAIN bf4ps_platform AS text CHECK ((VALUE = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text])));
CREATE DOMAIN bf4ps_priority_class AS text CHECK ((VALUE = ANY (ARRAY['interactive'::text, 'active'::text, 'recent'::text, 'bootstrap'::text])));
CREATE DOMAIN bf4ps_resource AS text CHECK ((VALUE = ANY (ARRAY['detailed'::text, 'profile'::text, 'weapons'::text, 'vehicles'::text])));
CREATE DOMAIN bf4ps_soldier_name AS text CHECK (((btrim(VALUE) <> ''::text) AND (length(VALUE) <= 64)));
CREATE DOMAIN bf4ps_state_status AS text CHECK ((VALUE = ANY (ARRAY['never_attempted'::text, 'current'::text, 'due'::text, 'retry_wait'::text, 'unavailable'::text])));
CREATE TYPE admission_answer AS (outcome text, slot timestamp with time zone, wait_until timestamp with time zone, ledger_id bigint, classes text[]);
CREATE TYPE queue_claimed AS (finished bigint, gate_wait_until timestamp with time zone, job_id bigint, soldier_id bigint, resource text, lane text, priority_class text, rank timestamp with time zone, reason text, attempt_count integer, is_retry boolean, lease_token uuid, claimed_at timestamp with time zone, started_at timestamp with time zone, lease_expires_at timestamp with time zone, request_id uuid, lookup_name text, lookup_platform text, reclaimed boolean, persona_id bigint, platform text, current_name text);
CREATE TYPE queue_counted AS (claimed queue_claimed, slot_at timestamp with time zone, ledger_id bigint);

-- Tables

CREATE TABLE answer_suspects (
    soldier_id bigint NOT NULL,
    resource text NOT NULL,
    kind text NOT NULL,
    first_at timestamp with time zone NOT NULL,
    last_at timestamp with time zone NOT NULL,
    answers integer NOT NULL,
    counters jsonb NOT NULL,
    CONSTRAINT answer_suspects_answers_check CHECK ((answers >= 1)),
    CONSTRAINT answer_suspects_check CHECK ((last_at >= first_at)),
    CONSTRAINT answer_suspects_kind_check CHECK ((kind = ANY (ARRAY['lower'::text, 'unconfirmed_zero'::text]))),
    CONSTRAINT answer_suspects_pkey PRIMARY KEY (soldier_id, resource),
    CONSTRAINT answer_suspects_resource_check CHECK ((resource = ANY (ARRAY['detailed'::text, 'profile'::text, 'weapons'::text, 'vehicles'::text]))),
    CONSTRAINT answer_suspects_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
GRANT SELECT ON TABLE answer_suspects TO bf4ps_collector;
GRANT SELECT ON TABLE answer_suspects TO bf4ps_operator;
GRANT SELECT ON TABLE answer_suspects TO bf4ps_scheduler;
GRANT SELECT ON TABLE answer_suspects TO bf4ps_web;

CREATE UNLOGGED TABLE budget_buckets (
    span smallint NOT NULL,
    starts_at bigint NOT NULL,
    budget_class text NOT NULL,
    n integer NOT NULL,
    CONSTRAINT budget_buckets_aligned CHECK (((starts_at % (span)::bigint) = 0)),
    CONSTRAINT budget_buckets_n_check CHECK ((n >= 0)),
    CONSTRAINT budget_buckets_pkey PRIMARY KEY (span, starts_at, budget_class),
    CONSTRAINT budget_buckets_span_check CHECK ((span = ANY (ARRAY[1, 60])))
) WITH (fillfactor=50);
GRANT SELECT ON TABLE budget_buckets TO bf4ps_collector;
GRANT SELECT ON TABLE budget_buckets TO bf4ps_operator;
GRANT SELECT ON TABLE budget_buckets TO bf4ps_scheduler;
GRANT SELECT ON TABLE budget_buckets TO bf4ps_web;

CREATE UNLOGGED TABLE budget_buckets_ready (
    ready boolean NOT NULL DEFAULT true,
    built_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT budget_buckets_ready_pkey PRIMARY KEY (ready),
    CONSTRAINT budget_buckets_ready_ready_check CHECK (ready)
);
GRANT SELECT ON TABLE budget_buckets_ready TO bf4ps_operator;

CREATE TABLE capacity_check (
    check_id smallint NOT NULL DEFAULT 1,
    checked_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    feasible boolean NOT NULL,
    demand_per_hour double precision NOT NULL,
    capacity_per_hour double precision,
    summary text NOT NULL,
    CONSTRAINT capacity_check_capacity_per_hour_check CHECK ((capacity_per_hour >= (0)::double precision)),
    CONSTRAINT capacity_check_check_id_check CHECK ((check_id = 1)),
    CONSTRAINT capacity_check_demand_per_hour_check CHECK ((demand_per_hour >= (0)::double precision)),
    CONSTRAINT capacity_check_pkey PRIMARY KEY (check_id),
    CONSTRAINT capacity_check_summary_check CHECK ((length(summary) <= 500))
);
GRANT SELECT ON TABLE capacity_check TO bf4ps_collector;
GRANT SELECT ON TABLE capacity_check TO bf4ps_operator;
GRANT SELECT ON TABLE capacity_check TO bf4ps_scheduler;
GRANT SELECT ON TABLE capacity_check TO bf4ps_web;

CREATE TABLE circuit_breakers (
    lane text NOT NULL,
    resource text NOT NULL,
    state text NOT NULL,
    signature text NOT NULL,
    opened_at timestamp with time zone NOT NULL,
    closed_at timestamp with time zone,
    next_probe_at timestamp with time zone,
    probe_seconds double precision NOT NULL,
    probe_successes integer NOT NULL DEFAULT 0,
    close_successes integer NOT NULL,
    soldiers integer NOT NULL,
    egresses integer NOT NULL,
    times_opened integer NOT NULL DEFAULT 1,
    updated_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT circuit_breakers_close_successes_check CHECK ((close_successes >= 1)),
    CONSTRAINT circuit_breakers_egresses_check CHECK ((egresses >= 0)),
    CONSTRAINT circuit_breakers_lane_check CHECK ((lane = ANY (ARRAY['background'::text, 'interactive'::text]))),
    CONSTRAINT circuit_breakers_pkey PRIMARY KEY (lane, resource),
    CONSTRAINT circuit_breakers_probe_seconds_check CHECK ((probe_seconds > (0)::double precision)),
    CONSTRAINT circuit_breakers_probe_successes_check CHECK ((probe_successes >= 0)),
    CONSTRAINT circuit_breakers_resource_check CHECK ((resource = ANY (ARRAY['detailed'::text, 'profile'::text, 'weapons'::text, 'vehicles'::text, 'lookup'::text]))),
    CONSTRAINT circuit_breakers_signature_check CHECK ((length(signature) <= 80)),
    CONSTRAINT circuit_breakers_soldiers_check CHECK ((soldiers >= 0)),
    CONSTRAINT circuit_breakers_state_check CHECK ((state = ANY (ARRAY['open'::text, 'closed'::text]))),
    CONSTRAINT circuit_breakers_times_opened_check CHECK ((times_opened >= 1)),
    CONSTRAINT circuit_open_shape CHECK ((((state = 'open'::text) = (next_probe_at IS NOT NULL)) AND ((state = 'closed'::text) = (closed_at IS NOT NULL))))
);
GRANT SELECT ON TABLE circuit_breakers TO bf4ps_collector;
GRANT SELECT ON TABLE circuit_breakers TO bf4ps_operator;
GRANT SELECT ON TABLE circuit_breakers TO bf4ps_scheduler;
GRANT SELECT ON TABLE circuit_breakers TO bf4ps_web;

CREATE TABLE circuit_holds (
    job_id bigint NOT NULL,
    lane text NOT NULL,
    resource text NOT NULL,
    held_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT circuit_holds_pkey PRIMARY KEY (job_id)
);
CREATE INDEX ix_circuit_holds_circuit ON public.circuit_holds USING btree (lane, resource, held_at);
GRANT SELECT ON TABLE circuit_holds TO bf4ps_collector;
GRANT SELECT ON TABLE circuit_holds TO bf4ps_operator;
GRANT SELECT ON TABLE circuit_holds TO bf4ps_scheduler;
GRANT SELECT ON TABLE circuit_holds TO bf4ps_web;

CREATE TABLE collection_events (
    event_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    occurred_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    event_type bf4ps_event_type NOT NULL,
    collector_uuid uuid,
    collector_name text,
    hostname text,
    egress_key text,
    lane bf4ps_lane,
    job_id bigint,
    lease_token uuid,
    soldier_id bigint,
    persona_id bigint,
    platform bf4ps_platform,
    resource bf4ps_job_resource,
    priority_class bf4ps_priority_class,
    attempt_number bf4ps_count,
    result bf4ps_event_result,
    duration_ms bf4ps_count,
    wait_ms bf4ps_count,
    http_status bf4ps_http_status,
    error_class bf4ps_error_class,
    error_message bf4ps_message,
    details bf4ps_event_details,
    claimed_at timestamp with time zone,
    started_at timestamp with time zone,
    recorded_by text DEFAULT SESSION_USER,
    CONSTRAINT collection_events_pkey PRIMARY KEY (occurred_at, event_id)
) PARTITION BY RANGE (occurred_at);
CREATE INDEX ix_events_collector ON ONLY public.collection_events USING btree (collector_uuid, occurred_at DESC) WHERE (collector_uuid IS NOT NULL);
CREATE INDEX ix_events_id ON ONLY public.collection_events USING brin (event_id) WITH (autosummarize='on');
CREATE INDEX ix_events_interactive_done ON ONLY public.collection_events USING btree (occurred_at DESC) WHERE (((lane)::text = 'interactive'::text) AND ((event_type)::text = 'succeeded'::text));
CREATE INDEX ix_events_job ON ONLY public.collection_events USING btree (job_id, occurred_at) WHERE (job_id IS NOT NULL);
CREATE INDEX ix_events_lane_outcome ON ONLY public.collection_events USING btree (resource, lane, occurred_at DESC) WHERE ((event_type)::text = ANY (ARRAY['succeeded'::text, 'failed'::text]));
CREATE INDEX ix_events_resource ON ONLY public.collection_events USING btree (resource, event_type, occurred_at DESC) WHERE ((resource IS NOT NULL) AND ((event_type)::text <> ALL (ARRAY['succeeded'::text, 'failed'::text])));
CREATE INDEX ix_events_soldier ON ONLY public.collection_events USING btree (soldier_id, occurred_at DESC) WHERE (soldier_id IS NOT NULL);
CREATE INDEX ix_events_throttle ON ONLY public.collection_events USING btree (egress_key, occurred_at DESC) WHERE (((error_class)::text = 'throttle'::text) OR ((http_status)::integer = ANY (ARRAY[403, 429])));
CREATE INDEX ix_events_type ON ONLY public.collection_events USING btree (event_type, occurred_at DESC) WHERE ((event_type)::text <> ALL (ARRAY['succeeded'::text, 'failed'::text, 'retry_scheduled'::text, 'created'::text]));
GRANT SELECT (event_id, occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, soldier_id, persona_id, platform, resource, priority_class, attempt_number, result, duration_ms, wait_ms, http_status, error_class, error_message, details, claimed_at, started_at, recorded_by) ON TABLE collection_events TO bf4ps_collector;
GRANT SELECT ON TABLE collection_events TO bf4ps_operator;
GRANT SELECT (event_id, occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, soldier_id, persona_id, platform, resource, priority_class, attempt_number, result, duration_ms, wait_ms, http_status, error_class, error_message, details, claimed_at, started_at, recorded_by) ON TABLE collection_events TO bf4ps_scheduler;
GRANT SELECT (event_id, occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, soldier_id, persona_id, platform, resource, priority_class, attempt_number, result, duration_ms, wait_ms, http_status, error_class, error_message, details, claimed_at, started_at, recorded_by) ON TABLE collection_events TO bf4ps_web;

CREATE TABLE collection_jobs (
    job_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    soldier_id bigint,
    resource bf4ps_job_resource NOT NULL,
    lane bf4ps_lane NOT NULL,
    priority_class bf4ps_priority_class NOT NULL,
    rank timestamp with time zone NOT NULL,
    reason bf4ps_job_reason NOT NULL,
    status bf4ps_job_status NOT NULL DEFAULT 'pending'::text,
    eligible_at timestamp with time zone NOT NULL DEFAULT now(),
    attempt_count bf4ps_count NOT NULL DEFAULT 0,
    request_id uuid,
    lookup_name bf4ps_soldier_name,
    lookup_platform bf4ps_platform,
    collector_uuid uuid,
    lease_token uuid,
    claimed_at timestamp with time zone,
    started_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    last_error_class bf4ps_error_class,
    last_error_message bf4ps_message,
    last_error_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT collection_jobs_pkey PRIMARY KEY (job_id),
    CONSTRAINT collection_jobs_request_id_fkey FOREIGN KEY (request_id) REFERENCES interactive_requests(request_id) ON DELETE SET NULL,
    CONSTRAINT collection_jobs_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT jobs_error_pair CHECK (((last_error_class IS NULL) = (last_error_at IS NULL))),
    CONSTRAINT jobs_lane_class CHECK ((((lane)::text = 'interactive'::text) = ((priority_class)::text = 'interactive'::text))),
    CONSTRAINT jobs_lease_shape CHECK (((num_nonnulls(collector_uuid, lease_token, claimed_at, lease_expires_at) =
CASE
    WHEN ((status)::text = 'pending'::text) THEN 0
    ELSE 4
END) AND ((started_at IS NOT NULL) = ((status)::text = 'running'::text)) AND (((status)::text <> 'running'::text) OR (started_at >= claimed_at)))),
    CONSTRAINT jobs_lookup_shape CHECK (((((resource)::text = 'lookup'::text) = (soldier_id IS NULL)) AND (((resource)::text <> 'lookup'::text) OR ((lookup_name IS NOT NULL) AND (lookup_platform IS NOT NULL) AND (request_id IS NOT NULL) AND ((lane)::text = 'interactive'::text))))),
    CONSTRAINT uq_jobs_soldier_resource UNIQUE (soldier_id, resource)
) WITH (fillfactor=70, autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_threshold=200, autovacuum_vacuum_cost_delay=0);
CREATE INDEX ix_jobs_claim ON public.collection_jobs USING btree (lane, rank, job_id) WHERE (lease_token IS NULL);
CREATE INDEX ix_jobs_demand ON public.collection_jobs USING btree ((
CASE
    WHEN (last_error_at IS NOT NULL) THEN 'retry'::text
    ELSE (priority_class)::text
END), eligible_at) WHERE (lease_token IS NULL);
CREATE INDEX ix_jobs_leased ON public.collection_jobs USING btree (lane, collector_uuid) WHERE (lease_token IS NOT NULL);
CREATE INDEX ix_jobs_request ON public.collection_jobs USING btree (request_id) WHERE (request_id IS NOT NULL);
CREATE UNIQUE INDEX uq_jobs_lookup_request ON public.collection_jobs USING btree (request_id) WHERE ((resource)::text = 'lookup'::text);
CREATE TRIGGER request_job_changed AFTER UPDATE OF started_at, last_error_at ON public.collection_jobs FOR EACH ROW WHEN (((new.request_id IS NOT NULL) AND (((new.started_at IS NOT NULL) AND (new.started_at IS DISTINCT FROM old.started_at)) OR (((new.resource)::text = 'lookup'::text) AND ((new.status)::text = 'pending'::text) AND ((new.last_error_class)::text = 'unrecognized'::text) AND (new.last_error_at IS DISTINCT FROM old.last_error_at))))) EXECUTE FUNCTION bf4ps_request_job_changed();
CREATE TRIGGER request_job_gone AFTER DELETE ON public.collection_jobs FOR EACH ROW WHEN ((old.request_id IS NOT NULL)) EXECUTE FUNCTION bf4ps_request_job_gone();
GRANT SELECT (job_id, soldier_id, resource, lane, priority_class, rank, reason, status, eligible_at, attempt_count, request_id, lookup_name, lookup_platform, collector_uuid, claimed_at, started_at, lease_expires_at, last_error_class, last_error_message, last_error_at, created_at, updated_at) ON TABLE collection_jobs TO bf4ps_collector;
GRANT SELECT ON TABLE collection_jobs TO bf4ps_operator;
GRANT SELECT (job_id, soldier_id, resource, lane, priority_class, rank, reason, status, eligible_at, attempt_count, request_id, lookup_name, lookup_platform, collector_uuid, claimed_at, started_at, lease_expires_at, last_error_class, last_error_message, last_error_at, created_at, updated_at) ON TABLE collection_jobs TO bf4ps_scheduler;
GRANT SELECT (job_id, soldier_id, resource, lane, priority_class, rank, reason, status, eligible_at, attempt_count, request_id, lookup_name, lookup_platform, collector_uuid, claimed_at, started_at, lease_expires_at, last_error_class, last_error_message, last_error_at, created_at, updated_at) ON TABLE collection_jobs TO bf4ps_web;

CREATE TABLE collection_state (
    soldier_id bigint NOT NULL,
    resource bf4ps_resource NOT NULL,
    status bf4ps_state_status NOT NULL DEFAULT 'never_attempted'::text,
    eligible_since timestamp with time zone NOT NULL DEFAULT now(),
    activity_class bf4ps_activity_class NOT NULL DEFAULT 'bootstrap'::text,
    activity_at timestamp with time zone,
    next_due_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    consecutive_failures bf4ps_count NOT NULL DEFAULT 0,
    attempts_total bf4ps_count NOT NULL DEFAULT 0,
    last_attempt_at timestamp with time zone,
    last_success_at timestamp with time zone,
    last_error_class bf4ps_error_class,
    last_error_message bf4ps_message,
    last_error_at timestamp with time zone,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    due_reason text,
    CONSTRAINT collection_state_due_reason_check CHECK ((due_reason = ANY (ARRAY['active_refresh'::text, 'final_refresh'::text, 'scheduled_profile'::text]))),
    CONSTRAINT collection_state_pkey PRIMARY KEY (soldier_id, resource),
    CONSTRAINT collection_state_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT state_current_shape CHECK ((((status)::text <> ALL (ARRAY['current'::text, 'due'::text])) OR (last_success_at IS NOT NULL))),
    CONSTRAINT state_error_pair CHECK (((last_error_class IS NULL) = (last_error_at IS NULL))),
    CONSTRAINT state_error_shape CHECK ((((status)::text <> ALL (ARRAY['retry_wait'::text, 'unavailable'::text])) OR (last_error_class IS NOT NULL))),
    CONSTRAINT state_never_shape CHECK ((((status)::text <> 'never_attempted'::text) OR ((last_attempt_at IS NULL) AND (last_success_at IS NULL)))),
    CONSTRAINT state_retry_shape CHECK (((((status)::text = 'retry_wait'::text) = (next_attempt_at IS NOT NULL)) AND (((status)::text <> 'retry_wait'::text) OR ((consecutive_failures)::integer > 0))))
);
CREATE INDEX ix_state_active_due ON public.collection_state USING btree (next_due_at) WHERE (((status)::text = 'current'::text) AND ((activity_class)::text = 'active'::text));
CREATE INDEX ix_state_activity ON public.collection_state USING btree (activity_class, activity_at) WHERE ((activity_class)::text <> 'bootstrap'::text);
CREATE INDEX ix_state_feed ON public.collection_state USING btree (activity_class, resource, eligible_since, soldier_id) WHERE ((status)::text = ANY (ARRAY['never_attempted'::text, 'due'::text]));
CREATE INDEX ix_state_final_refresh ON public.collection_state USING btree (activity_class, resource, eligible_since) WHERE (((status)::text = 'due'::text) AND (due_reason = 'final_refresh'::text));
CREATE INDEX ix_state_parked ON public.collection_state USING btree (last_attempt_at) WHERE (((status)::text = 'unavailable'::text) AND ((activity_class)::text = 'active'::text));
CREATE INDEX ix_state_profile_age ON public.collection_state USING btree (last_success_at) WHERE (((resource)::text = 'profile'::text) AND ((status)::text = 'current'::text));
CREATE INDEX ix_state_retry ON public.collection_state USING btree (next_attempt_at, resource) WHERE ((status)::text = 'retry_wait'::text);
CREATE INDEX ix_state_retry_resource ON public.collection_state USING btree (resource, next_attempt_at) WHERE ((status)::text = 'retry_wait'::text);
CREATE TRIGGER coverage_change AFTER UPDATE OF status ON public.collection_state FOR EACH ROW WHEN (((old.status)::text IS DISTINCT FROM (new.status)::text)) EXECUTE FUNCTION bf4ps_coverage_change();
CREATE TRIGGER coverage_delete AFTER DELETE ON public.collection_state REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_coverage_apply();
CREATE TRIGGER coverage_insert AFTER INSERT ON public.collection_state REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_coverage_apply();
GRANT SELECT ON TABLE collection_state TO bf4ps_collector;
GRANT SELECT ON TABLE collection_state TO bf4ps_operator;
GRANT SELECT, UPDATE ON TABLE collection_state TO bf4ps_scheduler;
GRANT SELECT ON TABLE collection_state TO bf4ps_web;

CREATE TABLE collectors (
    collector_uuid uuid NOT NULL,
    collector_name text NOT NULL,
    hostname text NOT NULL,
    lane text NOT NULL,
    egress_key text NOT NULL,
    source_address inet,
    enabled boolean NOT NULL DEFAULT true,
    drained boolean NOT NULL DEFAULT false,
    drained_at timestamp with time zone,
    drain_reason text,
    registered_at timestamp with time zone NOT NULL DEFAULT now(),
    started_at timestamp with time zone,
    stopped_at timestamp with time zone,
    last_heartbeat_at timestamp with time zone,
    health text NOT NULL DEFAULT 'unknown'::text,
    heartbeat_lost_at timestamp with time zone,
    software_version text,
    pid integer,
    retired_at timestamp with time zone,
    replaced_by uuid,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    clock_offset_seconds double precision,
    clock_rtt_seconds double precision,
    clock_checked_at timestamp with time zone,
    clock_skewed_since timestamp with time zone,
    db_login text,
    CONSTRAINT collectors_clock_rtt_seconds_check CHECK ((clock_rtt_seconds >= (0)::double precision)),
    CONSTRAINT collectors_collector_name_check CHECK ((collector_name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'::text)),
    CONSTRAINT collectors_drain_reason_check CHECK ((length(drain_reason) <= 200)),
    CONSTRAINT collectors_drain_shape CHECK ((drained = (drained_at IS NOT NULL))),
    CONSTRAINT collectors_egress_key_check CHECK (((btrim(egress_key) <> ''::text) AND (length(egress_key) <= 100))),
    CONSTRAINT collectors_health_check CHECK ((health = ANY (ARRAY['unknown'::text, 'healthy'::text, 'lost'::text, 'stopped'::text]))),
    CONSTRAINT collectors_hostname_check CHECK (((btrim(hostname) <> ''::text) AND (length(hostname) <= 255))),
    CONSTRAINT collectors_lane_check CHECK ((lane = ANY (ARRAY['background'::text, 'interactive'::text]))),
    CONSTRAINT collectors_lost_shape CHECK (((health = 'lost'::text) = (heartbeat_lost_at IS NOT NULL))),
    CONSTRAINT collectors_pkey PRIMARY KEY (collector_uuid),
    CONSTRAINT collectors_replaced_by_fkey FOREIGN KEY (replaced_by) REFERENCES collectors(collector_uuid),
    CONSTRAINT collectors_retired_disabled CHECK (((retired_at IS NULL) OR (NOT enabled)))
);
CREATE INDEX ix_collectors_egress ON public.collectors USING btree (egress_key) WHERE (retired_at IS NULL);
CREATE UNIQUE INDEX uq_collectors_current_name ON public.collectors USING btree (lower(collector_name)) WHERE (retired_at IS NULL);
CREATE TRIGGER collectors_kept BEFORE DELETE ON public.collectors FOR EACH ROW EXECUTE FUNCTION bf4ps_collectors_kept();
GRANT SELECT ON TABLE collectors TO bf4ps_collector;
GRANT SELECT ON TABLE collectors TO bf4ps_operator;
GRANT SELECT ON TABLE collectors TO bf4ps_scheduler;
GRANT SELECT ON TABLE collectors TO bf4ps_web;

CREATE TABLE coverage_counters (
    resource text NOT NULL,
    status text NOT NULL,
    shard smallint NOT NULL,
    n bigint NOT NULL DEFAULT 0,
    CONSTRAINT coverage_counters_pkey PRIMARY KEY (resource, status, shard),
    CONSTRAINT coverage_counters_shard_check CHECK (((shard >= 0) AND (shard <= 15)))
);
GRANT SELECT ON TABLE coverage_counters TO bf4ps_collector;
GRANT SELECT ON TABLE coverage_counters TO bf4ps_operator;
GRANT SELECT ON TABLE coverage_counters TO bf4ps_scheduler;
GRANT SELECT ON TABLE coverage_counters TO bf4ps_web;

CREATE TABLE coverage_deltas (
    resource text NOT NULL,
    shard smallint NOT NULL,
    from_status text,
    to_status text,
    n bigint NOT NULL
);
GRANT SELECT ON TABLE coverage_deltas TO bf4ps_collector;
GRANT SELECT ON TABLE coverage_deltas TO bf4ps_operator;
GRANT INSERT, SELECT ON TABLE coverage_deltas TO bf4ps_scheduler;
GRANT SELECT ON TABLE coverage_deltas TO bf4ps_web;

CREATE TABLE detailed_stats_current (
    soldier_id bigint NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    rank bigint,
    skill bigint,
    score bigint,
    total_score bigint,
    rank_score bigint,
    combat_score bigint,
    time_played_seconds bigint,
    kills bigint,
    deaths bigint,
    kill_assists bigint,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    accuracy_percent double precision,
    longest_headshot double precision,
    highest_kill_streak bigint,
    nemesis_kills bigint,
    highest_nemesis_streak bigint,
    num_rounds bigint,
    wins bigint,
    losses bigint,
    score_per_minute double precision,
    kills_per_minute double precision,
    quit_percentage double precision,
    revives bigint,
    heals bigint,
    repairs bigint,
    resupplies bigint,
    avenger_kills bigint,
    savior_kills bigint,
    suppression_assists bigint,
    flags_captured bigint,
    flags_defended bigint,
    dogtags_taken bigint,
    vehicles_destroyed bigint,
    vehicle_damage bigint,
    assault_score bigint,
    engineer_score bigint,
    support_score bigint,
    recon_score bigint,
    commander_score bigint,
    squad_score bigint,
    vehicle_score bigint,
    award_score bigint,
    unlock_score bigint,
    assault_time_seconds bigint,
    engineer_time_seconds bigint,
    recon_time_seconds bigint,
    support_time_seconds bigint,
    commander_time_seconds bigint,
    conquest_score bigint,
    rush_score bigint,
    team_deathmatch_score bigint,
    squad_deathmatch_score bigint,
    domination_score bigint,
    obliteration_score bigint,
    defuse_score bigint,
    capture_the_flag_score bigint,
    air_superiority_score bigint,
    carrier_assault_score bigint,
    chain_link_score bigint,
    platform text,
    CONSTRAINT detailed_stats_current_pkey PRIMARY KEY (soldier_id),
    CONSTRAINT detailed_stats_current_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text]))),
    CONSTRAINT detailed_stats_current_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
CREATE INDEX ix_board_kd ON public.detailed_stats_current USING btree (platform, (((kills)::double precision / (deaths)::double precision)) DESC NULLS LAST, soldier_id) INCLUDE (kills, deaths) WHERE ((time_played_seconds >= 36000) AND (deaths > 0));
CREATE INDEX ix_board_kills ON public.detailed_stats_current USING btree (platform, kills DESC NULLS LAST, soldier_id) WHERE (time_played_seconds >= 36000);
CREATE INDEX ix_board_skill ON public.detailed_stats_current USING btree (platform, skill DESC NULLS LAST, soldier_id) WHERE (time_played_seconds >= 36000);
CREATE INDEX ix_board_spm ON public.detailed_stats_current USING btree (platform, score_per_minute DESC NULLS LAST, soldier_id) WHERE (time_played_seconds >= 36000);
CREATE INDEX ix_detailed_recent ON public.detailed_stats_current USING btree (fetched_at DESC);
CREATE TRIGGER detailed_platform BEFORE INSERT ON public.detailed_stats_current FOR EACH ROW EXECUTE FUNCTION bf4ps_detailed_platform();
GRANT INSERT, SELECT, UPDATE ON TABLE detailed_stats_current TO bf4ps_collector;
GRANT SELECT ON TABLE detailed_stats_current TO bf4ps_operator;
GRANT SELECT ON TABLE detailed_stats_current TO bf4ps_scheduler;
GRANT SELECT ON TABLE detailed_stats_current TO bf4ps_web;

CREATE TABLE detailed_stats_history (
    soldier_id bigint NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    rank bigint,
    skill bigint,
    score bigint,
    total_score bigint,
    rank_score bigint,
    combat_score bigint,
    time_played_seconds bigint,
    kills bigint,
    deaths bigint,
    kill_assists bigint,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    accuracy_percent double precision,
    longest_headshot double precision,
    highest_kill_streak bigint,
    nemesis_kills bigint,
    highest_nemesis_streak bigint,
    num_rounds bigint,
    wins bigint,
    losses bigint,
    score_per_minute double precision,
    kills_per_minute double precision,
    quit_percentage double precision,
    revives bigint,
    heals bigint,
    repairs bigint,
    resupplies bigint,
    avenger_kills bigint,
    savior_kills bigint,
    suppression_assists bigint,
    flags_captured bigint,
    flags_defended bigint,
    dogtags_taken bigint,
    vehicles_destroyed bigint,
    vehicle_damage bigint,
    assault_score bigint,
    engineer_score bigint,
    support_score bigint,
    recon_score bigint,
    commander_score bigint,
    squad_score bigint,
    vehicle_score bigint,
    award_score bigint,
    unlock_score bigint,
    assault_time_seconds bigint,
    engineer_time_seconds bigint,
    recon_time_seconds bigint,
    support_time_seconds bigint,
    commander_time_seconds bigint,
    conquest_score bigint,
    rush_score bigint,
    team_deathmatch_score bigint,
    squad_deathmatch_score bigint,
    domination_score bigint,
    obliteration_score bigint,
    defuse_score bigint,
    capture_the_flag_score bigint,
    air_superiority_score bigint,
    carrier_assault_score bigint,
    chain_link_score bigint,
    CONSTRAINT detailed_stats_history_pkey PRIMARY KEY (soldier_id, fetched_at),
    CONSTRAINT detailed_stats_history_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
GRANT INSERT, SELECT ON TABLE detailed_stats_history TO bf4ps_collector;
GRANT SELECT ON TABLE detailed_stats_history TO bf4ps_operator;
GRANT SELECT ON TABLE detailed_stats_history TO bf4ps_scheduler;
GRANT SELECT ON TABLE detailed_stats_history TO bf4ps_web;

CREATE TABLE egress_gates (
    egress_key text NOT NULL,
    min_interval_seconds double precision NOT NULL,
    window_requests integer,
    window_seconds double precision,
    next_slot_at timestamp with time zone NOT NULL DEFAULT '2000-01-01 00:00:00+00'::timestamp with time zone,
    cooldown_until timestamp with time zone,
    throttle_streak integer NOT NULL DEFAULT 0,
    last_throttle_at timestamp with time zone,
    requests_total bigint NOT NULL DEFAULT 0,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_by text,
    last_outage_at timestamp with time zone,
    CONSTRAINT egress_gates_egress_key_check CHECK ((btrim(egress_key) <> ''::text)),
    CONSTRAINT egress_gates_min_interval_seconds_check CHECK ((min_interval_seconds > (0)::double precision)),
    CONSTRAINT egress_gates_pkey PRIMARY KEY (egress_key),
    CONSTRAINT egress_gates_requests_total_check CHECK ((requests_total >= 0)),
    CONSTRAINT egress_gates_throttle_streak_check CHECK ((throttle_streak >= 0)),
    CONSTRAINT egress_gates_updated_by_check CHECK ((length(updated_by) <= 200)),
    CONSTRAINT egress_gates_window_requests_check CHECK ((window_requests > 0)),
    CONSTRAINT egress_gates_window_seconds_check CHECK ((window_seconds > (0)::double precision)),
    CONSTRAINT gates_window_pair CHECK (((window_requests IS NULL) = (window_seconds IS NULL)))
);
CREATE TRIGGER settings_audit AFTER INSERT OR DELETE ON public.egress_gates FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();
CREATE TRIGGER settings_audit_change AFTER UPDATE ON public.egress_gates FOR EACH ROW WHEN (((old.min_interval_seconds IS DISTINCT FROM new.min_interval_seconds) OR (old.window_requests IS DISTINCT FROM new.window_requests) OR (old.window_seconds IS DISTINCT FROM new.window_seconds) OR ((old.cooldown_until IS DISTINCT FROM new.cooldown_until) AND (NOT (old.last_throttle_at IS DISTINCT FROM new.last_throttle_at)) AND (NOT (old.last_outage_at IS DISTINCT FROM new.last_outage_at))))) EXECUTE FUNCTION bf4ps_settings_audit();
CREATE TRIGGER settings_stamp BEFORE INSERT ON public.egress_gates FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_stamp();
CREATE TRIGGER settings_stamp_change BEFORE UPDATE ON public.egress_gates FOR EACH ROW WHEN (((old.min_interval_seconds IS DISTINCT FROM new.min_interval_seconds) OR (old.window_requests IS DISTINCT FROM new.window_requests) OR (old.window_seconds IS DISTINCT FROM new.window_seconds) OR ((old.cooldown_until IS DISTINCT FROM new.cooldown_until) AND (NOT (old.last_throttle_at IS DISTINCT FROM new.last_throttle_at)) AND (NOT (old.last_outage_at IS DISTINCT FROM new.last_outage_at))))) EXECUTE FUNCTION bf4ps_settings_stamp();
GRANT SELECT ON TABLE egress_gates TO bf4ps_collector;
GRANT SELECT ON TABLE egress_gates TO bf4ps_operator;
GRANT SELECT ON TABLE egress_gates TO bf4ps_scheduler;
GRANT SELECT ON TABLE egress_gates TO bf4ps_web;

CREATE TABLE fleet_budget (
    budget_id smallint NOT NULL DEFAULT 1,
    requests integer,
    window_seconds double precision NOT NULL DEFAULT 3600,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    configured_at timestamp with time zone,
    updated_by text,
    CONSTRAINT fleet_budget_budget_id_check CHECK ((budget_id = 1)),
    CONSTRAINT fleet_budget_pkey PRIMARY KEY (budget_id),
    CONSTRAINT fleet_budget_requests_check CHECK ((requests > 0)),
    CONSTRAINT fleet_budget_updated_by_check CHECK ((length(updated_by) <= 200)),
    CONSTRAINT fleet_budget_window_seconds_check CHECK ((window_seconds > (0)::double precision))
);
CREATE TRIGGER settings_audit AFTER UPDATE ON public.fleet_budget FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();
CREATE TRIGGER settings_stamp BEFORE UPDATE ON public.fleet_budget FOR EACH ROW WHEN (((old.requests IS DISTINCT FROM new.requests) OR (old.window_seconds IS DISTINCT FROM new.window_seconds))) EXECUTE FUNCTION bf4ps_settings_stamp();
GRANT SELECT ON TABLE fleet_budget TO bf4ps_collector;
GRANT SELECT ON TABLE fleet_budget TO bf4ps_operator;
GRANT SELECT ON TABLE fleet_budget TO bf4ps_scheduler;
GRANT SELECT ON TABLE fleet_budget TO bf4ps_web;

CREATE TABLE fleet_history (
    recorded_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    interval_seconds double precision NOT NULL,
    soldiers bigint NOT NULL,
    coverage jsonb NOT NULL,
    finished jsonb NOT NULL,
    requests jsonb NOT NULL,
    backlog_age jsonb NOT NULL,
    refresh_lag jsonb NOT NULL,
    CONSTRAINT fleet_history_check CHECK ((((((pg_column_size(coverage) + pg_column_size(finished)) + pg_column_size(requests)) + pg_column_size(backlog_age)) + pg_column_size(refresh_lag)) <= 16384)),
    CONSTRAINT fleet_history_interval_seconds_check CHECK ((interval_seconds > (0)::double precision)),
    CONSTRAINT fleet_history_pkey PRIMARY KEY (recorded_at),
    CONSTRAINT fleet_history_soldiers_check CHECK ((soldiers >= 0))
);
GRANT SELECT ON TABLE fleet_history TO bf4ps_collector;
GRANT SELECT ON TABLE fleet_history TO bf4ps_operator;
GRANT SELECT ON TABLE fleet_history TO bf4ps_scheduler;
GRANT SELECT ON TABLE fleet_history TO bf4ps_web;

CREATE TABLE fleet_settings_changes (
    change_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    changed_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    setting text NOT NULL,
    subject text NOT NULL,
    old_value jsonb,
    new_value jsonb,
    changed_by text NOT NULL,
    reason text,
    CONSTRAINT fleet_settings_changes_changed_by_check CHECK (((btrim(changed_by) <> ''::text) AND (length(changed_by) <= 200))),
    CONSTRAINT fleet_settings_changes_pkey PRIMARY KEY (change_id),
    CONSTRAINT fleet_settings_changes_reason_check CHECK ((length(reason) <= 200)),
    CONSTRAINT fleet_settings_changes_setting_check CHECK ((setting = ANY (ARRAY['gate'::text, 'budget'::text, 'shares'::text, 'policy'::text, 'restore'::text]))),
    CONSTRAINT fleet_settings_changes_subject_check CHECK (((btrim(subject) <> ''::text) AND (length(subject) <= 100)))
);
CREATE INDEX ix_settings_changes_subject ON public.fleet_settings_changes USING btree (setting, subject, changed_at DESC);
GRANT SELECT ON TABLE fleet_settings_changes TO bf4ps_collector;
GRANT SELECT ON TABLE fleet_settings_changes TO bf4ps_operator;
GRANT SELECT ON TABLE fleet_settings_changes TO bf4ps_scheduler;
GRANT SELECT ON TABLE fleet_settings_changes TO bf4ps_web;

CREATE TABLE forecast_backtest (
    check_id smallint NOT NULL DEFAULT 1,
    checked_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    since timestamp with time zone NOT NULL,
    records integer NOT NULL,
    errors jsonb NOT NULL,
    CONSTRAINT forecast_backtest_check_id_check CHECK ((check_id = 1)),
    CONSTRAINT forecast_backtest_errors_check CHECK ((pg_column_size(errors) <= 16384)),
    CONSTRAINT forecast_backtest_pkey PRIMARY KEY (check_id),
    CONSTRAINT forecast_backtest_records_check CHECK ((records >= 0))
);
GRANT SELECT ON TABLE forecast_backtest TO bf4ps_collector;
GRANT INSERT, SELECT, UPDATE ON TABLE forecast_backtest TO bf4ps_operator;
GRANT SELECT ON TABLE forecast_backtest TO bf4ps_scheduler;
GRANT SELECT ON TABLE forecast_backtest TO bf4ps_web;

CREATE TABLE forecast_records (
    recorded_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    figures jsonb NOT NULL,
    CONSTRAINT forecast_records_figures_check CHECK ((pg_column_size(figures) <= 16384)),
    CONSTRAINT forecast_records_pkey PRIMARY KEY (recorded_at)
);
GRANT SELECT ON TABLE forecast_records TO bf4ps_collector;
GRANT DELETE, INSERT, SELECT ON TABLE forecast_records TO bf4ps_operator;
GRANT SELECT ON TABLE forecast_records TO bf4ps_scheduler;
GRANT SELECT ON TABLE forecast_records TO bf4ps_web;

CREATE TABLE gains_board_items (
    board text NOT NULL,
    platform text NOT NULL,
    item_id integer NOT NULL,
    soldiers integer NOT NULL,
    CONSTRAINT gains_board_items_board_check CHECK ((board = ANY (ARRAY['weapon_kpm'::text, 'vehicle_kpm'::text]))),
    CONSTRAINT gains_board_items_pkey PRIMARY KEY (board, platform, item_id),
    CONSTRAINT gains_board_items_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text])))
);
GRANT SELECT ON TABLE gains_board_items TO bf4ps_collector;
GRANT DELETE, INSERT, SELECT ON TABLE gains_board_items TO bf4ps_operator;
GRANT SELECT ON TABLE gains_board_items TO bf4ps_scheduler;
GRANT SELECT ON TABLE gains_board_items TO bf4ps_web;

CREATE TABLE gains_boards (
    board text NOT NULL,
    platform text NOT NULL,
    item_id integer NOT NULL DEFAULT 0,
    soldier_id bigint NOT NULL,
    value double precision NOT NULL,
    raw double precision,
    kills bigint NOT NULL,
    score bigint,
    seconds bigint NOT NULL,
    refreshed_at timestamp with time zone NOT NULL,
    CONSTRAINT gains_boards_board_check CHECK ((board = ANY (ARRAY['spm'::text, 'kpm'::text, 'weapon_kpm'::text, 'vehicle_kpm'::text]))),
    CONSTRAINT gains_boards_pkey PRIMARY KEY (board, platform, item_id, soldier_id),
    CONSTRAINT gains_boards_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text]))),
    CONSTRAINT gains_boards_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
CREATE INDEX ix_gains_boards_rank ON public.gains_boards USING btree (board, platform, item_id, value DESC, soldier_id);
CREATE INDEX ix_gains_boards_soldier ON public.gains_boards USING btree (soldier_id);
GRANT SELECT ON TABLE gains_boards TO bf4ps_collector;
GRANT DELETE, INSERT, SELECT ON TABLE gains_boards TO bf4ps_operator;
GRANT SELECT ON TABLE gains_boards TO bf4ps_scheduler;
GRANT SELECT ON TABLE gains_boards TO bf4ps_web;

CREATE TABLE intake_state (
    source_name text NOT NULL,
    last_alias_id bigint NOT NULL DEFAULT 0,
    reconcile_watermark timestamp with time zone,
    last_run_at timestamp with time zone,
    last_success_at timestamp with time zone,
    last_error text,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT intake_state_last_alias_id_check CHECK ((last_alias_id >= 0)),
    CONSTRAINT intake_state_pkey PRIMARY KEY (source_name),
    CONSTRAINT intake_state_source_name_check CHECK ((btrim(source_name) <> ''::text))
);
GRANT SELECT ON TABLE intake_state TO bf4ps_collector;
GRANT SELECT ON TABLE intake_state TO bf4ps_operator;
GRANT SELECT ON TABLE intake_state TO bf4ps_scheduler;
GRANT SELECT ON TABLE intake_state TO bf4ps_web;

CREATE TABLE interactive_requests (
    request_id uuid NOT NULL,
    soldier_id bigint,
    lookup_name text,
    platform text NOT NULL,
    status text NOT NULL DEFAULT 'queued'::text,
    resources text[] NOT NULL DEFAULT '{}'::text[],
    client_key text NOT NULL,
    eta_at timestamp with time zone,
    first_request_at timestamp with time zone,
    finished_at timestamp with time zone,
    message text,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT interactive_requests_client_key_check CHECK ((length(client_key) <= 100)),
    CONSTRAINT interactive_requests_lookup_name_check CHECK (((btrim(lookup_name) <> ''::text) AND (length(lookup_name) <= 64))),
    CONSTRAINT interactive_requests_message_check CHECK ((length(message) <= 500)),
    CONSTRAINT interactive_requests_pkey PRIMARY KEY (request_id),
    CONSTRAINT interactive_requests_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text]))),
    CONSTRAINT interactive_requests_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT interactive_requests_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'collecting'::text, 'done'::text, 'not_found'::text, 'failed'::text]))),
    CONSTRAINT requests_target CHECK (((soldier_id IS NOT NULL) OR (lookup_name IS NOT NULL)))
);
CREATE INDEX ix_requests_client ON public.interactive_requests USING btree (client_key, created_at DESC);
CREATE INDEX ix_requests_open ON public.interactive_requests USING btree (created_at) WHERE (status = ANY (ARRAY['queued'::text, 'collecting'::text]));
GRANT SELECT (request_id, soldier_id, lookup_name, platform, status, resources, eta_at, first_request_at, finished_at, message, created_at, updated_at) ON TABLE interactive_requests TO bf4ps_collector;
GRANT SELECT ON TABLE interactive_requests TO bf4ps_operator;
GRANT SELECT (request_id, soldier_id, lookup_name, platform, status, resources, eta_at, first_request_at, finished_at, message, created_at, updated_at) ON TABLE interactive_requests TO bf4ps_scheduler;
GRANT SELECT ON TABLE interactive_requests TO bf4ps_web;

CREATE TABLE item_intervals (
    soldier_id bigint NOT NULL,
    kind text NOT NULL,
    item_id integer NOT NULL,
    platform text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone NOT NULL,
    kills bigint NOT NULL,
    seconds bigint NOT NULL,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    stars_from bigint,
    stars_to bigint,
    reset boolean NOT NULL DEFAULT false,
    checked_at timestamp with time zone,
    CONSTRAINT item_intervals_check CHECK ((ended_at > started_at)),
    CONSTRAINT item_intervals_headshots_check CHECK ((headshots >= 0)),
    CONSTRAINT item_intervals_kills_check CHECK ((kills >= 0)),
    CONSTRAINT item_intervals_kind_check CHECK ((kind = ANY (ARRAY['weapon'::text, 'vehicle'::text]))),
    CONSTRAINT item_intervals_pkey PRIMARY KEY (soldier_id, kind, item_id, ended_at),
    CONSTRAINT item_intervals_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text]))),
    CONSTRAINT item_intervals_seconds_check CHECK ((seconds >= 0)),
    CONSTRAINT item_intervals_shots_fired_check CHECK ((shots_fired >= 0)),
    CONSTRAINT item_intervals_shots_hit_check CHECK ((shots_hit >= 0)),
    CONSTRAINT item_intervals_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
CREATE INDEX ix_item_intervals_board ON public.item_intervals USING btree (kind, ended_at) WHERE ((checked_at IS NOT NULL) AND (NOT reset));
CREATE INDEX ix_item_intervals_unchecked ON public.item_intervals USING btree (ended_at) WHERE (checked_at IS NULL);
GRANT INSERT, SELECT ON TABLE item_intervals TO bf4ps_collector;
GRANT SELECT ON TABLE item_intervals TO bf4ps_operator;
GRANT SELECT ON TABLE item_intervals TO bf4ps_scheduler;
GRANT SELECT ON TABLE item_intervals TO bf4ps_web;

CREATE TABLE ledger_receipt_key (
    key_id smallint NOT NULL DEFAULT 1,
    secret bytea NOT NULL,
    CONSTRAINT ledger_receipt_key_key_id_check CHECK ((key_id = 1)),
    CONSTRAINT ledger_receipt_key_pkey PRIMARY KEY (key_id)
);

CREATE TABLE ops_login_failures (
    key text NOT NULL,
    failures integer NOT NULL DEFAULT 0,
    locked_until timestamp with time zone,
    last_failure_at timestamp with time zone,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT ops_login_failures_failures_check CHECK ((failures >= 0)),
    CONSTRAINT ops_login_failures_key_check CHECK ((length(key) <= 200)),
    CONSTRAINT ops_login_failures_pkey PRIMARY KEY (key)
);
GRANT SELECT ON TABLE ops_login_failures TO bf4ps_operator;

CREATE TABLE play_sessions (
    session_id bigint NOT NULL DEFAULT nextval('play_sessions_session_id_seq'::regclass),
    soldier_id bigint NOT NULL,
    server_guid text,
    server_name text,
    started_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    sightings integer NOT NULL DEFAULT 1,
    ended_at timestamp with time zone,
    final_refresh_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT play_sessions_order CHECK ((started_at <= last_seen_at)),
    CONSTRAINT play_sessions_pkey PRIMARY KEY (session_id),
    CONSTRAINT play_sessions_server_guid_check CHECK ((length(server_guid) <= 100)),
    CONSTRAINT play_sessions_server_name_check CHECK ((length(server_name) <= 200)),
    CONSTRAINT play_sessions_sightings_check CHECK ((sightings >= 1)),
    CONSTRAINT play_sessions_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
CREATE INDEX ix_play_sessions_open_seen ON public.play_sessions USING btree (last_seen_at) WHERE (ended_at IS NULL);
CREATE INDEX ix_play_sessions_soldier ON public.play_sessions USING btree (soldier_id, started_at DESC);
CREATE INDEX ix_play_sessions_unrefreshed ON public.play_sessions USING btree (soldier_id) WHERE (final_refresh_at IS NULL);
CREATE UNIQUE INDEX uq_play_sessions_open ON public.play_sessions USING btree (soldier_id) WHERE (ended_at IS NULL);
GRANT SELECT ON TABLE play_sessions TO bf4ps_collector;
GRANT SELECT ON TABLE play_sessions TO bf4ps_operator;
GRANT SELECT ON TABLE play_sessions TO bf4ps_scheduler;
GRANT SELECT ON TABLE play_sessions TO bf4ps_web;

CREATE TABLE profile_current (
    soldier_id bigint NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    battlelog_user_id bigint,
    clan_tag text,
    rank bigint,
    rank_name text,
    rank_score bigint,
    next_rank_score bigint,
    skill bigint,
    score bigint,
    kills bigint,
    deaths bigint,
    time_played_seconds bigint,
    score_per_minute double precision,
    kills_per_minute double precision,
    accuracy_percent double precision,
    wins bigint,
    losses bigint,
    top_weapons jsonb NOT NULL DEFAULT '[]'::jsonb,
    top_vehicles jsonb NOT NULL DEFAULT '[]'::jsonb,
    progress jsonb NOT NULL DEFAULT '[]'::jsonb,
    linked_soldiers jsonb NOT NULL DEFAULT '[]'::jsonb,
    current_rank_score bigint,
    CONSTRAINT profile_current_clan_tag_check CHECK ((length(clan_tag) <= 16)),
    CONSTRAINT profile_current_pkey PRIMARY KEY (soldier_id),
    CONSTRAINT profile_current_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
GRANT INSERT, SELECT, UPDATE ON TABLE profile_current TO bf4ps_collector;
GRANT SELECT ON TABLE profile_current TO bf4ps_operator;
GRANT SELECT ON TABLE profile_current TO bf4ps_scheduler;
GRANT SELECT ON TABLE profile_current TO bf4ps_web;

CREATE TABLE progress_flags (
    flag_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    soldier_id bigint NOT NULL,
    kind text NOT NULL,
    item_id integer,
    started_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone NOT NULL,
    reason text NOT NULL,
    flagged_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    cleared_at timestamp with time zone,
    cleared_by text,
    clear_note text,
    CONSTRAINT progress_flags_clear_note_check CHECK ((length(clear_note) <= 500)),
    CONSTRAINT progress_flags_cleared_by_check CHECK ((length(cleared_by) <= 200)),
    CONSTRAINT progress_flags_kind_check CHECK ((kind = ANY (ARRAY['soldier'::text, 'weapon'::text, 'vehicle'::text]))),
    CONSTRAINT progress_flags_pkey PRIMARY KEY (flag_id),
    CONSTRAINT progress_flags_reason_check CHECK (((length(reason) >= 1) AND (length(reason) <= 500))),
    CONSTRAINT progress_flags_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT progress_flags_soldier_id_kind_item_id_ended_at_key UNIQUE (soldier_id, kind, item_id, ended_at)
);
CREATE INDEX ix_progress_flags_open ON public.progress_flags USING btree (soldier_id) WHERE (cleared_at IS NULL);
CREATE INDEX ix_progress_flags_recent ON public.progress_flags USING btree (flagged_at DESC, flag_id DESC);
CREATE INDEX ix_progress_flags_soldier ON public.progress_flags USING btree (soldier_id, ended_at DESC);
GRANT SELECT ON TABLE progress_flags TO bf4ps_collector;
GRANT SELECT, UPDATE ON TABLE progress_flags TO bf4ps_operator;
GRANT SELECT ON TABLE progress_flags TO bf4ps_scheduler;
GRANT SELECT ON TABLE progress_flags TO bf4ps_web;

CREATE TABLE raw_answers (
    answer_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    soldier_id bigint NOT NULL,
    resource text NOT NULL,
    received_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    http_status integer,
    outcome text NOT NULL,
    body_bytes integer NOT NULL,
    body bytea NOT NULL,
    CONSTRAINT raw_answers_body_bytes_check CHECK ((body_bytes >= 0)),
    CONSTRAINT raw_answers_http_status_check CHECK (((http_status >= 100) AND (http_status <= 599))),
    CONSTRAINT raw_answers_outcome_check CHECK ((outcome ~ '^[a-z][a-z_:]{1,80}$'::text)),
    CONSTRAINT raw_answers_pkey PRIMARY KEY (answer_id),
    CONSTRAINT raw_answers_resource_check CHECK ((resource = ANY (ARRAY['detailed'::text, 'profile'::text, 'weapons'::text, 'vehicles'::text]))),
    CONSTRAINT raw_answers_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
CREATE INDEX ix_raw_answers_soldier ON public.raw_answers USING btree (soldier_id, resource, answer_id DESC);
CREATE INDEX ix_raw_answers_time ON public.raw_answers USING btree (received_at);
GRANT SELECT ON TABLE raw_answers TO bf4ps_collector;
GRANT SELECT ON TABLE raw_answers TO bf4ps_operator;
GRANT SELECT ON TABLE raw_answers TO bf4ps_scheduler;
GRANT SELECT ON TABLE raw_answers TO bf4ps_web;

CREATE TABLE recon_runs (
    run_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    egress_key text NOT NULL,
    started_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamp with time zone,
    settings jsonb NOT NULL,
    stopped_by text,
    threshold_interval_seconds double precision,
    recommended_interval_seconds double precision,
    safety_factor double precision,
    summary jsonb,
    CONSTRAINT recon_runs_egress_key_check CHECK (((btrim(egress_key) <> ''::text) AND (length(egress_key) <= 100))),
    CONSTRAINT recon_runs_pkey PRIMARY KEY (run_id),
    CONSTRAINT recon_runs_safety_factor_check CHECK ((safety_factor >= (1)::double precision)),
    CONSTRAINT recon_runs_stopped_by_check CHECK ((length(stopped_by) <= 200))
);
GRANT SELECT ON TABLE recon_runs TO bf4ps_collector;
GRANT INSERT, SELECT, UPDATE ON TABLE recon_runs TO bf4ps_operator;
GRANT SELECT ON TABLE recon_runs TO bf4ps_scheduler;
GRANT SELECT ON TABLE recon_runs TO bf4ps_web;

CREATE TABLE recon_samples (
    run_id bigint NOT NULL,
    seq integer NOT NULL,
    phase text NOT NULL,
    stage integer,
    interval_seconds double precision,
    ledger_request_id bigint NOT NULL,
    resource text NOT NULL,
    persona_id bigint NOT NULL,
    platform text NOT NULL,
    sent_at timestamp with time zone NOT NULL,
    http_status integer,
    error_class text,
    message text,
    wire_bytes integer,
    decoded_bytes integer,
    latency_ms integer,
    CONSTRAINT recon_samples_decoded_bytes_check CHECK ((decoded_bytes >= 0)),
    CONSTRAINT recon_samples_error_class_check CHECK ((error_class = ANY (ARRAY['throttle'::text, 'timeout'::text, 'server'::text, 'not_found'::text, 'malformed'::text, 'internal'::text, 'unrecognized'::text]))),
    CONSTRAINT recon_samples_http_status_check CHECK (((http_status >= 100) AND (http_status <= 599))),
    CONSTRAINT recon_samples_latency_ms_check CHECK ((latency_ms >= 0)),
    CONSTRAINT recon_samples_message_check CHECK ((length(message) <= 500)),
    CONSTRAINT recon_samples_phase_check CHECK ((phase = ANY (ARRAY['survey'::text, 'ladder'::text, 'backoff'::text]))),
    CONSTRAINT recon_samples_pkey PRIMARY KEY (run_id, seq),
    CONSTRAINT recon_samples_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text]))),
    CONSTRAINT recon_samples_resource_check CHECK ((resource = ANY (ARRAY['detailed'::text, 'profile'::text, 'weapons'::text, 'vehicles'::text]))),
    CONSTRAINT recon_samples_run_id_fkey FOREIGN KEY (run_id) REFERENCES recon_runs(run_id) ON DELETE CASCADE,
    CONSTRAINT recon_samples_seq_check CHECK ((seq >= 0)),
    CONSTRAINT recon_samples_stage_check CHECK ((stage >= 0)),
    CONSTRAINT recon_samples_wire_bytes_check CHECK ((wire_bytes >= 0))
);
GRANT SELECT ON TABLE recon_samples TO bf4ps_collector;
GRANT INSERT, SELECT, UPDATE ON TABLE recon_samples TO bf4ps_operator;
GRANT SELECT ON TABLE recon_samples TO bf4ps_scheduler;
GRANT SELECT ON TABLE recon_samples TO bf4ps_web;

CREATE TABLE request_ledger (
    request_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    slot_at timestamp with time zone NOT NULL,
    counted_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    egress_key text NOT NULL,
    budget_class text NOT NULL,
    collector_uuid uuid,
    job_id bigint,
    resource text,
    unsent_at timestamp with time zone,
    CONSTRAINT ledger_unsent_order CHECK ((unsent_at >= counted_at)),
    CONSTRAINT request_ledger_budget_class_check CHECK ((budget_class = ANY (ARRAY['interactive'::text, 'active'::text, 'recent'::text, 'bootstrap'::text, 'retry'::text]))),
    CONSTRAINT request_ledger_pkey PRIMARY KEY (request_id)
);
CREATE INDEX ix_ledger_egress ON public.request_ledger USING btree (egress_key, slot_at);
CREATE INDEX ix_ledger_slot ON public.request_ledger USING btree (slot_at);
CREATE TRIGGER budget_count_delete AFTER DELETE ON public.request_ledger REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();
CREATE TRIGGER budget_count_insert AFTER INSERT ON public.request_ledger REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();
CREATE TRIGGER budget_count_truncate AFTER TRUNCATE ON public.request_ledger FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();
CREATE TRIGGER budget_count_update AFTER UPDATE ON public.request_ledger REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();
GRANT SELECT ON TABLE request_ledger TO bf4ps_collector;
GRANT INSERT, SELECT ON TABLE request_ledger TO bf4ps_operator;
GRANT SELECT ON TABLE request_ledger TO bf4ps_scheduler;
GRANT SELECT ON TABLE request_ledger TO bf4ps_web;

CREATE TABLE restore_guard (
    guard_id smallint NOT NULL DEFAULT 1,
    instance_id uuid NOT NULL DEFAULT gen_random_uuid(),
    system_identifier bigint,
    timeline_id integer,
    database_oid oid,
    hold_until timestamp with time zone,
    detected_at timestamp with time zone,
    reason text,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    ledger_relid oid,
    run_started_at timestamp with time zone,
    run_lsn pg_lsn,
    run_vouched_at timestamp with time zone,
    CONSTRAINT restore_guard_guard_id_check CHECK ((guard_id = 1)),
    CONSTRAINT restore_guard_pkey PRIMARY KEY (guard_id),
    CONSTRAINT restore_guard_reason_check CHECK ((length(reason) <= 500))
);
CREATE TRIGGER budget_rebuild AFTER INSERT OR UPDATE OF run_started_at, detected_at, system_identifier, timeline_id, database_oid, ledger_relid ON public.restore_guard FOR EACH ROW EXECUTE FUNCTION bf4ps_budget_restored();
GRANT SELECT ON TABLE restore_guard TO bf4ps_collector;
GRANT SELECT ON TABLE restore_guard TO bf4ps_operator;
GRANT SELECT ON TABLE restore_guard TO bf4ps_scheduler;
GRANT SELECT ON TABLE restore_guard TO bf4ps_web;

CREATE TABLE scheduler_policy (
    key text NOT NULL,
    value jsonb NOT NULL,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_by text,
    CONSTRAINT scheduler_policy_key_check CHECK ((key ~ '^[a-z][a-z0-9_.]{1,80}$'::text)),
    CONSTRAINT scheduler_policy_pkey PRIMARY KEY (key)
);
CREATE TRIGGER settings_audit AFTER INSERT OR DELETE OR UPDATE ON public.scheduler_policy FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();
CREATE TRIGGER settings_stamp BEFORE INSERT OR UPDATE ON public.scheduler_policy FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_stamp();
GRANT SELECT ON TABLE scheduler_policy TO bf4ps_collector;
GRANT DELETE, INSERT, SELECT, UPDATE ON TABLE scheduler_policy TO bf4ps_operator;
GRANT SELECT ON TABLE scheduler_policy TO bf4ps_scheduler;
GRANT SELECT ON TABLE scheduler_policy TO bf4ps_web;

CREATE TABLE schema_code (
    file text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT schema_code_pkey PRIMARY KEY (file)
);
GRANT SELECT ON TABLE schema_code TO bf4ps_collector;
GRANT SELECT ON TABLE schema_code TO bf4ps_operator;
GRANT SELECT ON TABLE schema_code TO bf4ps_scheduler;
GRANT SELECT ON TABLE schema_code TO bf4ps_web;

CREATE TABLE schema_compat (
    version integer NOT NULL,
    compatible_from integer NOT NULL,
    CONSTRAINT schema_compat_check CHECK ((compatible_from <= version)),
    CONSTRAINT schema_compat_pkey PRIMARY KEY (version)
);
GRANT SELECT ON TABLE schema_compat TO bf4ps_collector;
GRANT SELECT ON TABLE schema_compat TO bf4ps_operator;
GRANT SELECT ON TABLE schema_compat TO bf4ps_scheduler;
GRANT SELECT ON TABLE schema_compat TO bf4ps_web;

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
);
GRANT SELECT ON TABLE schema_migrations TO bf4ps_collector;
GRANT SELECT ON TABLE schema_migrations TO bf4ps_operator;
GRANT SELECT ON TABLE schema_migrations TO bf4ps_scheduler;
GRANT SELECT ON TABLE schema_migrations TO bf4ps_web;

CREATE TABLE soldier_intervals (
    soldier_id bigint NOT NULL,
    platform text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone NOT NULL,
    kills bigint NOT NULL,
    deaths bigint NOT NULL,
    score bigint NOT NULL,
    seconds bigint NOT NULL,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    rank_from bigint,
    rank_to bigint,
    reset boolean NOT NULL DEFAULT false,
    checked_at timestamp with time zone,
    CONSTRAINT soldier_intervals_check CHECK ((ended_at > started_at)),
    CONSTRAINT soldier_intervals_deaths_check CHECK ((deaths >= 0)),
    CONSTRAINT soldier_intervals_headshots_check CHECK ((headshots >= 0)),
    CONSTRAINT soldier_intervals_kills_check CHECK ((kills >= 0)),
    CONSTRAINT soldier_intervals_pkey PRIMARY KEY (soldier_id, ended_at),
    CONSTRAINT soldier_intervals_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text]))),
    CONSTRAINT soldier_intervals_score_check CHECK ((score >= 0)),
    CONSTRAINT soldier_intervals_seconds_check CHECK ((seconds >= 0)),
    CONSTRAINT soldier_intervals_shots_fired_check CHECK ((shots_fired >= 0)),
    CONSTRAINT soldier_intervals_shots_hit_check CHECK ((shots_hit >= 0)),
    CONSTRAINT soldier_intervals_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
CREATE INDEX ix_soldier_intervals_board ON public.soldier_intervals USING btree (ended_at, soldier_id) WHERE ((checked_at IS NOT NULL) AND (NOT reset));
CREATE INDEX ix_soldier_intervals_unchecked ON public.soldier_intervals USING btree (ended_at) WHERE (checked_at IS NULL);
GRANT INSERT, SELECT ON TABLE soldier_intervals TO bf4ps_collector;
GRANT SELECT ON TABLE soldier_intervals TO bf4ps_operator;
GRANT SELECT ON TABLE soldier_intervals TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldier_intervals TO bf4ps_web;

CREATE TABLE soldier_names (
    soldier_id bigint NOT NULL,
    name text NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    CONSTRAINT soldier_names_name_check CHECK (((btrim(name) <> ''::text) AND (length(name) <= 64))),
    CONSTRAINT soldier_names_pkey PRIMARY KEY (soldier_id, name),
    CONSTRAINT soldier_names_seen_order CHECK ((first_seen_at <= last_seen_at)),
    CONSTRAINT soldier_names_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE
);
CREATE INDEX ix_soldier_names_name ON public.soldier_names USING btree (lower(name) text_pattern_ops);
GRANT SELECT ON TABLE soldier_names TO bf4ps_collector;
GRANT SELECT ON TABLE soldier_names TO bf4ps_operator;
GRANT SELECT ON TABLE soldier_names TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldier_names TO bf4ps_web;

CREATE TABLE soldier_sources (
    soldier_id bigint NOT NULL,
    source_type text NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    CONSTRAINT soldier_sources_pkey PRIMARY KEY (soldier_id, source_type),
    CONSTRAINT soldier_sources_seen_order CHECK ((first_seen_at <= last_seen_at)),
    CONSTRAINT soldier_sources_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT soldier_sources_source_type_check CHECK ((source_type = ANY (ARRAY['bf4sw'::text, 'manual'::text, 'battlelog'::text])))
);
CREATE INDEX ix_soldier_sources_battlelog ON public.soldier_sources USING btree (last_seen_at DESC) WHERE (source_type = 'battlelog'::text);
GRANT SELECT ON TABLE soldier_sources TO bf4ps_collector;
GRANT SELECT ON TABLE soldier_sources TO bf4ps_operator;
GRANT SELECT ON TABLE soldier_sources TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldier_sources TO bf4ps_web;

CREATE TABLE soldier_vehicle_history (
    soldier_id bigint NOT NULL,
    vehicle_id integer NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    kills bigint,
    time_in_seconds bigint,
    destroy_x_in_y bigint,
    CONSTRAINT soldier_vehicle_history_pkey PRIMARY KEY (soldier_id, vehicle_id, fetched_at),
    CONSTRAINT soldier_vehicle_history_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT soldier_vehicle_history_vehicle_id_fkey FOREIGN KEY (vehicle_id) REFERENCES vehicle_catalog(vehicle_id)
);
GRANT INSERT, SELECT ON TABLE soldier_vehicle_history TO bf4ps_collector;
GRANT SELECT ON TABLE soldier_vehicle_history TO bf4ps_operator;
GRANT SELECT ON TABLE soldier_vehicle_history TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldier_vehicle_history TO bf4ps_web;

CREATE TABLE soldier_vehicle_stats (
    soldier_id bigint NOT NULL,
    vehicle_id integer NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    kills bigint,
    time_in_seconds bigint,
    destroy_x_in_y bigint,
    service_stars bigint,
    service_stars_progress double precision,
    CONSTRAINT soldier_vehicle_stats_pkey PRIMARY KEY (soldier_id, vehicle_id),
    CONSTRAINT soldier_vehicle_stats_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT soldier_vehicle_stats_vehicle_id_fkey FOREIGN KEY (vehicle_id) REFERENCES vehicle_catalog(vehicle_id)
);
GRANT INSERT, SELECT, UPDATE ON TABLE soldier_vehicle_stats TO bf4ps_collector;
GRANT SELECT ON TABLE soldier_vehicle_stats TO bf4ps_operator;
GRANT SELECT ON TABLE soldier_vehicle_stats TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldier_vehicle_stats TO bf4ps_web;

CREATE TABLE soldier_weapon_history (
    soldier_id bigint NOT NULL,
    weapon_id integer NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    kills bigint,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    time_equipped_seconds bigint,
    CONSTRAINT soldier_weapon_history_pkey PRIMARY KEY (soldier_id, weapon_id, fetched_at),
    CONSTRAINT soldier_weapon_history_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT soldier_weapon_history_weapon_id_fkey FOREIGN KEY (weapon_id) REFERENCES weapon_catalog(weapon_id)
);
GRANT INSERT, SELECT ON TABLE soldier_weapon_history TO bf4ps_collector;
GRANT SELECT ON TABLE soldier_weapon_history TO bf4ps_operator;
GRANT SELECT ON TABLE soldier_weapon_history TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldier_weapon_history TO bf4ps_web;

CREATE TABLE soldier_weapon_stats (
    soldier_id bigint NOT NULL,
    weapon_id integer NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    kills bigint,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    accuracy_fraction double precision,
    time_equipped_seconds bigint,
    service_stars bigint,
    service_stars_progress double precision,
    CONSTRAINT soldier_weapon_stats_pkey PRIMARY KEY (soldier_id, weapon_id),
    CONSTRAINT soldier_weapon_stats_soldier_id_fkey FOREIGN KEY (soldier_id) REFERENCES soldiers(soldier_id) ON DELETE CASCADE,
    CONSTRAINT soldier_weapon_stats_weapon_id_fkey FOREIGN KEY (weapon_id) REFERENCES weapon_catalog(weapon_id)
);
GRANT INSERT, SELECT, UPDATE ON TABLE soldier_weapon_stats TO bf4ps_collector;
GRANT SELECT ON TABLE soldier_weapon_stats TO bf4ps_operator;
GRANT SELECT ON TABLE soldier_weapon_stats TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldier_weapon_stats TO bf4ps_web;

CREATE TABLE soldiers (
    soldier_id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    persona_id bigint NOT NULL,
    platform text NOT NULL,
    current_name text NOT NULL,
    battlelog_user_id bigint,
    first_seen_at timestamp with time zone,
    last_seen_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT soldiers_battlelog_user_id_check CHECK ((battlelog_user_id > 0)),
    CONSTRAINT soldiers_current_name_check CHECK (((btrim(current_name) <> ''::text) AND (length(current_name) <= 64))),
    CONSTRAINT soldiers_persona_id_check CHECK ((persona_id > 0)),
    CONSTRAINT soldiers_pkey PRIMARY KEY (soldier_id),
    CONSTRAINT soldiers_platform_check CHECK ((platform = ANY (ARRAY['pc'::text, 'xbox360'::text, 'ps3'::text, 'ps4'::text, 'xboxone'::text]))),
    CONSTRAINT soldiers_seen_order CHECK ((first_seen_at <= last_seen_at)),
    CONSTRAINT uq_soldiers_persona_platform UNIQUE (persona_id, platform)
);
CREATE INDEX ix_soldiers_last_seen ON public.soldiers USING btree (last_seen_at DESC) WHERE (last_seen_at IS NOT NULL);
CREATE INDEX ix_soldiers_name ON public.soldiers USING btree (lower(current_name) text_pattern_ops, platform);
CREATE INDEX ix_soldiers_user ON public.soldiers USING btree (battlelog_user_id) WHERE (battlelog_user_id IS NOT NULL);
GRANT SELECT, UPDATE ON TABLE soldiers TO bf4ps_collector;
GRANT SELECT ON TABLE soldiers TO bf4ps_operator;
GRANT SELECT ON TABLE soldiers TO bf4ps_scheduler;
GRANT SELECT ON TABLE soldiers TO bf4ps_web;

CREATE TABLE vehicle_catalog (
    vehicle_id integer GENERATED ALWAYS AS IDENTITY NOT NULL,
    guid text NOT NULL,
    name text NOT NULL,
    slug text,
    category text,
    code text,
    first_seen_at timestamp with time zone NOT NULL DEFAULT now(),
    last_seen_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT vehicle_catalog_guid_check CHECK (((btrim(guid) <> ''::text) AND (length(guid) <= 64))),
    CONSTRAINT vehicle_catalog_guid_key UNIQUE (guid),
    CONSTRAINT vehicle_catalog_pkey PRIMARY KEY (vehicle_id)
);
GRANT INSERT, SELECT, UPDATE ON TABLE vehicle_catalog TO bf4ps_collector;
GRANT SELECT ON TABLE vehicle_catalog TO bf4ps_operator;
GRANT SELECT ON TABLE vehicle_catalog TO bf4ps_scheduler;
GRANT SELECT ON TABLE vehicle_catalog TO bf4ps_web;

CREATE TABLE weapon_catalog (
    weapon_id integer GENERATED ALWAYS AS IDENTITY NOT NULL,
    guid text NOT NULL,
    name text NOT NULL,
    slug text,
    category text,
    code text,
    first_seen_at timestamp with time zone NOT NULL DEFAULT now(),
    last_seen_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT weapon_catalog_guid_check CHECK (((btrim(guid) <> ''::text) AND (length(guid) <= 64))),
    CONSTRAINT weapon_catalog_guid_key UNIQUE (guid),
    CONSTRAINT weapon_catalog_pkey PRIMARY KEY (weapon_id)
);
GRANT INSERT, SELECT, UPDATE ON TABLE weapon_catalog TO bf4ps_collector;
GRANT SELECT ON TABLE weapon_catalog TO bf4ps_operator;
GRANT SELECT ON TABLE weapon_catalog TO bf4ps_scheduler;
GRANT SELECT ON TABLE weapon_catalog TO bf4ps_web;

-- Views

CREATE VIEW collection_events_log AS
SELECT event_id,
    ord,
    occurred_at,
    event_type,
    collector_uuid,
    collector_name,
    hostname,
    egress_key,
    lane,
    job_id,
    lease_token,
    soldier_id,
    persona_id,
    platform,
    resource,
    priority_class,
    attempt_number,
        CASE
            WHEN (ord = 2) THEN (result)::text
            ELSE NULL::text
        END AS result,
        CASE
            WHEN (ord = 2) THEN (duration_ms)::integer
            ELSE NULL::integer
        END AS duration_ms,
    wait_ms,
        CASE
            WHEN (ord = 2) THEN (http_status)::integer
            ELSE NULL::integer
        END AS http_status,
        CASE
            WHEN (ord = 2) THEN (error_class)::text
            ELSE NULL::text
        END AS error_class,
        CASE
            WHEN (ord = 2) THEN (error_message)::text
            ELSE NULL::text
        END AS error_message,
        CASE
            WHEN (ord = 2) THEN (details)::jsonb
            ELSE NULL::jsonb
        END AS details
   FROM (collection_events e
     CROSS JOIN LATERAL bf4ps_event_log_rows(e.*) x(ord, occurred_at, event_type, wait_ms));
GRANT SELECT (event_id, ord, occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, soldier_id, persona_id, platform, resource, priority_class, attempt_number, result, duration_ms, wait_ms, http_status, error_class, error_message, details) ON TABLE collection_events_log TO bf4ps_collector;
GRANT SELECT ON TABLE collection_events_log TO bf4ps_operator;
GRANT SELECT (event_id, ord, occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, soldier_id, persona_id, platform, resource, priority_class, attempt_number, result, duration_ms, wait_ms, http_status, error_class, error_message, details) ON TABLE collection_events_log TO bf4ps_scheduler;
GRANT SELECT (event_id, ord, occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, soldier_id, persona_id, platform, resource, priority_class, attempt_number, result, duration_ms, wait_ms, http_status, error_class, error_message, details) ON TABLE collection_events_log TO bf4ps_web;

CREATE VIEW counted_requests AS
SELECT request_id,
    slot_at,
    counted_at,
    egress_key,
    budget_class,
    collector_uuid,
    job_id,
    resource
   FROM request_ledger
  WHERE (unsent_at IS NULL);
GRANT SELECT ON TABLE counted_requests TO bf4ps_collector;
GRANT SELECT ON TABLE counted_requests TO bf4ps_operator;
GRANT SELECT ON TABLE counted_requests TO bf4ps_scheduler;
GRANT SELECT ON TABLE counted_requests TO bf4ps_web;

CREATE VIEW coverage_totals AS
SELECT resource,
    status,
    shard,
    n
   FROM coverage_counters
UNION ALL
 SELECT resource,
    status,
    shard,
    n
   FROM (coverage_deltas d
     CROSS JOIN LATERAL ( VALUES (to_status,n), (from_status,(- n))) x(status, n))
  WHERE (status IS NOT NULL);
GRANT SELECT ON TABLE coverage_totals TO bf4ps_collector;
GRANT SELECT ON TABLE coverage_totals TO bf4ps_operator;
GRANT SELECT ON TABLE coverage_totals TO bf4ps_scheduler;
GRANT SELECT ON TABLE coverage_totals TO bf4ps_web;

-- Functions

CREATE OR REPLACE FUNCTION public.admission_budget(p_slot timestamp with time zone, p_now timestamp with time zone, p_interactive boolean, p_margin double precision, p_ahead double precision, p_lock boolean, OUT slot timestamp with time zone, OUT wait_until timestamp with time zone, OUT classes text[])
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    budget integer;
    budget_window_s double precision;
    nth timestamptz;
    win record;
    demand text[] := '{}';
    serving boolean;
BEGIN
    slot := p_slot;
    IF p_lock THEN
        PERFORM FROM fleet_budget b WHERE b.budget_id = 1 AND b.requests IS NOT NULL;
        IF FOUND THEN
            PERFORM pg_advisory_xact_lock(hashtextextended('bf4ps.fleet_budget', 0));
        END IF;
    END IF;
    SELECT b.requests, b.window_seconds INTO budget, budget_window_s
    FROM fleet_budget b WHERE b.budget_id = 1;
    IF budget IS NULL THEN
        RETURN;
    END IF;
    PERFORM bf4ps_budget_ready();  -- the buckets made again after a crash emptied them
    SELECT * INTO win FROM budget_window(slot, budget_window_s + p_margin);
    IF win.total >= budget THEN
        nth := budget_nth_newest(budget);  -- the oldest of the newest `budget` counted
        slot := GREATEST(slot, win.last_slot + interval '1 microsecond',
                         nth + make_interval(secs => budget_window_s + p_margin));
        -- the window the later slot will be in
        SELECT * INTO win FROM budget_window(slot, budget_window_s + p_margin);
    END IF;
    IF slot > p_now + make_interval(secs => p_ahead) THEN
        wait_until := slot - make_interval(secs => p_ahead);
        RETURN;
    END IF;
    IF NOT p_interactive THEN
        -- the classes with runnable work in any lane: a background collector leaves a
        -- waiting interactive request's floor free, but only while an interactive collector
        -- is serving (else nothing could use the floor); the classes with a floor, and
        -- recent work, for which the active cap holds its share (budget_allowed_classes
        -- asks of no other): one probe of ix_jobs_demand each
        serving := EXISTS (SELECT 1 FROM collectors c
                           WHERE c.lane = 'interactive' AND c.enabled AND NOT c.drained
                             AND c.retired_at IS NULL AND c.health = 'healthy');
        SELECT COALESCE(array_agg(f.cls), '{}') INTO demand
        FROM unnest(ARRAY['interactive', 'recent', 'bootstrap', 'retry']) AS f(cls)
        WHERE EXISTS (SELECT 1 FROM collection_jobs j
                      WHERE j.lease_token IS NULL AND j.status = 'pending'
                        AND (CASE WHEN j.last_error_at IS NOT NULL THEN 'retry'
                                  ELSE j.priority_class END) = f.cls
                        AND j.eligible_at <= clock_timestamp()
                        AND (j.lane <> 'interactive' OR serving));
    END IF;
    classes := budget_allowed_classes(budget, win.used, demand, budget_shares(), p_interactive);
    IF cardinality(classes) = 0 THEN
        wait_until := p_now + interval '1 second';
    END IF;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_caller(p_collector uuid, OUT egress text, OUT interactive boolean)
 RETURNS record
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    owner text;
BEGIN
    SELECT c.egress_key, c.lane = 'interactive', c.db_login INTO egress, interactive, owner
    FROM collectors c WHERE c.collector_uuid = p_collector;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no collector %', p_collector USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT bf4ps_caller_owns(owner) THEN
        RAISE EXCEPTION 'a collector is admitted for only its own registration (collector %, '
            'registered by login %, not %)', p_collector, owner, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_claim_next(p_collector uuid, p_egress text, p_interactive boolean, p_lease double precision, p_soldier bigint, p_start boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, OUT answer admission_answer, OUT next_job queue_claimed)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    t record;
    g egress_gates;
BEGIN
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    g := admission_gate(p_egress, true);
    answer := admission_open(g, p_interactive, t.margin, t.ahead, t.connect_lead, true);
    IF answer.outcome <> 'open' THEN
        RETURN;
    END IF;
    SELECT * INTO next_job FROM queue_claim(
        p_collector, CASE WHEN p_interactive THEN 'interactive' ELSE 'background' END,
        p_lease, p_soldier, answer.classes, p_start);
    IF next_job.job_id IS NOT NULL THEN
        answer.ledger_id := admission_record(
            g, answer.slot, CASE WHEN next_job.is_retry THEN 'retry'
                                 ELSE next_job.priority_class END,
            p_collector, next_job.job_id, next_job.resource, t.margin);
        answer.outcome := 'counted';
    END IF;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_count(p_collector uuid, p_job bigint, p_lease_token uuid, p_margin double precision, p_ahead double precision, p_connect_lead double precision)
 RETURNS SETOF admission_answer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    me record;
    t record;
    job_class text;
    job_resource text;
    ours boolean;  -- the lease was written by this transaction (a success's claim)
BEGIN
    SELECT * INTO me FROM admission_caller(p_collector);
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    SELECT CASE WHEN j.last_error_at IS NOT NULL THEN 'retry' ELSE j.priority_class END,
           j.resource, j.xmin = pg_current_xact_id()::xid
    INTO job_class, job_resource, ours
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.collector_uuid = p_collector
      AND j.lease_token = p_lease_token AND j.status IN ('claimed', 'running')
      AND j.lease_expires_at > clock_timestamp();
    IF FOUND AND NOT ours THEN
        -- a lease another transaction wrote: held (and seen still live) until the commit
        PERFORM FROM collection_jobs j
        WHERE j.job_id = p_job AND j.lease_token = p_lease_token
          AND j.lease_expires_at > clock_timestamp() FOR SHARE;
    END IF;
    IF NOT FOUND THEN
        RETURN NEXT ROW('lost', NULL, NULL, NULL, NULL)::admission_answer;
        RETURN;
    END IF;
    RETURN NEXT admission_counted(admission_gate(me.egress, true), me.interactive, t.margin,
                                  t.ahead, t.connect_lead, job_class, p_collector, p_job,
                                  job_resource);
END
$function$;
GRANT EXECUTE ON FUNCTION admission_count(uuid,bigint,uuid,double precision,double precision,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.admission_count_unattached(p_egress text, p_collector uuid, p_class text, p_resource text, p_margin double precision, p_ahead double precision, p_connect_lead double precision)
 RETURNS SETOF admission_answer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t record;
    egress text := p_egress;
    interactive boolean := true;
BEGIN
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    IF p_collector IS NOT NULL THEN
        SELECT c.egress, c.interactive INTO egress, interactive
        FROM admission_caller(p_collector) c;
    ELSIF NOT bf4ps_caller_holds('bf4ps_operator') AND NOT EXISTS (
            SELECT 1 FROM collectors c WHERE c.egress_key = p_egress
              AND bf4ps_caller_owns(c.db_login) AND c.retired_at IS NULL) THEN
        RAISE EXCEPTION 'a request of no collector is counted only on an egress of the '
            'caller''s own collectors (login %, egress %)', session_user, p_egress
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEXT admission_counted(admission_gate(egress, true), interactive, t.margin, t.ahead,
                                  t.connect_lead, p_class, p_collector, NULL, p_resource);
END
$function$;
GRANT EXECUTE ON FUNCTION admission_count_unattached(text,uuid,text,text,double precision,double precision,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.admission_counted(g egress_gates, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_class text, p_collector uuid, p_job bigint, p_resource text)
 RETURNS admission_answer
 LANGUAGE plpgsql
AS $function$
DECLARE
    a admission_answer := admission_open(g, p_interactive, p_margin, p_ahead, p_connect_lead,
                                         true);
BEGIN
    IF a.outcome = 'open' AND a.classes IS NOT NULL AND NOT p_class = ANY(a.classes) THEN
        RETURN ROW('wait', a.slot, clock_timestamp() + interval '1 second', NULL,
                   a.classes)::admission_answer;
    END IF;
    IF a.outcome = 'open' THEN
        a.ledger_id := admission_record(g, a.slot, p_class, p_collector, p_job, p_resource,
                                        p_margin);
        a.outcome := 'counted';
    END IF;
    RETURN a;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_gate(p_egress text, p_lock boolean)
 RETURNS egress_gates
 LANGUAGE plpgsql
AS $function$
DECLARE
    g egress_gates;
BEGIN
    IF p_lock THEN
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSE
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no rate gate for egress %', p_egress USING ERRCODE = 'no_data_found';
    END IF;
    RETURN g;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_gate_slot(g egress_gates, p_now timestamp with time zone, p_margin double precision, p_connect_lead double precision)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    s timestamptz := bf4ps_paced_slot(g.next_slot_at, g.cooldown_until, p_now, p_connect_lead);
    nth timestamptz;
BEGIN
    IF g.window_requests IS NOT NULL THEN
        SELECT c.slot_at INTO nth FROM counted_requests c WHERE c.egress_key = g.egress_key
        ORDER BY c.slot_at DESC LIMIT 1 OFFSET g.window_requests - 1;
        s := GREATEST(s, nth + make_interval(secs => g.window_seconds + p_margin));
    END IF;
    RETURN s;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_look(p_collector uuid, p_margin double precision, p_ahead double precision, p_connect_lead double precision)
 RETURNS SETOF admission_answer
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    me record;
    t record;
BEGIN
    SELECT * INTO me FROM admission_caller(p_collector);
    SELECT * INTO t FROM admission_timings(p_margin, p_ahead, p_connect_lead);
    RETURN NEXT admission_open(admission_gate(me.egress, false), me.interactive, t.margin,
                               t.ahead, t.connect_lead, false);
END
$function$;
GRANT EXECUTE ON FUNCTION admission_look(uuid,double precision,double precision,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.admission_open(g egress_gates, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_lock boolean)
 RETURNS admission_answer
 LANGUAGE plpgsql
AS $function$
DECLARE
    now_at timestamptz := clock_timestamp();
    s timestamptz := admission_gate_slot(g, now_at, p_margin, p_connect_lead);
    b record;
BEGIN
    IF s > now_at + make_interval(secs => p_ahead) THEN
        RETURN ROW('wait', s, s - make_interval(secs => p_ahead), NULL, NULL)::admission_answer;
    END IF;
    SELECT * INTO b FROM admission_budget(s, now_at, p_interactive, p_margin, p_ahead, p_lock);
    IF b.wait_until IS NOT NULL THEN
        RETURN ROW('wait', b.slot, b.wait_until, NULL, b.classes)::admission_answer;
    END IF;
    RETURN ROW('open', b.slot, NULL, NULL, b.classes)::admission_answer;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_record(g egress_gates, p_slot timestamp with time zone, p_class text, p_collector uuid, p_job bigint, p_resource text, p_margin double precision)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
    counted_id bigint;
BEGIN
    INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, job_id,
                                resource)
    VALUES (p_slot, g.egress_key, p_class, p_collector, p_job, p_resource)
    RETURNING request_id INTO counted_id;
    UPDATE egress_gates
    SET next_slot_at = p_slot + make_interval(secs => bf4ps_paced_interval(
        g.min_interval_seconds, g.throttle_streak, p_margin)),
        requests_total = requests_total + 1, updated_at = now()
    WHERE egress_key = g.egress_key;
    RETURN counted_id;
END
$function$;

CREATE OR REPLACE FUNCTION public.admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text DEFAULT NULL::text, p_resource text DEFAULT NULL::text, p_claim jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(outcome text, slot timestamp with time zone, wait_until timestamp with time zone, ledger_id bigint, classes text[], next_job queue_claimed)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    a admission_answer;
    me record;
    n record;
BEGIN
    IF p_job_id = 0 THEN
        SELECT * INTO a FROM admission_count_unattached(p_egress, p_collector, p_class,
                                                        p_resource, p_margin, p_ahead,
                                                        p_connect_lead);
    ELSIF p_job_id IS NOT NULL THEN
        SELECT * INTO a FROM admission_count(p_collector, p_job_id, p_lease_token, p_margin,
                                             p_ahead, p_connect_lead);
    ELSIF p_claim IS NOT NULL THEN
        SELECT * INTO me FROM admission_caller(p_collector);
        SELECT * INTO n FROM admission_claim_next(
            p_collector, me.egress, me.interactive, (p_claim ->> 'lease')::double precision,
            (p_claim ->> 'soldier')::bigint, COALESCE((p_claim ->> 'start')::boolean, false),
            p_margin, p_ahead, p_connect_lead);
        a := n.answer;
        RETURN QUERY SELECT a.outcome, a.slot, a.wait_until, a.ledger_id, a.classes,
                            n.next_job;
        RETURN;
    ELSE
        SELECT * INTO a FROM admission_look(p_collector, p_margin, p_ahead, p_connect_lead);
    END IF;
    RETURN QUERY SELECT a.outcome, a.slot, a.wait_until, a.ledger_id, a.classes,
                        NULL::queue_claimed;
END
$function$;
GRANT EXECUTE ON FUNCTION admission_slot(text,uuid,bigint,uuid,boolean,double precision,double precision,double precision,jsonb,text,text,jsonb) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.admission_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_strict boolean, p_lease double precision, p_soldier bigint, p_start boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision)
 RETURNS SETOF queue_counted
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    me record;
    r queue_claimed;
    fin bigint;
    nxt record;
BEGIN
    SELECT * INTO me FROM admission_caller(p_collector);
    SELECT * INTO r FROM queue_succeed(p_job, p_collector, p_token, p_freshness, p_http,
                                       p_duration, p_details, p_strict, false);
    IF r.finished IS NULL THEN
        RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
        RETURN;
    END IF;
    fin := r.finished;
    SELECT * INTO nxt FROM admission_claim_next(p_collector, me.egress, me.interactive,
                                                p_lease, p_soldier, p_start, p_margin,
                                                p_ahead, p_connect_lead);
    IF (nxt.answer).outcome = 'counted' THEN
        r := nxt.next_job;
        r.finished := fin;
        RETURN NEXT ROW(r, (nxt.answer).slot, (nxt.answer).ledger_id)::queue_counted;
    ELSE
        -- nothing claimed: the gate or the budget is closed (try at wait_until), or no work
        r := NULL;
        r.finished := fin;
        r.gate_wait_until := CASE WHEN (nxt.answer).outcome = 'wait'
                                  THEN (nxt.answer).wait_until END;
        RETURN NEXT ROW(r, NULL, NULL)::queue_counted;
    END IF;
END
$function$;
GRANT EXECUTE ON FUNCTION admission_succeed(bigint,uuid,uuid,double precision,integer,integer,jsonb,boolean,double precision,bigint,boolean,double precision,double precision,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.admission_timings(p_margin double precision, p_ahead double precision, p_connect_lead double precision, OUT margin double precision, OUT ahead double precision, OUT connect_lead double precision)
 RETURNS record
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT GREATEST(0, LEAST(60, COALESCE(p_margin, 0))),
           GREATEST(0, LEAST(60, COALESCE(p_ahead, 0))),
           GREATEST(0, LEAST(10, COALESCE(p_connect_lead, 0)))
$function$;
GRANT EXECUTE ON FUNCTION admission_timings(double precision,double precision,double precision) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_archive_keep(p_soldier bigint, p_resource text, p_http integer, p_outcome text, p_body_bytes integer, p_body bytea)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    -- how many answers a soldier and resource keep is the policy's (archive_answers_kept)
    keep constant integer := LEAST(GREATEST(
        bf4ps_policy_number('archive_answers_kept', 3), 0), 100)::integer;
    gone integer;
BEGIN
    IF keep < 1 THEN
        RETURN 0;
    END IF;
    INSERT INTO raw_answers (soldier_id, resource, http_status, outcome, body_bytes, body)
    VALUES (p_soldier, p_resource, p_http, p_outcome, p_body_bytes, p_body);
    -- the soldier and resource's older answers beyond the count: the only ones removed
    DELETE FROM raw_answers
    WHERE answer_id IN (SELECT a.answer_id FROM raw_answers a
                        WHERE a.soldier_id = p_soldier AND a.resource = p_resource
                        ORDER BY a.answer_id DESC OFFSET keep);
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_archive_keep(bigint,text,integer,text,integer,bytea) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_archive_prune(p_cutoff timestamp with time zone, p_batch integer)
 RETURNS SETOF bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    -- never an answer younger than the policy's archive_retention_days, whatever the cut-off
    DELETE FROM raw_answers
    WHERE answer_id IN (
        SELECT a.answer_id FROM raw_answers a
        WHERE a.received_at < least(p_cutoff, clock_timestamp() - make_interval(secs =>
                  86400 * GREATEST(bf4ps_policy_number('archive_retention_days', 14), 1)))
        LIMIT greatest(p_batch, 0))
    RETURNING answer_id
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_archive_prune(timestamp with time zone,integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_backtest_set(p_since timestamp with time zone, p_records integer, p_errors jsonb)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    INSERT INTO forecast_backtest (check_id, checked_at, since, records, errors)
    VALUES (1, clock_timestamp(), LEAST(p_since, clock_timestamp()), GREATEST(p_records, 0),
            p_errors)
    ON CONFLICT (check_id) DO UPDATE
    SET checked_at = excluded.checked_at, since = excluded.since, records = excluded.records,
        errors = excluded.errors
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_backtest_set(timestamp with time zone,integer,jsonb) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_backtest_set(timestamp with time zone,integer,jsonb) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_add(p_seconds bigint[], p_classes text[], p_deltas integer[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    spans smallint[];
    starts bigint[];
    classes text[];
    ns integer[];
    hit text[];  -- the buckets updated in place
BEGIN
    SELECT array_agg(k.span), array_agg(k.starts_at), array_agg(k.budget_class), array_agg(k.n)
    INTO spans, starts, classes, ns
    FROM bf4ps_budget_keys(p_seconds, p_classes, p_deltas) k;
    IF spans IS NULL THEN
        RETURN;
    END IF;
    WITH up AS (
        UPDATE budget_buckets b SET n = b.n + k.n
        FROM unnest(spans, starts, classes, ns) k(span, starts_at, budget_class, n)
        WHERE b.span = k.span AND b.starts_at = k.starts_at AND b.budget_class = k.budget_class
        RETURNING b.span, b.starts_at, b.budget_class
    )
    SELECT array_agg(up.span::text || ':' || up.starts_at || ':' || up.budget_class) INTO hit
    FROM up;
    IF cardinality(hit) IS DISTINCT FROM cardinality(spans) THEN
        IF EXISTS (SELECT 1 FROM unnest(spans, starts, classes, ns) k(span, starts_at, cls, n)
                   WHERE k.n < 0 AND NOT (k.span::text || ':' || k.starts_at || ':' || k.cls)
                                         = ANY(COALESCE(hit, '{}'))) THEN
            RAISE EXCEPTION 'a counted request is taken from a budget bucket that does not '
                'hold it (the buckets disagree with request_ledger: SELECT '
                'bf4ps_budget_rebuild())' USING ERRCODE = 'check_violation';
        END IF;
        -- the buckets not there when updated: inserted, or added to where a writer inserted
        -- one since (its commit came after the update's look)
        INSERT INTO budget_buckets AS b (span, starts_at, budget_class, n)
        SELECT k.span, k.starts_at, k.cls, k.n
        FROM unnest(spans, starts, classes, ns) k(span, starts_at, cls, n)
        WHERE NOT (k.span::text || ':' || k.starts_at || ':' || k.cls) = ANY(COALESCE(hit, '{}'))
        ON CONFLICT (span, starts_at, budget_class) DO UPDATE SET n = b.n + excluded.n;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(ns) x WHERE x < 0) THEN
        DELETE FROM budget_buckets b
        USING unnest(spans, starts, classes, ns) k(span, starts_at, budget_class, n)
        WHERE k.n < 0 AND b.span = k.span AND b.starts_at = k.starts_at
          AND b.budget_class = k.budget_class AND b.n = 0;
    END IF;
END
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_bump(p_second bigint, p_class text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    w smallint;
    k bigint;
BEGIN
    FOREACH w IN ARRAY ARRAY[60, 1]::smallint[] LOOP
        k := CASE w WHEN 60 THEN bf4ps_budget_minute(p_second) ELSE p_second END;
        UPDATE budget_buckets b SET n = b.n + 1
        WHERE b.span = w AND b.starts_at = k AND b.budget_class = p_class;
        IF NOT FOUND THEN
            INSERT INTO budget_buckets AS b (span, starts_at, budget_class, n)
            VALUES (w, k, p_class, 1)
            ON CONFLICT (span, starts_at, budget_class) DO UPDATE SET n = b.n + 1;
        END IF;
    END LOOP;
END
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    secs bigint[];
    classes text[];
    deltas integer[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM budget_buckets;
        RETURN NULL;
    ELSIF NOT bf4ps_budget_ready() THEN
        RETURN NULL;  -- made again from the ledger, this statement's rows included
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(bf4ps_budget_second(r.slot_at)), array_agg(r.budget_class),
               array_agg(1)
        INTO secs, classes, deltas
        FROM new_rows r WHERE r.unsent_at IS NULL;
        IF cardinality(secs) = 1 THEN
            PERFORM bf4ps_budget_bump(secs[1], classes[1]);
            RETURN NULL;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(bf4ps_budget_second(r.slot_at)), array_agg(r.budget_class),
               array_agg(-1)
        INTO secs, classes, deltas
        FROM old_rows r WHERE r.unsent_at IS NULL;
    ELSE
        SELECT array_agg(bf4ps_budget_second(c.slot_at)), array_agg(c.budget_class),
               array_agg(c.delta)
        INTO secs, classes, deltas
        FROM (SELECT r.slot_at, r.budget_class, 1 AS delta FROM new_rows r
              WHERE r.unsent_at IS NULL
              UNION ALL
              SELECT r.slot_at, r.budget_class, -1 FROM old_rows r
              WHERE r.unsent_at IS NULL) c;
    END IF;
    IF secs IS NOT NULL THEN
        PERFORM bf4ps_budget_add(secs, classes, deltas);
    END IF;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_keys(p_seconds bigint[], p_classes text[], p_deltas integer[])
 RETURNS TABLE(span smallint, starts_at bigint, budget_class text, n integer)
 LANGUAGE sql
 IMMUTABLE
AS $function$
    WITH d AS (
        SELECT u.sec, u.cls, u.delta FROM unnest(p_seconds, p_classes, p_deltas) u(sec, cls, delta)
    ), k AS (
        SELECT 60::smallint AS span, bf4ps_budget_minute(d.sec) AS starts_at, d.cls,
               sum(d.delta)::integer AS n
        FROM d GROUP BY 1, 2, 3
        UNION ALL
        SELECT 1::smallint, d.sec, d.cls, sum(d.delta)::integer FROM d GROUP BY 1, 2, 3
    )
    SELECT k.span, k.starts_at, k.cls, k.n FROM k WHERE k.n <> 0
    ORDER BY k.span DESC, k.starts_at, k.cls
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_budget_keys(bigint[],text[],integer[]) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_minute(p_second bigint)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT p_second - ((p_second % 60) + 60) % 60
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_budget_minute(bigint) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_ready()
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM FROM budget_buckets_ready;
    IF FOUND THEN
        RETURN true;
    END IF;
    PERFORM bf4ps_budget_rebuild();  -- its lock queues a second caller, which rebuilds again
    RETURN false;
END
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_rebuild()
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    counted bigint;
BEGIN
    LOCK TABLE budget_buckets IN EXCLUSIVE MODE;
    DELETE FROM budget_buckets;
    WITH d AS (
        SELECT bf4ps_budget_second(l.slot_at) AS sec, l.budget_class AS cls, count(*) AS n
        FROM request_ledger l WHERE l.unsent_at IS NULL GROUP BY 1, 2
    ), k AS (
        SELECT 60::smallint AS span, bf4ps_budget_minute(d.sec) AS starts_at, d.cls,
               sum(d.n) AS n
        FROM d GROUP BY 1, 2, 3
        UNION ALL
        SELECT 1::smallint, d.sec, d.cls, d.n FROM d
    )
    INSERT INTO budget_buckets (span, starts_at, budget_class, n)
    SELECT k.span, k.starts_at, k.cls, k.n FROM k ORDER BY 1, 2, 3;
    INSERT INTO budget_buckets_ready AS r DEFAULT VALUES
    ON CONFLICT (ready) DO UPDATE SET built_at = excluded.built_at;
    SELECT COALESCE(sum(b.n), 0) INTO counted FROM budget_buckets b WHERE b.span = 60;
    RETURN counted;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_budget_rebuild() TO bf4ps_operator;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_restored()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF TG_OP = 'INSERT'
            OR OLD.run_started_at IS DISTINCT FROM NEW.run_started_at
            OR OLD.detected_at IS DISTINCT FROM NEW.detected_at
            OR OLD.system_identifier IS DISTINCT FROM NEW.system_identifier
            OR OLD.timeline_id IS DISTINCT FROM NEW.timeline_id
            OR OLD.database_oid IS DISTINCT FROM NEW.database_oid
            OR OLD.ledger_relid IS DISTINCT FROM NEW.ledger_relid THEN
        PERFORM bf4ps_budget_rebuild();
    END IF;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_second(p_at timestamp with time zone)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT floor(extract(epoch FROM p_at))::bigint
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_budget_second(timestamp with time zone) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_seed(p_requests integer, p_window_seconds double precision, p_reason text)
 RETURNS SETOF fleet_budget
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    RETURN QUERY
    UPDATE fleet_budget b
    SET requests = p_requests, window_seconds = p_window_seconds, configured_at = now(),
        updated_at = now()
    WHERE b.budget_id = 1 AND b.configured_at IS NULL
    RETURNING b.*;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_budget_seed(integer,double precision,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_budget_set(p_requests integer, p_window_seconds double precision, p_configured boolean, p_reason text)
 RETURNS SETOF fleet_budget
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_budget_set(integer,double precision,boolean,text) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION public.bf4ps_caller_holds(role_name text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT pg_has_role(session_user, role_name, 'MEMBER')
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_caller_holds(text) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_caller_owns(p_owner text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT COALESCE(p_owner = session_user::text, false) OR bf4ps_caller_holds('bf4ps_operator')
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_capacity_check_set(p_feasible boolean, p_demand_per_hour double precision, p_capacity_per_hour double precision, p_summary text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    INSERT INTO capacity_check (check_id, checked_at, feasible, demand_per_hour,
                                capacity_per_hour, summary)
    VALUES (1, clock_timestamp(), p_feasible, GREATEST(p_demand_per_hour, 0),
            GREATEST(p_capacity_per_hour, 0), left(p_summary, 500))
    ON CONFLICT (check_id) DO UPDATE
    SET checked_at = excluded.checked_at, feasible = excluded.feasible,
        demand_per_hour = excluded.demand_per_hour,
        capacity_per_hour = excluded.capacity_per_hour, summary = excluded.summary
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_capacity_check_set(boolean,double precision,double precision,text) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_capacity_check_set(boolean,double precision,double precision,text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_close(p_lane text, p_resource text)
 RETURNS TABLE(opened_at timestamp with time zone, closed_at timestamp with time zone, probe_successes integer, signature text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- only once its probes' successes reached the number that closes it, or (a lane's
    -- outage, closed together) when a circuit of its lane with its signature closed so in
    -- this very transaction
    RETURN QUERY
    UPDATE circuit_breakers cb
    SET state = 'closed', closed_at = clock_timestamp(), next_probe_at = NULL,
        updated_at = clock_timestamp()
    WHERE cb.lane = p_lane AND cb.resource = p_resource AND cb.state = 'open'
      AND (cb.probe_successes >= cb.close_successes
           OR EXISTS (SELECT 1 FROM circuit_breakers o
                      WHERE o.lane = p_lane AND o.resource <> p_resource
                        AND o.signature = cb.signature AND o.state = 'closed'
                        AND o.closed_at >= now()
                        AND o.probe_successes >= o.close_successes))
    RETURNING cb.opened_at, cb.closed_at, cb.probe_successes::integer, cb.signature::text;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_close(text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_hold_job(p_job bigint, p_lane text, p_resource text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    -- a hold of a job as the queue has it (its own lane and resource), never of a name
    INSERT INTO circuit_holds (job_id, lane, resource)
    SELECT j.job_id, j.lane, j.resource FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lane = p_lane AND j.resource = p_resource
    ON CONFLICT (job_id) DO NOTHING;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_hold_job(bigint,text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_hold_pending(p_lane text, p_resource text, p_hold_seconds double precision)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    -- the caller's hold, at most the policy's (circuit_hold_seconds), never negative
    hold constant double precision := LEAST(GREATEST(p_hold_seconds, 0),
        bf4ps_policy_number('circuit_hold_seconds', 3600));
BEGIN
    -- work is held only behind an open circuit of its lane and resource
    IF NOT EXISTS (SELECT 1 FROM circuit_breakers cb WHERE cb.lane = p_lane
                   AND cb.resource = p_resource AND cb.state = 'open') THEN
        RETURN;
    END IF;
    WITH held AS (
        UPDATE collection_jobs j
        SET eligible_at = GREATEST(j.eligible_at,
                                   clock_timestamp() + make_interval(secs => hold)),
            updated_at = clock_timestamp()
        WHERE j.lane = p_lane AND j.resource = p_resource AND j.status = 'pending'
        RETURNING j.job_id
    )
    INSERT INTO circuit_holds (job_id, lane, resource)
    SELECT held.job_id, p_lane, p_resource FROM held
    ON CONFLICT (job_id) DO NOTHING;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_hold_pending(text,text,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_lane_probe_later(p_lane text, p_signature text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    UPDATE circuit_breakers cb
    SET next_probe_at = clock_timestamp() + make_interval(secs => cb.probe_seconds),
        updated_at = clock_timestamp()
    WHERE cb.lane = p_lane AND cb.state = 'open' AND cb.signature = p_signature
      AND EXISTS (SELECT 1 FROM circuit_breakers d
                  WHERE d.lane = p_lane AND d.state = 'open' AND d.signature = p_signature
                    AND d.updated_at >= now());
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_lane_probe_later(text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_lets(p_job bigint, p_lane text, p_resource text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT NOT EXISTS (SELECT 1 FROM circuit_breakers cb
                       WHERE cb.lane = p_lane AND cb.resource = p_resource AND cb.state = 'open')
        OR EXISTS (SELECT 1 FROM circuit_holds h WHERE h.job_id = p_job)
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_lets(bigint,text,text) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_open(p_lane text, p_resource text, p_signature text, p_soldiers integer, p_egresses integer)
 RETURNS TABLE(opened_at timestamp with time zone, next_probe_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    -- the probe interval and the successes that close it are the policy's, never the caller's
    probe constant double precision := GREATEST(
        bf4ps_policy_number('circuit_probe_seconds', 60), 0.001);
    closing constant integer := GREATEST(
        bf4ps_policy_number('circuit_close_successes', 2), 1)::integer;
BEGIN
    -- opens a closed (or never seen) circuit; nothing when it was open already, so one
    -- collector writes the circuit_opened event
    RETURN QUERY
    INSERT INTO circuit_breakers AS cb (lane, resource, state, signature, opened_at,
                                       next_probe_at, probe_seconds, close_successes,
                                       soldiers, egresses)
    VALUES (p_lane, p_resource, 'open', left(p_signature, 200), clock_timestamp(),
            clock_timestamp() + make_interval(secs => probe), probe, closing,
            GREATEST(p_soldiers, 0), GREATEST(p_egresses, 0))
    ON CONFLICT (lane, resource) DO UPDATE
    SET state = 'open', signature = excluded.signature, opened_at = excluded.opened_at,
        closed_at = NULL, next_probe_at = excluded.next_probe_at,
        probe_seconds = excluded.probe_seconds, probe_successes = 0,
        close_successes = excluded.close_successes, soldiers = excluded.soldiers,
        egresses = excluded.egresses, times_opened = cb.times_opened + 1,
        updated_at = clock_timestamp()
    WHERE cb.state = 'closed'
    RETURNING cb.opened_at, cb.next_probe_at;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_open(text,text,text,integer,integer) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_probe_succeeded(p_lane text, p_resource text)
 RETURNS TABLE(probe_successes integer, close_successes integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- a success counts only as one of the lane and resource's successes since the circuit
    -- opened (its `succeeded` events): a caller cannot close a circuit by saying so
    RETURN QUERY
    UPDATE circuit_breakers cb
    SET probe_successes = cb.probe_successes + 1, updated_at = clock_timestamp()
    WHERE cb.lane = p_lane AND cb.resource = p_resource AND cb.state = 'open'
      AND cb.probe_successes < (
          SELECT count(*) FROM collection_events e
          WHERE e.event_type = 'succeeded' AND e.lane = p_lane AND e.resource = p_resource
            AND e.occurred_at >= cb.opened_at AND e.occurred_at <= clock_timestamp())
    RETURNING cb.probe_successes::integer, cb.close_successes::integer;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_probe_succeeded(text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_probes_due()
 RETURNS TABLE(lane text, resource text, signature text, probe_seconds double precision)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- open circuits whose probe is due, moved to their next probe time (each due once)
    RETURN QUERY
    UPDATE circuit_breakers cb
    SET next_probe_at = clock_timestamp() + make_interval(secs => cb.probe_seconds),
        updated_at = clock_timestamp()
    WHERE cb.state = 'open' AND cb.next_probe_at <= clock_timestamp()
    RETURNING cb.lane::text, cb.resource::text, cb.signature::text,
              cb.probe_seconds::double precision;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_probes_due() TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_release_all(p_lane text, p_resource text)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- the holds go when the circuit has closed, not while it is open
    IF EXISTS (SELECT 1 FROM circuit_breakers cb WHERE cb.lane = p_lane
               AND cb.resource = p_resource AND cb.state = 'open') THEN
        RETURN QUERY SELECT 0::bigint;
        RETURN;
    END IF;
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_release_all(text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_circuit_release_one(p_lane text, p_resource text)
 RETURNS TABLE(job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    picked bigint;
BEGIN
    -- a probe is released only through an open circuit
    IF NOT EXISTS (SELECT 1 FROM circuit_breakers cb WHERE cb.lane = p_lane
                   AND cb.resource = p_resource AND cb.state = 'open') THEN
        RETURN;
    END IF;
    SELECT c.job_id INTO picked FROM collection_jobs c
    WHERE c.lane = p_lane AND c.resource = p_resource AND c.status = 'pending'
    ORDER BY c.rank, c.job_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF picked IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO circuit_holds (job_id, lane, resource) VALUES (picked, p_lane, p_resource)
    ON CONFLICT ON CONSTRAINT circuit_holds_pkey DO NOTHING;
    RETURN QUERY
    UPDATE collection_jobs j
    SET eligible_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE j.job_id = picked
    RETURNING j.job_id;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_circuit_release_one(text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_claim_wanted(soldier bigint, klass text, retrying boolean, p_soldier bigint, p_classes text[])
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT CASE WHEN p_soldier IS NULL THEN true ELSE soldier = p_soldier END
       AND CASE WHEN p_classes IS NULL THEN true
                ELSE (CASE WHEN retrying THEN 'retry' ELSE klass END) = ANY(p_classes) END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_claim_wanted(bigint,text,boolean,bigint,text[]) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_close_sessions(source_now timestamp with time zone, gap_seconds double precision)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
    -- the closing snapshots the policy affords (policy.py): detailed after a session (or a
    -- chain of them) of at least this much play, weapons and vehicles after one of at least
    -- the second; read here, whatever the caller would pass
    min_play constant double precision :=
        bf4ps_policy_number('final_refresh_min_play_seconds', 7200);
    items_min_play constant double precision :=
        bf4ps_policy_number('final_refresh_items_min_play_seconds', 28800);
BEGIN
    -- a session ends a gap after BF4SW's clock: never a clock ahead of ours, never a gap
    -- under a minute or under the policy's session_gap_seconds when that is shorter (a sped-up
    -- demo or test), whatever the caller passes
    UPDATE play_sessions SET ended_at = clock_timestamp()
    WHERE ended_at IS NULL
      AND last_seen_at < LEAST(source_now, clock_timestamp()) - make_interval(
          secs => GREATEST(gap_seconds,
                           LEAST(60, bf4ps_policy_number('session_gap_seconds', 1200))));
    -- a soldier off every server closes his ended sessions at once (a chain across servers
    -- is closed once, after the last): its play is the sum of theirs
    WITH closing AS (
        UPDATE play_sessions p SET final_refresh_at = clock_timestamp()
        WHERE p.ended_at IS NOT NULL AND p.final_refresh_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM play_sessions o
                          WHERE o.soldier_id = p.soldier_id AND o.ended_at IS NULL
                            AND o.final_refresh_at IS NULL)
        RETURNING p.soldier_id, p.started_at, p.last_seen_at
    ), played AS (
        SELECT soldier_id, max(last_seen_at) AS last_seen_at,
               sum(extract(epoch FROM last_seen_at - started_at)) AS seconds
        FROM closing GROUP BY soldier_id
    ), marked AS (
        UPDATE collection_state cs
        SET status = 'due', due_reason = 'final_refresh',
            eligible_since = LEAST(c.last_seen_at, clock_timestamp()),
            updated_at = clock_timestamp()
        FROM played c
        WHERE cs.soldier_id = c.soldier_id
          AND ((cs.resource = 'detailed' AND c.seconds >= min_play)
               OR (cs.resource IN ('weapons', 'vehicles') AND c.seconds >= items_min_play))
          AND cs.status IN ('current', 'due') AND cs.last_success_at < c.last_seen_at
        RETURNING cs.soldier_id
    )
    SELECT count(*) INTO n FROM closing;
    RETURN n;
END;
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_close_sessions(timestamp with time zone,double precision) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_close_sessions(timestamp with time zone,double precision) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_clock(p_collector uuid, p_offset double precision, p_rtt double precision, p_skewed boolean)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_clock(uuid,double precision,double precision,boolean) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_clock_any(p_collector uuid, p_offset double precision, p_rtt double precision, p_skewed boolean)
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

CREATE OR REPLACE FUNCTION public.bf4ps_collector_heartbeat(p_collector uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_heartbeat(uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_heartbeat_any(p_collector uuid)
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

CREATE OR REPLACE FUNCTION public.bf4ps_collector_insert(p_collector uuid, p_name text, p_hostname text, p_lane text, p_egress text, p_source_address text, p_version text)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_insert(uuid,text,text,text,text,text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_mark_lost(p_collector uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_mark_lost(uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_own(p_collector uuid, p_action text)
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

CREATE OR REPLACE FUNCTION public.bf4ps_collector_replaced_by(p_collector uuid, p_replaced_by uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_replaced_by(uuid,uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_retire(p_collector uuid, p_replaced_by uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_retire(uuid,uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_set_flags(p_name text, p_enabled boolean, p_drained boolean, p_reason text)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_set_flags(text,boolean,boolean,text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_started(p_collector uuid, p_version text, p_pid integer, p_source_address text)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_started(uuid,text,integer,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_stopped(p_collector uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_collector_stopped(uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_collector_stopped_any(p_collector uuid)
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

CREATE OR REPLACE FUNCTION public.bf4ps_collectors_kept()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'a collector is retired, never deleted (its jobs and events name it)'
        USING ERRCODE = 'restrict_violation';
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_collectors_kept() TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_collectors_mark_silent(p_silence_seconds double precision)
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
GRANT EXECUTE ON FUNCTION bf4ps_collectors_mark_silent(double precision) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_coverage_apply()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO coverage_deltas (resource, shard, to_status, n)
        SELECT resource, (soldier_id % 16)::smallint, status, count(*)
          FROM new_rows GROUP BY 1, 2, 3;
    ELSE
        INSERT INTO coverage_deltas (resource, shard, from_status, n)
        SELECT resource, (soldier_id % 16)::smallint, status, count(*)
          FROM old_rows GROUP BY 1, 2, 3;
    END IF;
    RETURN NULL;
END;
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_coverage_apply() TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_coverage_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO coverage_deltas (resource, shard, from_status, to_status, n)
    VALUES (NEW.resource, (NEW.soldier_id % 16)::smallint, OLD.status, NEW.status, 1);
    RETURN NULL;
END;
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_coverage_change() TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_coverage_fold()
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    folded bigint;
BEGIN
    WITH d AS (DELETE FROM coverage_deltas RETURNING *),
    moves AS (SELECT d.resource, x.status, d.shard, x.n
              FROM d CROSS JOIN LATERAL (VALUES (d.to_status, d.n), (d.from_status, -d.n))
                   AS x(status, n)
              WHERE x.status IS NOT NULL),
    agg AS (SELECT resource, status, shard, sum(n) AS n FROM moves GROUP BY 1, 2, 3),
    up AS (INSERT INTO coverage_counters AS c (resource, status, shard, n)
           SELECT resource, status, shard, n FROM agg ORDER BY 1, 2, 3
           ON CONFLICT (resource, status, shard) DO UPDATE SET n = c.n + excluded.n)
    SELECT count(*) INTO folded FROM d;
    RETURN folded;
END;
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_coverage_fold() TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_detailed_platform()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    NEW.platform := (SELECT s.platform FROM soldiers s WHERE s.soldier_id = NEW.soldier_id);
    RETURN NEW;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_detailed_platform() TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_drop_event_partition(part text)
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
GRANT EXECUTE ON FUNCTION bf4ps_drop_event_partition(text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_egress_own(p_egress text, p_action text)
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

CREATE OR REPLACE FUNCTION public.bf4ps_enqueue_insert(p_soldier bigint, p_resource text, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_eligible_at timestamp with time zone, p_request uuid, p_lookup_name text, p_lookup_platform text)
 RETURNS TABLE(job_id bigint, lane text, priority_class text, status text, attempt_count integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_insert(bigint,text,text,text,timestamp with time zone,text,timestamp with time zone,uuid,text,text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_insert(bigint,text,text,text,timestamp with time zone,text,timestamp with time zone,uuid,text,text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_enqueue_lane_allowed(p_lane text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF p_lane <> 'interactive' AND NOT bf4ps_caller_holds('bf4ps_scheduler') THEN
        RAISE EXCEPTION 'role % may enqueue interactive jobs only, not %', session_user,
            p_lane USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lane_allowed(text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lane_allowed(text) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lane_allowed(text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_enqueue_lock_existing(p_soldier bigint, p_resource text)
 RETURNS TABLE(job_id bigint, lane text, priority_class text, status text, rank timestamp with time zone, request_id uuid, attempt_count integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.job_id, j.lane::text, j.priority_class::text, j.status::text, j.rank,
           j.request_id, j.attempt_count::integer
    FROM collection_jobs j
    WHERE j.soldier_id = p_soldier AND j.resource = p_resource
    FOR UPDATE;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lock_existing(bigint,text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_lock_existing(bigint,text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_enqueue_promote(p_job bigint, p_lane text, p_class text, p_rank timestamp with time zone, p_reason text, p_request uuid, p_eligible_at timestamp with time zone)
 RETURNS TABLE(job_id bigint, lane text, priority_class text, status text, attempt_count integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_promote(bigint,text,text,timestamp with time zone,text,uuid,timestamp with time zone) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_enqueue_promote(bigint,text,text,timestamp with time zone,text,uuid,timestamp with time zone) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_ensure_event_partitions(from_month date, months integer)
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
GRANT EXECUTE ON FUNCTION bf4ps_ensure_event_partitions(date,integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_event_as_collector(e collection_events)
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

CREATE OR REPLACE FUNCTION public.bf4ps_event_live_lease(p_job bigint, p_collector uuid, p_token uuid, p_kind text)
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

CREATE OR REPLACE FUNCTION public.bf4ps_event_log_rows(e collection_events)
 RETURNS TABLE(ord smallint, occurred_at timestamp with time zone, event_type text, wait_ms integer)
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT * FROM bf4ps_event_log_rows(e.claimed_at, e.started_at, e.occurred_at,
                                       e.event_type, e.wait_ms)
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_event_log_rows(collection_events) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_event_log_rows(p_claimed_at timestamp with time zone, p_started_at timestamp with time zone, p_occurred_at timestamp with time zone, p_event_type text, p_wait_ms integer)
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
GRANT EXECUTE ON FUNCTION bf4ps_event_log_rows(timestamp with time zone,timestamp with time zone,timestamp with time zone,text,integer) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_event_no_lease(e collection_events)
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

CREATE OR REPLACE FUNCTION public.bf4ps_event_record(event_type text, collector_uuid uuid DEFAULT NULL::uuid, collector_name text DEFAULT NULL::text, hostname text DEFAULT NULL::text, egress_key text DEFAULT NULL::text, lane text DEFAULT NULL::text, job_id bigint DEFAULT NULL::bigint, lease_token uuid DEFAULT NULL::uuid, soldier_id bigint DEFAULT NULL::bigint, persona_id bigint DEFAULT NULL::bigint, platform text DEFAULT NULL::text, resource text DEFAULT NULL::text, priority_class text DEFAULT NULL::text, attempt_number integer DEFAULT NULL::integer, result text DEFAULT NULL::text, duration_ms integer DEFAULT NULL::integer, wait_ms integer DEFAULT NULL::integer, http_status integer DEFAULT NULL::integer, error_class text DEFAULT NULL::text, error_message text DEFAULT NULL::text, details jsonb DEFAULT NULL::jsonb, claimed_at timestamp with time zone DEFAULT NULL::timestamp with time zone, started_at timestamp with time zone DEFAULT NULL::timestamp with time zone)
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
GRANT EXECUTE ON FUNCTION bf4ps_event_record(text,uuid,text,text,text,text,bigint,uuid,bigint,bigint,text,text,text,integer,text,integer,integer,integer,text,text,jsonb,timestamp with time zone,timestamp with time zone) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_event_record(text,uuid,text,text,text,text,bigint,uuid,bigint,bigint,text,text,text,integer,text,integer,integer,integer,text,text,jsonb,timestamp with time zone,timestamp with time zone) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_event_record(text,uuid,text,text,text,text,bigint,uuid,bigint,bigint,text,text,text,integer,text,integer,integer,integer,text,text,jsonb,timestamp with time zone,timestamp with time zone) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_event_record(text,uuid,text,text,text,text,bigint,uuid,bigint,bigint,text,text,text,integer,text,integer,integer,integer,text,text,jsonb,timestamp with time zone,timestamp with time zone) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_event_retention()
 RETURNS interval
 LANGUAGE sql
 STABLE
AS $function$
    SELECT make_interval(secs => 86400 * GREATEST(
        bf4ps_policy_number('event_retention_days', 180), 1))
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_event_types_of(p_role text)
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
GRANT EXECUTE ON FUNCTION bf4ps_event_types_of(text) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_events_brin_open(part regclass)
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

CREATE OR REPLACE FUNCTION public.bf4ps_events_prune(p_cutoff timestamp with time zone, p_batch integer)
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
GRANT EXECUTE ON FUNCTION bf4ps_events_prune(timestamp with time zone,integer) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_events_prune(timestamp with time zone,integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_feed_class(p_class text, p_resource text, p_n integer, p_aging_seconds double precision)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
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
     LIMIT least(greatest($3, 0), 10000))
    UNION ALL
    (SELECT cs.soldier_id, cs.resource, cs.eligible_since, cs.status, cs.due_reason, 1
     FROM collection_state cs
     WHERE cs.activity_class = $1 AND cs.resource = $2
       AND cs.status IN ('never_attempted', 'due')
       AND cs.due_reason IS DISTINCT FROM 'final_refresh'
       AND NOT EXISTS (SELECT 1 FROM collection_jobs j
                       WHERE j.soldier_id = cs.soldier_id AND j.resource = cs.resource)
     ORDER BY cs.eligible_since, cs.soldier_id
     LIMIT least(greatest($3, 0), 10000))
), picked AS (
    SELECT c.*, row_number() OVER (ORDER BY c.tier, c.eligible_since, c.soldier_id) AS pos
    FROM candidates c
    ORDER BY c.tier, c.eligible_since, c.soldier_id
    LIMIT least(greatest($3, 0), 10000)
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_feed_class(text,text,integer,double precision) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_feed_retry(p_n integer)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
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
    LIMIT least(greatest($1, 0), 10000)
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_feed_retry(integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_forecast_prune(p_cutoff timestamp with time zone, p_batch integer)
 RETURNS SETOF timestamp with time zone
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    DELETE FROM forecast_records
    WHERE recorded_at IN (SELECT f.recorded_at FROM forecast_records f
                          WHERE f.recorded_at < bf4ps_history_cutoff(p_cutoff)
                          LIMIT LEAST(GREATEST(p_batch, 0), 10000))
    RETURNING recorded_at
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_prune(timestamp with time zone,integer) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_prune(timestamp with time zone,integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_forecast_record(p_figures jsonb)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    INSERT INTO forecast_records (recorded_at, figures) VALUES (clock_timestamp(), p_figures)
    ON CONFLICT (recorded_at) DO NOTHING
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_record(jsonb) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_record(jsonb) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_freshness(p_resource text)
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

CREATE OR REPLACE FUNCTION public.bf4ps_gains_boards_drop(p_soldiers bigint[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
BEGIN
    -- a soldier leaves the boards at once only for an open flag
    DELETE FROM gains_boards g
    WHERE g.soldier_id = ANY(p_soldiers)
      AND EXISTS (SELECT 1 FROM progress_flags f
                  WHERE f.soldier_id = g.soldier_id AND f.cleared_at IS NULL);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_gains_boards_drop(bigint[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_gains_boards_refresh(p_now timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t constant timestamptz := LEAST(p_now, clock_timestamp() + interval '1 hour');
    since constant timestamptz := t - make_interval(secs =>
        bf4ps_policy_number('gains_window_seconds', 604800));
    prior_m constant double precision := bf4ps_policy_number('gains_prior_minutes', 60);
    soldiers integer;
    items integer;
BEGIN
    DELETE FROM gains_board_items;
    DELETE FROM gains_boards;
    -- the soldier boards ('kpm', 'spm'): per soldier the checked, non-reset intervals ended
    -- in the window, soldiers with an open flag left out; the rate pulled toward the
    -- platform's time-weighted average as if prior_m more minutes were played at it
    WITH per AS (
        SELECT i.soldier_id, i.platform, sum(i.kills) AS kills, sum(i.score) AS score,
               sum(i.seconds) AS seconds
        FROM soldier_intervals i
        WHERE i.ended_at > since AND i.checked_at IS NOT NULL AND NOT i.reset
          AND NOT EXISTS (SELECT 1 FROM progress_flags f
                          WHERE f.soldier_id = i.soldier_id AND f.cleared_at IS NULL)
        GROUP BY i.soldier_id, i.platform
    ), prior AS (
        SELECT platform,
               COALESCE(sum(kills)::float8 / NULLIF(sum(seconds), 0) * 60, 0) AS kpm,
               COALESCE(sum(score)::float8 / NULLIF(sum(seconds), 0) * 60, 0) AS spm
        FROM per GROUP BY platform
    )
    INSERT INTO gains_boards (board, platform, item_id, soldier_id, value, raw, kills, score,
                              seconds, refreshed_at)
    SELECT b.board, per.platform, 0, per.soldier_id,
           (CASE b.board WHEN 'kpm' THEN per.kills ELSE per.score END
            + CASE b.board WHEN 'kpm' THEN prior.kpm ELSE prior.spm END * prior_m)
           / (per.seconds / 60.0 + prior_m),
           CASE b.board WHEN 'kpm' THEN per.kills ELSE per.score END / (per.seconds / 60.0),
           per.kills, per.score, per.seconds, t
    FROM per
    JOIN prior ON prior.platform = per.platform
    CROSS JOIN (VALUES ('kpm'), ('spm')) AS b(board)
    WHERE per.seconds >= bf4ps_policy_number('gains_board_min_seconds', 3600)
      AND per.seconds > 0;
    GET DIAGNOSTICS soldiers = ROW_COUNT;
    -- the per-weapon and per-vehicle kill-rate boards, the prior the item's own average
    WITH per AS (
        SELECT i.kind, i.item_id, i.soldier_id, i.platform, sum(i.kills) AS kills,
               sum(i.seconds) AS seconds
        FROM item_intervals i
        WHERE i.ended_at > since AND i.checked_at IS NOT NULL AND NOT i.reset
          AND NOT EXISTS (SELECT 1 FROM progress_flags f
                          WHERE f.soldier_id = i.soldier_id AND f.cleared_at IS NULL)
        GROUP BY i.kind, i.item_id, i.soldier_id, i.platform
    ), prior AS (
        SELECT kind, item_id, platform,
               COALESCE(sum(kills)::float8 / NULLIF(sum(seconds), 0) * 60, 0) AS kpm
        FROM per GROUP BY kind, item_id, platform
    )
    INSERT INTO gains_boards (board, platform, item_id, soldier_id, value, raw, kills, score,
                              seconds, refreshed_at)
    SELECT per.kind || '_kpm', per.platform, per.item_id, per.soldier_id,
           (per.kills + prior.kpm * prior_m) / (per.seconds / 60.0 + prior_m),
           per.kills / (per.seconds / 60.0), per.kills, NULL, per.seconds, t
    FROM per
    JOIN prior ON (prior.kind, prior.item_id, prior.platform)
                = (per.kind, per.item_id, per.platform)
    WHERE per.seconds >= bf4ps_policy_number('gains_board_item_min_seconds', 1800)
      AND per.seconds > 0;
    GET DIAGNOSTICS items = ROW_COUNT;
    INSERT INTO gains_board_items (board, platform, item_id, soldiers)
    SELECT board, platform, item_id, count(*)
    FROM gains_boards
    WHERE board IN ('weapon_kpm', 'vehicle_kpm')
    GROUP BY board, platform, item_id;
    RETURN soldiers + items;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_gains_boards_refresh(timestamp with time zone) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_gains_boards_refresh(timestamp with time zone) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_gate_cool(p_egress text, p_seconds double precision)
 RETURNS TABLE(cooldown_until timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'cool');
    RETURN QUERY
    UPDATE egress_gates g
    SET cooldown_until = GREATEST(COALESCE(g.cooldown_until, '-infinity'), clock_timestamp()
            + make_interval(secs => LEAST(GREATEST(p_seconds, 0),
                bf4ps_policy_number('gate_cooldown_max_seconds', 1800)))),
        last_outage_at = clock_timestamp(), updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.cooldown_until;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_gate_cool(text,double precision) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_gate_cool(text,double precision) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION public.bf4ps_gate_recovered(p_egress text)
 RETURNS TABLE(throttle_streak integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'report the recovery of');
    RETURN QUERY
    UPDATE egress_gates g
    SET throttle_streak = g.throttle_streak - 1, updated_at = now()
    WHERE g.egress_key = p_egress AND g.throttle_streak > 0
      AND (g.cooldown_until IS NULL OR g.cooldown_until <= clock_timestamp())
    RETURNING g.throttle_streak::integer;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_gate_recovered(text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_gate_seed(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_reason text)
 RETURNS SETOF egress_gates
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    floor_s constant double precision :=
        bf4ps_policy_number('gate_seed_min_interval_seconds', 0.05);
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'seed the gate of');
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    -- the seed's pacing is the caller's, never faster than the policy's floor: neither the
    -- interval nor a window's average spacing
    RETURN QUERY
    INSERT INTO egress_gates (egress_key, min_interval_seconds, window_requests, window_seconds)
    VALUES (p_egress, GREATEST(p_min_interval, floor_s), p_window_requests,
            CASE WHEN p_window_requests IS NULL THEN p_window_seconds
                 ELSE GREATEST(p_window_seconds, p_window_requests * floor_s) END)
    ON CONFLICT (egress_key) DO NOTHING
    RETURNING *;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_gate_seed(text,double precision,integer,double precision,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_gate_set(p_egress text, p_min_interval double precision, p_window_requests integer, p_window_seconds double precision, p_cooldown_seconds double precision, p_end_cooldown boolean, p_create boolean, p_reason text)
 RETURNS SETOF egress_gates
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_gate_set(text,double precision,integer,double precision,double precision,boolean,boolean,text) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION public.bf4ps_gate_throttled(p_egress text, p_base double precision, p_max double precision)
 RETURNS TABLE(throttle_streak integer, cooldown_until timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    top constant double precision := bf4ps_policy_number('gate_cooldown_max_seconds', 1800);
BEGIN
    PERFORM bf4ps_egress_own(p_egress, 'report a throttle of');
    -- the caller's base and cap, within [1 s, the policy's longest cool-down]
    RETURN QUERY
    UPDATE egress_gates g
    SET throttle_streak = g.throttle_streak + 1, last_throttle_at = clock_timestamp(),
        cooldown_until = GREATEST(COALESCE(g.cooldown_until, '-infinity'), clock_timestamp()
            + make_interval(secs => LEAST(LEAST(GREATEST(p_max, 1), top),
                GREATEST(LEAST(p_base, top), 1) * power(2, LEAST(g.throttle_streak, 30))))),
        updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.throttle_streak::integer, g.cooldown_until;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_gate_throttled(text,double precision,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_grant_role(role_name text, login_name text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_grant_role(text,text) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_guard_after(g restore_guard, t timestamp with time zone)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT g.hold_until IS NULL OR t > g.hold_until
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_guard_after(restore_guard,timestamp with time zone) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_history_cutoff(p_cutoff timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$
    SELECT LEAST(p_cutoff, clock_timestamp() - make_interval(
        secs => 86400 * GREATEST(bf4ps_policy_number('history_retention_days', 180), 1)))
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_history_prune(p_cutoff timestamp with time zone, p_batch integer)
 RETURNS SETOF timestamp with time zone
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    DELETE FROM fleet_history
    WHERE recorded_at IN (SELECT h.recorded_at FROM fleet_history h
                          WHERE h.recorded_at < bf4ps_history_cutoff(p_cutoff)
                          LIMIT LEAST(GREATEST(p_batch, 0), 10000))
    RETURNING recorded_at
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_history_prune(timestamp with time zone,integer) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_history_prune(timestamp with time zone,integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_history_record(p_interval double precision, p_soldiers bigint, p_coverage jsonb, p_finished jsonb, p_requests jsonb, p_backlog_age jsonb, p_refresh_lag jsonb)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    INSERT INTO fleet_history (recorded_at, interval_seconds, soldiers, coverage, finished,
                               requests, backlog_age, refresh_lag)
    VALUES (clock_timestamp(), LEAST(GREATEST(p_interval, 1), 86400), GREATEST(p_soldiers, 0),
            p_coverage, p_finished, p_requests, p_backlog_age, p_refresh_lag)
    ON CONFLICT (recorded_at) DO NOTHING
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_history_record(double precision,bigint,jsonb,jsonb,jsonb,jsonb,jsonb) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_intake_enqueue(p_soldiers bigint[], p_classes text[], p_ranks timestamp with time zone[], p_resource text, p_reason text, p_now timestamp with time zone)
 RETURNS TABLE(soldier_id bigint, job_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_intake_enqueue(bigint[],text[],timestamp with time zone[],text,text,timestamp with time zone) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_intake_mark(p_source text, p_last_alias_id bigint, p_watermark timestamp with time zone, p_error text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF p_source NOT IN ('bf4sw', 'bf4sw_reconcile') THEN
        RAISE EXCEPTION 'no intake cursor %', p_source USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_error IS NOT NULL THEN
        INSERT INTO intake_state AS st (source_name, last_run_at, last_error)
        VALUES (p_source, now(), left(p_error, 500))
        ON CONFLICT (source_name) DO UPDATE
        SET last_run_at = now(), last_error = excluded.last_error, updated_at = now();
        RETURN;
    END IF;
    INSERT INTO intake_state AS st (source_name, last_alias_id, reconcile_watermark,
                                    last_run_at, last_success_at)
    VALUES (p_source, GREATEST(COALESCE(p_last_alias_id, 0), 0), p_watermark, now(), now())
    ON CONFLICT (source_name) DO UPDATE
    SET last_alias_id = GREATEST(st.last_alias_id, excluded.last_alias_id),
        reconcile_watermark = GREATEST(st.reconcile_watermark, excluded.reconcile_watermark),
        last_run_at = now(), last_success_at = now(), last_error = NULL, updated_at = now();
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_intake_mark(text,bigint,timestamp with time zone,text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_intake_names(p_soldier_ids bigint[], p_names text[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t constant timestamptz := clock_timestamp();
    n constant integer := cardinality(p_soldier_ids);
    added integer;
BEGIN
    IF n > 100000 OR n IS DISTINCT FROM cardinality(p_names)
            OR n IS DISTINCT FROM cardinality(p_first_seen)
            OR n IS DISTINCT FROM cardinality(p_last_seen) THEN
        RAISE EXCEPTION 'at most 100000 names a batch, each with its soldier and times'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH up AS (
        INSERT INTO soldier_names AS x (soldier_id, name, first_seen_at, last_seen_at)
        SELECT i.soldier_id, i.name, CASE WHEN i.first_seen > t THEN t ELSE i.first_seen END,
               CASE WHEN i.last_seen > t THEN t ELSE i.last_seen END
        FROM unnest(p_soldier_ids, p_names, p_first_seen, p_last_seen)
             AS i(soldier_id, name, first_seen, last_seen)
        ON CONFLICT (soldier_id, name) DO UPDATE
        SET first_seen_at = LEAST(x.first_seen_at, excluded.first_seen_at),
            last_seen_at = GREATEST(x.last_seen_at, excluded.last_seen_at)
        WHERE excluded.first_seen_at < x.first_seen_at OR excluded.last_seen_at > x.last_seen_at
        RETURNING (x.xmax = 0) AS inserted)
    SELECT count(*) FILTER (WHERE up.inserted) INTO added FROM up;
    RETURN added;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_intake_names(bigint[],text[],timestamp with time zone[],timestamp with time zone[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_intake_soldiers(p_persona_ids bigint[], p_platforms text[], p_names text[], p_first_seen timestamp with time zone[], p_played_at timestamp with time zone[])
 RETURNS TABLE(soldier_id bigint, persona_id bigint, platform text, inserted boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := clock_timestamp();
    n constant integer := cardinality(p_persona_ids);
BEGIN
    IF n > 10000 OR n IS DISTINCT FROM cardinality(p_platforms)
            OR n IS DISTINCT FROM cardinality(p_names)
            OR n IS DISTINCT FROM cardinality(p_first_seen)
            OR n IS DISTINCT FROM cardinality(p_played_at) THEN
        RAISE EXCEPTION 'at most 10000 soldiers a batch, each with its platform, name and times'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    INSERT INTO soldiers AS s (persona_id, platform, current_name, first_seen_at, last_seen_at)
    SELECT i.persona_id, i.platform, i.name,
           CASE WHEN i.first_seen > t THEN t ELSE i.first_seen END,
           CASE WHEN i.played_at > t THEN t ELSE i.played_at END  -- NULL: not a sighting
    FROM unnest(p_persona_ids, p_platforms, p_names, p_first_seen, p_played_at)
         WITH ORDINALITY AS i(persona_id, platform, name, first_seen, played_at, ord)
    ORDER BY i.ord
    ON CONFLICT (persona_id, platform) DO UPDATE
    SET current_name = CASE
            WHEN excluded.last_seen_at IS NOT NULL
                 AND (s.last_seen_at IS NULL OR excluded.last_seen_at >= s.last_seen_at)
            THEN excluded.current_name ELSE s.current_name END,
        first_seen_at = LEAST(s.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(s.last_seen_at, excluded.last_seen_at),
        updated_at = now()
    RETURNING s.soldier_id, s.persona_id, s.platform::text, (s.xmax = 0);
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_intake_soldiers(bigint[],text[],text[],timestamp with time zone[],timestamp with time zone[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_intake_sources(p_soldier_ids bigint[], p_first_seen timestamp with time zone[], p_last_seen timestamp with time zone[], p_eligible_since timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t constant timestamptz := clock_timestamp();
    n constant integer := cardinality(p_soldier_ids);
BEGIN
    IF n > 10000 OR n IS DISTINCT FROM cardinality(p_first_seen)
            OR n IS DISTINCT FROM cardinality(p_last_seen) THEN
        RAISE EXCEPTION 'at most 10000 soldiers a batch, each with its times'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO soldier_sources AS src (soldier_id, source_type, first_seen_at, last_seen_at)
    SELECT i.soldier_id, 'bf4sw', CASE WHEN i.first_seen > t THEN t ELSE i.first_seen END,
           CASE WHEN i.last_seen > t THEN t ELSE i.last_seen END
    FROM unnest(p_soldier_ids, p_first_seen, p_last_seen) AS i(soldier_id, first_seen, last_seen)
    ON CONFLICT (soldier_id, source_type) DO UPDATE
    SET first_seen_at = LEAST(src.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(src.last_seen_at, excluded.last_seen_at)
    WHERE excluded.first_seen_at < src.first_seen_at OR excluded.last_seen_at > src.last_seen_at;
    -- every resource never attempted, eligible since the import (FIFO by import order)
    INSERT INTO collection_state (soldier_id, resource, eligible_since)
    SELECT s.soldier_id, r.resource,
           LEAST(COALESCE(p_eligible_since, t), t)
    FROM unnest(p_soldier_ids) AS s(soldier_id)
    CROSS JOIN unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r(resource)
    ORDER BY s.soldier_id, r.resource
    ON CONFLICT DO NOTHING;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_intake_sources(bigint[],timestamp with time zone[],timestamp with time zone[],timestamp with time zone) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_item_intervals_checked(p_soldier_id bigint[], p_kind text[], p_item_id integer[], p_ended_at timestamp with time zone[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
BEGIN
    IF cardinality(p_soldier_id) > 10000
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_kind)
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_item_id)
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_ended_at) THEN
        RAISE EXCEPTION 'at most 10000 intervals a call, each with its kind, item and end'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE item_intervals i SET checked_at = clock_timestamp()
    FROM unnest(p_soldier_id, p_kind, p_item_id, p_ended_at)
         AS t(soldier_id, kind, item_id, ended_at)
    WHERE i.soldier_id = t.soldier_id AND i.kind = t.kind AND i.item_id = t.item_id
      AND i.ended_at = t.ended_at AND i.checked_at IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_item_intervals_checked(bigint[],text[],integer[],timestamp with time zone[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_item_intervals_unchecked(p_limit integer)
 RETURNS SETOF item_intervals
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    RETURN QUERY
    SELECT * FROM item_intervals i WHERE i.checked_at IS NULL ORDER BY i.ended_at
    LIMIT LEAST(GREATEST(p_limit, 0), 10000)
    FOR UPDATE SKIP LOCKED;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_item_intervals_unchecked(integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_job_attach_request(p_job bigint, p_request uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_attach_request(bigint,uuid) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_job_attach_request(bigint,uuid) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_job_delete(p_job bigint, p_token uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_delete(bigint,uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_lock_owned(p_job bigint, p_collector uuid, p_token uuid, p_statuses text[])
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
GRANT EXECUTE ON FUNCTION bf4ps_job_lock_owned(bigint,uuid,uuid,text[]) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_note_error(p_job bigint, p_token uuid, p_error_class text, p_error_message text)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_note_error(bigint,uuid,text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_owned_now(p_job bigint, p_collector uuid, p_token uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_owned_now(bigint,uuid,uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_release(p_job bigint, p_collector uuid, p_token uuid, p_why text)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_release(bigint,uuid,uuid,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_renew(p_job bigint, p_collector uuid, p_token uuid, p_lease double precision)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_renew(bigint,uuid,uuid,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_reslot(p_job bigint, p_collector uuid, p_token uuid, p_sent_at timestamp with time zone, p_lease double precision)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_reslot(bigint,uuid,uuid,timestamp with time zone,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_retry(p_job bigint, p_token uuid, p_eligible_at timestamp with time zone, p_error_class text, p_error_message text)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_retry(bigint,uuid,timestamp with time zone,text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_snapshot(p_job bigint, p_token uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_snapshot(bigint,uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_job_start(p_job bigint, p_collector uuid, p_token uuid, p_started_at timestamp with time zone, p_lease double precision)
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
GRANT EXECUTE ON FUNCTION bf4ps_job_start(bigint,uuid,uuid,timestamp with time zone,double precision) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_jobs_expire_abandoned(p_collector uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_jobs_expire_abandoned(uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_lease_length(p_lease double precision)
 RETURNS interval
 LANGUAGE sql
 STABLE
AS $function$
    SELECT make_interval(secs => LEAST(GREATEST(p_lease, 0),
                                       GREATEST(bf4ps_policy_number('lease_max_seconds', 1800), 1)))
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_lease_outcome(p_job_id bigint, p_lease_token uuid)
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
GRANT EXECUTE ON FUNCTION bf4ps_lease_outcome(bigint,uuid) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_lease_outcome(bigint,uuid) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_lease_outcome(bigint,uuid) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_ledger_prune(p_cutoff timestamp with time zone, p_batch integer)
 RETURNS SETOF bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    DELETE FROM request_ledger
    WHERE request_id IN (
        SELECT l.request_id FROM request_ledger l
        WHERE l.slot_at < least(p_cutoff, clock_timestamp() - make_interval(secs => 2 * greatest(
            (SELECT b.window_seconds FROM fleet_budget b WHERE b.budget_id = 1),
            bf4ps_restore_span())))
        LIMIT greatest(p_batch, 0))
    RETURNING request_id
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_prune(timestamp with time zone,integer) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_prune(timestamp with time zone,integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_ledger_receipt(p_request bigint)
 RETURNS TABLE(request_id bigint, slot_at timestamp with time zone, receipt text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT l.request_id, l.slot_at, bf4ps_ledger_sign(l.request_id, l.slot_at)
    FROM request_ledger l WHERE l.request_id = p_request
      -- a receipt of a request counted for a registration of the caller's login only
      AND (l.collector_uuid IS NULL OR bf4ps_caller_holds('bf4ps_operator')
           OR EXISTS (SELECT 1 FROM collectors c WHERE c.collector_uuid = l.collector_uuid
                        AND bf4ps_caller_owns(c.db_login)))
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_receipt(bigint) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_ledger_sign(p_request bigint, p_slot_at timestamp with time zone)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT encode(sha256(k.secret || sha256(k.secret || convert_to(
               p_request::text || ':' || (extract(epoch FROM p_slot_at) * 1000000)::bigint,
               'UTF8'))), 'hex')
    FROM ledger_receipt_key k
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_ledger_unsent(p_request bigint, p_collector uuid, p_token uuid)
 RETURNS TABLE(request_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    mine request_ledger;
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'mark unsent the requests of');
    PERFORM 1 FROM egress_gates g JOIN request_ledger l ON l.egress_key = g.egress_key
    WHERE l.request_id = p_request AND l.collector_uuid = p_collector
    FOR UPDATE OF g;
    UPDATE request_ledger l SET unsent_at = clock_timestamp()
    WHERE l.request_id = p_request AND l.collector_uuid = p_collector AND l.unsent_at IS NULL
      AND l.slot_at > clock_timestamp() - interval '10 seconds'
      AND (l.job_id IS NULL  -- a recon request: of no queue job
           OR EXISTS (SELECT 1 FROM collection_jobs j
                      WHERE j.job_id = l.job_id AND j.collector_uuid = p_collector
                        AND j.lease_token = p_token))
    RETURNING l.* INTO mine;
    IF mine.request_id IS NULL THEN
        RETURN;
    END IF;
    UPDATE egress_gates g SET next_slot_at = mine.slot_at, updated_at = now()
    WHERE g.egress_key = mine.egress_key AND g.next_slot_at > mine.slot_at
      AND NOT EXISTS (SELECT 1 FROM request_ledger x
                      WHERE x.egress_key = mine.egress_key AND x.slot_at >= mine.slot_at
                        AND x.request_id <> mine.request_id AND x.unsent_at IS NULL);
    request_id := mine.request_id;
    RETURN NEXT;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_unsent(bigint,uuid,uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_ledger_unsent_operator(p_request bigint)
 RETURNS TABLE(request_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE request_ledger l SET unsent_at = clock_timestamp()
    WHERE l.request_id = p_request AND l.collector_uuid IS NULL AND l.job_id IS NULL
      AND l.unsent_at IS NULL AND l.slot_at > clock_timestamp() - interval '10 seconds'
    RETURNING l.request_id;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_unsent_operator(bigint) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION public.bf4ps_lookup_request_resolved(p_job bigint, p_token uuid, p_soldier bigint, p_resources text[])
 RETURNS TABLE(created_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- a look-up's answer attaches the soldier to the request of the look-up job whose lease
    -- the caller holds, and names the resources planned for it: never another player's
    -- request, never its status or message (the triggers keep those)
    RETURN QUERY
    UPDATE interactive_requests r
    SET soldier_id = p_soldier, resources = COALESCE(p_resources, r.resources),
        updated_at = clock_timestamp()
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lease_token = p_token AND j.request_id = r.request_id
    RETURNING r.created_at;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_lookup_request_resolved(bigint,uuid,bigint,text[]) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_mark_sign(p_payload text)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT encode(sha256(k.secret || sha256(k.secret || convert_to('mark:' || p_payload,
                                                                   'UTF8'))), 'hex')
    FROM ledger_receipt_key k
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_no_temporary()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM bf4ps_collector, bf4ps_scheduler, '
                   'bf4ps_web, bf4ps_operator', current_database());
END;
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_observe_sessions(soldier_ids bigint[], seen timestamp with time zone[], guids text[], names text[], gap_seconds double precision)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    o record;
    s play_sessions%ROWTYPE;
    opened integer := 0;
BEGIN
    FOR o IN SELECT * FROM unnest(soldier_ids, seen, guids, names)
                 AS x(soldier_id, seen_at, guid, name) ORDER BY x.soldier_id LOOP
        IF o.seen_at > clock_timestamp() + interval '5 minutes' THEN
            CONTINUE;  -- a sighting from the future would keep a session open for ever
        END IF;
        SELECT * INTO s FROM play_sessions p WHERE p.soldier_id = o.soldier_id
        ORDER BY p.last_seen_at DESC LIMIT 1 FOR UPDATE;
        IF FOUND AND o.seen_at <= s.last_seen_at THEN
            CONTINUE;
        END IF;
        IF FOUND AND s.ended_at IS NULL AND s.server_guid IS NOT DISTINCT FROM o.guid
           AND o.seen_at <= s.last_seen_at + make_interval(secs => gap_seconds) THEN
            UPDATE play_sessions SET last_seen_at = o.seen_at, sightings = sightings + 1
            WHERE session_id = s.session_id;
            CONTINUE;
        END IF;
        IF FOUND AND s.ended_at IS NULL THEN
            UPDATE play_sessions SET ended_at = clock_timestamp()
            WHERE session_id = s.session_id;
        END IF;
        INSERT INTO play_sessions (soldier_id, server_guid, server_name, started_at,
                                   last_seen_at)
        VALUES (o.soldier_id, o.guid, left(o.name, 200), o.seen_at, o.seen_at);
        opened := opened + 1;
    END LOOP;
    RETURN opened;
END;
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_observe_sessions(bigint[],timestamp with time zone[],text[],text[],double precision) TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_observe_sessions(bigint[],timestamp with time zone[],text[],text[],double precision) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_ops_login_attempt(p_keys text[], p_outcome text, p_free integer, p_base double precision, p_max double precision, p_forget double precision)
 RETURNS TABLE(key text, wait_seconds double precision, failures integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t timestamptz := clock_timestamp();
    -- the caller's figures, within the lock-out's bounds: at least one free attempt and at
    -- most 100, a lock of at least a second growing to at most a day, failures remembered
    -- for a minute to a week
    free integer := LEAST(GREATEST(p_free, 1), 100);
    base double precision := LEAST(GREATEST(p_base, 1), 86400);
    top double precision := LEAST(GREATEST(p_max, base), 86400);
    forget interval := make_interval(secs => LEAST(GREATEST(p_forget, 60), 604800));
    k text;
    r ops_login_failures;
    n integer;
    refused text[] := '{}';
    verified boolean := p_outcome = 'verified';
BEGIN
    IF cardinality(p_keys) > 4 OR p_outcome NOT IN ('check', 'attempt', 'verified', 'failed',
                                                     'succeeded') THEN
        RAISE EXCEPTION 'at most four keys and an outcome of check, attempt, verified, failed, '
            'succeeded' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF verified THEN
        -- the caller compared the credentials and they were right: nothing is counted and the
        -- keys' records are cleared (as 'succeeded'), unless an attempt now would be refused
        -- (a key locked, or past its free attempts with no lock yet): then it is counted as an
        -- attempt, refused or (a lock that ended meanwhile) accepted as one. So concurrent
        -- right logins never count against each other, and a lock-out holds for them too.
        IF NOT EXISTS (SELECT 1 FROM ops_login_failures f
                       WHERE f.key = ANY(p_keys)
                         AND (f.locked_until > t
                              OR (f.locked_until IS NULL AND f.failures >= free
                                  AND f.last_failure_at >= t - forget))) THEN
            DELETE FROM ops_login_failures f WHERE f.key = ANY(p_keys);
            RETURN QUERY SELECT x, 0::double precision, 0 FROM unnest(p_keys) AS x;
            RETURN;
        END IF;
        p_outcome := 'attempt';
    END IF;
    IF p_outcome = 'succeeded' THEN
        DELETE FROM ops_login_failures f WHERE f.key = ANY(p_keys);
    ELSIF p_outcome IN ('attempt', 'failed') THEN
        DELETE FROM ops_login_failures f
        WHERE f.last_failure_at < t - forget
          AND (f.locked_until IS NULL OR f.locked_until <= t);
    END IF;
    IF p_outcome = 'attempt' THEN
        -- counted before any password is compared, each key's row locked in key order: the
        -- first `free` attempts are compared; the next is refused and starts a lock-out; once
        -- a lock-out is over, one attempt is compared and starts the next (twice as long),
        -- so concurrent guesses get no more comparisons than sequential ones
        FOR k IN SELECT DISTINCT x FROM unnest(p_keys) AS x ORDER BY x LOOP
            -- the key's row, made or locked in one statement: a row another attempt's
            -- success deleted meanwhile is made again (a separate read found none, and the
            -- count became NULL)
            INSERT INTO ops_login_failures AS f (key, failures, last_failure_at)
            VALUES (k, 0, t)
            ON CONFLICT (key) DO UPDATE SET key = f.key
            RETURNING f.* INTO r;
            IF r.locked_until > t THEN
                -- refused, nothing counted (also when the lock-out began after this attempt's
                -- own clock, in the attempt it waited for)
                refused := refused || k;
                CONTINUE;
            END IF;
            n := r.failures + 1;
            UPDATE ops_login_failures f
            SET failures = n, last_failure_at = t, updated_at = t,
                locked_until = CASE WHEN n <= free THEN f.locked_until
                    ELSE t + make_interval(secs => LEAST(top,
                             base * power(2, LEAST(n - free - 1, 40)))) END
            WHERE f.key = k;
            IF n > free AND r.locked_until IS NULL THEN
                refused := refused || k;  -- the first beyond the free ones: not compared
            END IF;
        END LOOP;
        IF verified AND cardinality(refused) = 0
                AND NOT EXISTS (SELECT 1 FROM ops_login_failures f
                                WHERE f.key = ANY(p_keys) AND f.locked_until > t
                                  AND f.last_failure_at < t) THEN
            DELETE FROM ops_login_failures f WHERE f.key = ANY(p_keys);  -- accepted: cleared
            RETURN QUERY SELECT x, 0::double precision, 0 FROM unnest(p_keys) AS x;
            RETURN;
        END IF;
        RETURN QUERY
        SELECT f.key, CASE WHEN f.key = ANY(refused) OR f.locked_until > t
                            AND f.last_failure_at < t
                           THEN greatest(extract(epoch FROM f.locked_until - t), 0)
                           ELSE 0 END::double precision,
               f.failures
        FROM ops_login_failures f WHERE f.key = ANY(p_keys);
        RETURN;
    END IF;
    IF p_outcome = 'failed' THEN  -- the older build's count after a comparison
        INSERT INTO ops_login_failures AS f (key, failures, last_failure_at, locked_until)
        SELECT x, 1, t, NULL FROM unnest(p_keys) AS x
        ON CONFLICT (key) DO UPDATE
        SET failures = f.failures + 1, last_failure_at = t, updated_at = t,
            locked_until = CASE WHEN f.failures + 1 > free THEN greatest(
                COALESCE(f.locked_until, '-infinity'), t + make_interval(secs => least(
                    top, base * power(2, least(f.failures - free, 40)))))
                ELSE f.locked_until END;
    END IF;
    RETURN QUERY
    SELECT x, greatest(0, COALESCE(extract(epoch FROM f.locked_until - t), 0))::double precision,
           COALESCE(f.failures, 0)
    FROM unnest(p_keys) AS x LEFT JOIN ops_login_failures f ON f.key = x
      AND (f.last_failure_at >= t - forget OR f.locked_until > t);
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_ops_login_attempt(text[],text,integer,double precision,double precision,double precision) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_paced_interval(p_min_interval double precision, p_streak integer, p_margin double precision)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT p_min_interval * (1 + 0.5 * p_streak) + p_margin
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_paced_interval(double precision,integer,double precision) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_paced_slot(p_next_slot_at timestamp with time zone, p_cooldown_until timestamp with time zone, p_now timestamp with time zone, p_connect_lead double precision)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT GREATEST(p_now + make_interval(secs => p_connect_lead), p_next_slot_at,
                    p_cooldown_until)
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_paced_slot(timestamp with time zone,timestamp with time zone,timestamp with time zone,double precision) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_parked_recheck(p_recheck_seconds double precision, p_n integer)
 RETURNS TABLE(n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH picked AS (
    SELECT soldier_id, resource
    FROM collection_state
    WHERE status = 'unavailable' AND activity_class = 'active'
      -- never sooner than the policy's recheck interval, whatever the caller asks
      AND last_attempt_at <= clock_timestamp() - make_interval(secs => GREATEST($1,
          bf4ps_policy_number('unavailable_recheck_seconds', 604800)))
    ORDER BY last_attempt_at
    LIMIT least(greatest($2, 0), 10000)
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
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_parked_recheck(double precision,integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_policy_number(p_key text, p_default double precision)
 RETURNS double precision
 LANGUAGE sql
 STABLE
AS $function$
    SELECT COALESCE((SELECT (p.value #>> '{}')::double precision FROM scheduler_policy p
                     WHERE p.key = p_key AND jsonb_typeof(p.value) = 'number'), p_default)
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_progress_flag_clear(p_flag bigint, p_now timestamp with time zone, p_by text, p_note text)
 RETURNS TABLE(flag_id bigint, soldier_id bigint, persona_id bigint, platform text, kind text, item_id bigint, reason text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- an open flag once; cleared_by is the console's or the CLI's name for the operator, and
    -- the flag's event (bf4ps_event_record) records the login that cleared it
    RETURN QUERY
    UPDATE progress_flags f
    SET cleared_at = LEAST(p_now, clock_timestamp()), cleared_by = left(p_by, 200),
        clear_note = left(p_note, 500)
    FROM soldiers s
    WHERE f.flag_id = p_flag AND f.cleared_at IS NULL AND s.soldier_id = f.soldier_id
    RETURNING f.flag_id::bigint, f.soldier_id, s.persona_id, s.platform::text, f.kind::text,
              f.item_id::bigint, f.reason::text;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_progress_flag_clear(bigint,timestamp with time zone,text,text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_progress_flag_raise(p_soldier bigint, p_kind text, p_item integer, p_started_at timestamp with time zone, p_ended_at timestamp with time zone, p_reason text)
 RETURNS TABLE(flag_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    IF NOT (CASE WHEN p_kind = 'soldier' THEN EXISTS (
                SELECT 1 FROM soldier_intervals i
                WHERE i.soldier_id = p_soldier AND i.ended_at = p_ended_at
                  AND i.started_at = p_started_at AND i.checked_at IS NULL)
            ELSE EXISTS (
                SELECT 1 FROM item_intervals i
                WHERE i.soldier_id = p_soldier AND i.kind = p_kind AND i.item_id = p_item
                  AND i.ended_at = p_ended_at AND i.started_at = p_started_at
                  AND i.checked_at IS NULL) END) THEN
        RETURN;  -- no such unchecked interval: nothing flagged
    END IF;
    RETURN QUERY
    INSERT INTO progress_flags (soldier_id, kind, item_id, started_at, ended_at, reason,
                                flagged_at)
    VALUES (p_soldier, p_kind, CASE WHEN p_kind = 'soldier' THEN NULL ELSE p_item END,
            p_started_at, p_ended_at, left(p_reason, 500), clock_timestamp())
    ON CONFLICT (soldier_id, kind, item_id, ended_at) DO NOTHING
    RETURNING progress_flags.flag_id;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_progress_flag_raise(bigint,text,integer,timestamp with time zone,timestamp with time zone,text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_reap_expired(p_limit integer)
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
GRANT EXECUTE ON FUNCTION bf4ps_reap_expired(integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_recon_gate_interval(p_egress text, p_min_interval double precision)
 RETURNS TABLE(min_interval_seconds double precision)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM set_config('bf4ps.change_reason', 'bf4ps recon: a ladder stage', true);
    RETURN QUERY
    UPDATE egress_gates g SET min_interval_seconds = p_min_interval, updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.min_interval_seconds;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_recon_gate_interval(text,double precision) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION public.bf4ps_request_finished_note(r interactive_requests)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
    SELECT CASE WHEN count(*) = 0 THEN 'every resource is fresh'  -- views NOTHING_DUE
           ELSE format('finished: %s of %s collected', count(*) FILTER (WHERE collected),
                       count(*))
                || COALESCE('; not collected: '
                            || string_agg(resource, ', ' ORDER BY ord)
                               FILTER (WHERE NOT collected), '') END
    FROM (SELECT wanted.resource, wanted.ord,
                 COALESCE(cs.last_success_at >= r.created_at, false) AS collected
          FROM unnest(r.resources) WITH ORDINALITY AS wanted(resource, ord)
          LEFT JOIN collection_state cs
                 ON cs.soldier_id = r.soldier_id AND cs.resource = wanted.resource) rs
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_request_finished_note(interactive_requests) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_request_insert(p_request uuid, p_soldier bigint, p_lookup_name text, p_platform text, p_client_key text, p_resources text[])
 RETURNS TABLE(created_at timestamp with time zone, now timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    INSERT INTO interactive_requests (request_id, soldier_id, lookup_name, platform,
                                      client_key, resources, created_at)
    SELECT p_request, p_soldier, p_lookup_name, p_platform, p_client_key,
           ARRAY(SELECT x FROM unnest(COALESCE(p_resources, '{}')) AS x
                 WHERE x IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup')), now()
    RETURNING interactive_requests.created_at, clock_timestamp();
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_request_insert(uuid,bigint,text,text,text,text[]) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_request_job_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    started boolean := NEW.started_at IS NOT NULL
                       AND NEW.started_at IS DISTINCT FROM OLD.started_at;
BEGIN
    UPDATE interactive_requests r
    SET status = CASE WHEN started THEN 'collecting' ELSE r.status END,
        first_request_at = CASE WHEN started AND (r.first_request_at IS NULL
                                                  OR r.first_request_at = OLD.started_at)
                                THEN NEW.started_at ELSE r.first_request_at END,
        message = CASE WHEN started THEN r.message
                       ELSE 'search unavailable, retried later' END,
        updated_at = clock_timestamp()
    WHERE r.request_id = NEW.request_id AND r.status IN ('queued', 'collecting');
    RETURN NULL;
END;
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_request_job_changed() TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_request_job_gone()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    remaining boolean := EXISTS (SELECT 1 FROM collection_jobs o
                                 WHERE o.request_id = OLD.request_id);
    req interactive_requests;
    unresolved boolean;
BEGIN
    SELECT * INTO req FROM interactive_requests r
    WHERE r.request_id = OLD.request_id AND r.status IN ('queued', 'collecting');
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    unresolved := OLD.resource = 'lookup' AND req.soldier_id IS NULL;
    UPDATE interactive_requests r
    SET status = CASE WHEN remaining THEN 'collecting'
                      WHEN unresolved AND OLD.last_error_class = 'not_found' THEN 'not_found'
                      WHEN unresolved THEN 'failed'
                      ELSE 'done' END,
        finished_at = CASE WHEN remaining THEN NULL ELSE clock_timestamp() END,
        message = CASE
            WHEN remaining AND OLD.resource = 'lookup' THEN NULL  -- resolved: collecting now
            WHEN remaining THEN r.message
            WHEN unresolved AND OLD.last_error_class = 'not_found'
                THEN COALESCE(OLD.last_error_message, 'no such soldier')
            WHEN unresolved
                THEN format('gave up after %s attempt%s: %s', OLD.attempt_count,
                            CASE WHEN OLD.attempt_count = 1 THEN '' ELSE 's' END,
                            COALESCE(OLD.last_error_message, OLD.last_error_class, 'no answer'))
            ELSE bf4ps_request_finished_note(req) END,
        updated_at = clock_timestamp()
    WHERE r.request_id = OLD.request_id;
    RETURN NULL;
END;
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_request_job_gone() TO PUBLIC;

CREATE OR REPLACE FUNCTION public.bf4ps_request_planned(p_request uuid, p_resources text[], p_eta_at timestamp with time zone, p_done boolean, p_message text)
 RETURNS TABLE(status text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE interactive_requests r
    SET resources = ARRAY(SELECT x FROM unnest(COALESCE(p_resources, '{}')) AS x
                          WHERE x IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup')),
        eta_at = COALESCE(p_eta_at, r.eta_at),
        status = CASE WHEN p_done THEN 'done' ELSE r.status END,
        finished_at = CASE WHEN p_done THEN clock_timestamp() ELSE r.finished_at END,
        message = COALESCE(p_message, r.message), updated_at = clock_timestamp()
    WHERE r.request_id = p_request AND r.created_at = now() AND r.status = 'queued'
    RETURNING r.status::text;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_request_planned(uuid,text[],timestamp with time zone,boolean,text) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_restore_check()
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
GRANT EXECUTE ON FUNCTION bf4ps_restore_check() TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check() TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check() TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text)
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
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(bigint,timestamp with time zone,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_restore_check(p_request bigint, p_slot_at timestamp with time zone, p_receipt text, p_mark text)
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
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(bigint,timestamp with time zone,text,text) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_restore_check(bigint,timestamp with time zone,text,text) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_restore_hold()
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
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold() TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_restore_span()
 RETURNS double precision
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT greatest(1.0,
        (SELECT b.window_seconds FROM fleet_budget b WHERE b.requests IS NOT NULL),
        (SELECT max(greatest(e.window_seconds, e.min_interval_seconds)) FROM egress_gates e))
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_restore_vouch(p_reason text)
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
GRANT EXECUTE ON FUNCTION bf4ps_restore_vouch(text) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION public.bf4ps_settings_audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_settings_stamp()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    NEW.updated_by := left(session_user, 200);
    RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION public.bf4ps_soldier_intervals_checked(p_soldier_id bigint[], p_ended_at timestamp with time zone[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
BEGIN
    IF cardinality(p_soldier_id) > 10000
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_ended_at) THEN
        RAISE EXCEPTION 'at most 10000 intervals a call, each with its end'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE soldier_intervals i SET checked_at = clock_timestamp()
    FROM unnest(p_soldier_id, p_ended_at) AS t(soldier_id, ended_at)
    WHERE i.soldier_id = t.soldier_id AND i.ended_at = t.ended_at AND i.checked_at IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_intervals_checked(bigint[],timestamp with time zone[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_soldier_intervals_unchecked(p_limit integer)
 RETURNS SETOF soldier_intervals
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    RETURN QUERY
    SELECT * FROM soldier_intervals i WHERE i.checked_at IS NULL ORDER BY i.ended_at
    LIMIT LEAST(GREATEST(p_limit, 0), 10000)
    FOR UPDATE SKIP LOCKED;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_intervals_unchecked(integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION public.bf4ps_soldier_sighted(p_persona bigint, p_platform text, p_name text, p_source text, p_eligible_since timestamp with time zone, p_job bigint DEFAULT NULL::bigint, p_token uuid DEFAULT NULL::uuid)
 RETURNS TABLE(soldier_id bigint, inserted boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := clock_timestamp();
    confirmed boolean;
    sid bigint;
    ins boolean;
BEGIN
    IF p_source = 'manual' AND (bf4ps_caller_holds('bf4ps_web')
                                OR bf4ps_caller_holds('bf4ps_operator')) THEN
        confirmed := false;
    ELSIF p_source = 'battlelog' AND (bf4ps_caller_holds('bf4ps_operator') OR EXISTS (
            SELECT 1 FROM collection_jobs j
            WHERE j.job_id = p_job AND j.lease_token = p_token AND j.resource = 'lookup'
              AND j.lookup_platform = p_platform AND j.status IN ('claimed', 'running')
              AND j.lease_expires_at > t)) THEN
        confirmed := true;
    ELSE
        RAISE EXCEPTION 'a sighting of source % is the website''s (manual) or a look-up''s '
            'under its lease (battlelog)', p_source USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO soldiers AS s (persona_id, platform, current_name, first_seen_at)
    VALUES (p_persona, p_platform, p_name, t)
    ON CONFLICT (persona_id, platform) DO UPDATE
    SET current_name = CASE WHEN confirmed THEN excluded.current_name ELSE s.current_name END,
        updated_at = now()
    RETURNING s.soldier_id, (s.xmax = 0) INTO sid, ins;
    INSERT INTO soldier_names AS n (soldier_id, name, first_seen_at, last_seen_at)
    VALUES (sid, p_name, t, t)
    ON CONFLICT (soldier_id, name) DO UPDATE
    SET first_seen_at = LEAST(n.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(n.last_seen_at, excluded.last_seen_at);
    INSERT INTO soldier_sources AS src (soldier_id, source_type, first_seen_at, last_seen_at)
    VALUES (sid, p_source, t, t)
    ON CONFLICT (soldier_id, source_type) DO UPDATE
    SET first_seen_at = LEAST(src.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(src.last_seen_at, excluded.last_seen_at);
    -- every resource never attempted, eligible since the caller's instant within the last day
    INSERT INTO collection_state (soldier_id, resource, eligible_since)
    SELECT sid, r, LEAST(GREATEST(COALESCE(p_eligible_since, t), t - interval '1 day'), t)
    FROM unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r
    ON CONFLICT DO NOTHING;
    RETURN QUERY SELECT sid, ins;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_sighted(bigint,text,text,text,timestamp with time zone,bigint,uuid) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_sighted(bigint,text,text,text,timestamp with time zone,bigint,uuid) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_state_failed(p_job bigint, p_token uuid, p_park boolean, p_now timestamp with time zone, p_next_attempt_at timestamp with time zone, p_error_class text, p_error_message text)
 RETURNS TABLE(consecutive_failures integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := LEAST(p_now, clock_timestamp());
BEGIN
    RETURN QUERY
    UPDATE collection_state cs
    SET status = CASE WHEN p_park THEN 'unavailable' ELSE 'retry_wait' END,
        last_attempt_at = t,
        next_attempt_at = CASE WHEN p_park THEN NULL
            ELSE LEAST(GREATEST(p_next_attempt_at, t), clock_timestamp() + interval '7 days')
            END,
        consecutive_failures = cs.consecutive_failures + 1,
        attempts_total = cs.attempts_total + 1,
        last_error_class = p_error_class, last_error_message = left(p_error_message, 500),
        last_error_at = t, updated_at = t
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lease_token = p_token
      AND cs.soldier_id = j.soldier_id AND cs.resource = j.resource
    RETURNING cs.consecutive_failures::integer;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_state_failed(bigint,uuid,boolean,timestamp with time zone,timestamp with time zone,text,text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.bf4ps_state_init(p_soldier bigint, p_eligible_since timestamp with time zone)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    INSERT INTO collection_state (soldier_id, resource, eligible_since)
    SELECT p_soldier, r, LEAST(GREATEST(COALESCE(p_eligible_since, clock_timestamp()),
                                        clock_timestamp() - interval '1 day'), clock_timestamp())
    FROM unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r
    ON CONFLICT DO NOTHING
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_state_init(bigint,timestamp with time zone) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_state_init(bigint,timestamp with time zone) TO bf4ps_web;

CREATE OR REPLACE FUNCTION public.bf4ps_suspect_note(p_job bigint, p_token uuid, p_kind text, p_extend boolean, p_counters jsonb, p_clear boolean DEFAULT false)
 RETURNS TABLE(answers integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := clock_timestamp();
    sid bigint;
    res text;
    began timestamptz;
    old answer_suspects;
BEGIN
    SELECT j.soldier_id, j.resource, j.claimed_at INTO sid, res, began
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lease_token = p_token AND j.status IN ('claimed', 'running')
      AND j.lease_expires_at > t;
    IF NOT FOUND THEN
        SELECT e.soldier_id, e.resource, COALESCE(e.claimed_at, e.occurred_at)
        INTO sid, res, began
        FROM collection_events e
        WHERE e.job_id = p_job AND e.lease_token = p_token AND e.event_type = 'failed'
          AND e.error_class = 'implausible' AND e.occurred_at > t - interval '10 minutes'
        ORDER BY e.occurred_at DESC LIMIT 1;
        IF NOT FOUND OR p_clear THEN
            RETURN;  -- no such lease: nothing written
        END IF;
    END IF;
    IF sid IS NULL OR res NOT IN ('detailed', 'profile', 'weapons', 'vehicles') THEN
        RETURN;
    END IF;
    IF p_clear THEN
        DELETE FROM answer_suspects s WHERE s.soldier_id = sid AND s.resource = res;
        RETURN;
    END IF;
    SELECT * INTO old FROM answer_suspects s
    WHERE s.soldier_id = sid AND s.resource = res FOR UPDATE;
    RETURN QUERY
    INSERT INTO answer_suspects AS s (soldier_id, resource, kind, first_at, last_at, answers,
                                      counters)
    SELECT sid, res, p_kind, CASE WHEN ext THEN old.first_at ELSE t END, t,
           CASE WHEN ext THEN old.answers + 1 ELSE 1 END, p_counters
    FROM (SELECT COALESCE(p_extend AND old.kind = p_kind
                          AND old.last_at < COALESCE(began, t), false) AS ext) x
    ON CONFLICT (soldier_id, resource) DO UPDATE
    SET kind = excluded.kind, first_at = excluded.first_at, last_at = excluded.last_at,
        answers = excluded.answers, counters = excluded.counters
    RETURNING s.answers;
END
$function$;
GRANT EXECUTE ON FUNCTION bf4ps_suspect_note(bigint,uuid,text,boolean,jsonb,boolean) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.budget_allowed_classes(n integer, used jsonb, demand text[], policy jsonb, interactive_lane boolean)
 RETURNS text[]
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
DECLARE
    total double precision;
    cls text;
    others double precision;
    allowed text[] := '{}';
BEGIN
    SELECT COALESCE(sum(value::double precision), 0) INTO total FROM jsonb_each_text(used);
    IF total >= n THEN
        RETURN allowed;
    END IF;
    IF interactive_lane THEN
        RETURN ARRAY['interactive', 'active', 'recent', 'bootstrap', 'retry'];
    END IF;
    FOREACH cls IN ARRAY ARRAY['active', 'recent', 'bootstrap', 'retry'] LOOP
        -- the active cap holds the rest for the other classes only while one of them has
        -- runnable work: an unused share is lent, as every floor is
        CONTINUE WHEN cls = 'active' AND COALESCE((used ->> 'active')::double precision, 0)
                                         >= (policy ->> 'cap_active')::double precision * n
                      AND demand && ARRAY['interactive', 'recent', 'bootstrap', 'retry'];
        SELECT COALESCE(sum(GREATEST(0, (policy ->> ('floor_' || f))::double precision * n
                                        - COALESCE((used ->> f)::double precision, 0))), 0)
        INTO others
        FROM unnest(ARRAY['interactive', 'bootstrap', 'retry']) AS f
        WHERE f <> cls AND f = ANY(demand);
        IF n - total - 1 >= others - 1e-9 THEN
            allowed := allowed || cls;
        END IF;
    END LOOP;
    RETURN allowed;
END
$function$;
GRANT EXECUTE ON FUNCTION budget_allowed_classes(integer,jsonb,text[],jsonb,boolean) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.budget_nth_newest(k integer)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    m bigint;
    s bigint;
    newer bigint;  -- counted requests newer than the minute (then the second) found
    in_second bigint;
BEGIN
    IF k < 1 THEN
        RETURN NULL;
    END IF;
    SELECT c.starts_at, c.upto - c.n INTO m, newer
    FROM (SELECT p.starts_at, p.n, sum(p.n) OVER (ORDER BY p.starts_at DESC) AS upto
          FROM (SELECT b.starts_at, sum(b.n) AS n FROM budget_buckets b
                WHERE b.span = 60 GROUP BY b.starts_at) p) c
    WHERE c.upto >= k ORDER BY c.starts_at DESC LIMIT 1;
    IF m IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT c.starts_at, newer + c.upto - c.n INTO s, newer
    FROM (SELECT p.starts_at, p.n, sum(p.n) OVER (ORDER BY p.starts_at DESC) AS upto
          FROM (SELECT b.starts_at, sum(b.n) AS n FROM budget_buckets b
                WHERE b.span = 1 AND b.starts_at >= m AND b.starts_at < m + 60
                GROUP BY b.starts_at) p) c
    WHERE newer + c.upto >= k ORDER BY c.starts_at DESC LIMIT 1;
    in_second := k - newer;  -- the in_second-th newest of that second
    RETURN (SELECT l.slot_at FROM request_ledger l
            WHERE l.slot_at >= to_timestamp(s) AND l.slot_at < to_timestamp(s + 1)
              AND l.unsent_at IS NULL
            ORDER BY l.slot_at DESC OFFSET in_second - 1 LIMIT 1);
END
$function$;

CREATE OR REPLACE FUNCTION public.budget_shares()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
    SELECT jsonb_object_agg(d.share, LEAST(1, GREATEST(0, COALESCE(
               CASE WHEN jsonb_typeof(p.value) = 'number' THEN (p.value #>> '{}')::float8 END,
               d.fallback))))
    FROM (VALUES ('cap_active', 0.75), ('floor_interactive', 0.25),
                 ('floor_bootstrap', 0.20), ('floor_retry', 0.05)) AS d(share, fallback)
    LEFT JOIN scheduler_policy p ON p.key = 'budget_' || d.share
$function$;
GRANT EXECUTE ON FUNCTION budget_shares() TO PUBLIC;

CREATE OR REPLACE FUNCTION public.budget_window(slot timestamp with time zone, span double precision, OUT used jsonb, OUT total integer, OUT last_slot timestamp with time zone)
 RETURNS record
 LANGUAGE sql
 STABLE
AS $function$
    WITH edge AS (
        SELECT x.e, bf4ps_budget_second(x.e) + 1 AS s1,
               bf4ps_budget_minute(bf4ps_budget_second(x.e) + 60) AS m1
        FROM (SELECT slot - make_interval(secs => span)) x(e)
    ), counted AS (
        SELECT l.budget_class, count(*)::integer AS n
        FROM edge, request_ledger l
        WHERE l.slot_at > edge.e AND l.slot_at < to_timestamp(edge.s1) AND l.unsent_at IS NULL
        GROUP BY l.budget_class
        UNION ALL
        SELECT b.budget_class, b.n FROM edge, budget_buckets b
        WHERE b.span = 1 AND b.starts_at >= edge.s1 AND b.starts_at < edge.m1
        UNION ALL
        SELECT b.budget_class, b.n FROM edge, budget_buckets b
        WHERE b.span = 60 AND b.starts_at >= edge.m1
    ), by_class AS (
        SELECT c.budget_class, sum(c.n)::integer AS n FROM counted c
        GROUP BY c.budget_class HAVING sum(c.n) > 0
    )
    SELECT COALESCE((SELECT jsonb_object_agg(k.budget_class, k.n) FROM by_class k), '{}'),
           COALESCE((SELECT sum(k.n)::integer FROM by_class k), 0),
           (SELECT l.slot_at FROM request_ledger l  -- the newest counted: a step back the index
            WHERE l.slot_at > (SELECT edge.e FROM edge) AND l.unsent_at IS NULL
            ORDER BY l.slot_at DESC LIMIT 1)
$function$;
GRANT EXECUTE ON FUNCTION budget_window(timestamp with time zone,double precision) TO PUBLIC;

CREATE OR REPLACE FUNCTION public.queue_claim(p_collector uuid, p_lane text, p_lease double precision, p_soldier bigint DEFAULT NULL::bigint, p_classes text[] DEFAULT NULL::text[], p_start boolean DEFAULT false)
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
GRANT EXECUTE ON FUNCTION queue_claim(uuid,text,double precision,bigint,text[],boolean) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.queue_succeed(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_strict boolean DEFAULT false, p_next boolean DEFAULT false, p_lane text DEFAULT NULL::text, p_lease double precision DEFAULT NULL::double precision, p_soldier bigint DEFAULT NULL::bigint, p_start boolean DEFAULT false)
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
GRANT EXECUTE ON FUNCTION queue_succeed(bigint,uuid,uuid,double precision,integer,integer,jsonb,boolean,boolean,text,double precision,bigint,boolean) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION public.queue_succeed_counted(p_job bigint, p_collector uuid, p_token uuid, p_freshness double precision, p_http integer, p_duration integer, p_details jsonb, p_next boolean, p_lane text, p_lease double precision, p_soldier bigint, p_start boolean, p_gate jsonb, p_strict boolean)
 RETURNS SETOF queue_counted
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF p_next AND p_gate IS NOT NULL THEN
        RETURN QUERY SELECT * FROM admission_succeed(
            p_job, p_collector, p_token, p_freshness, p_http, p_duration, p_details, p_strict,
            p_lease, p_soldier, p_start, (p_gate ->> 'margin')::double precision,
            (p_gate ->> 'ahead')::double precision,
            (p_gate ->> 'connect_lead')::double precision);
    ELSE
        RETURN QUERY SELECT c::queue_claimed, NULL::timestamptz, NULL::bigint
                     FROM queue_succeed(p_job, p_collector, p_token, p_freshness, p_http,
                                        p_duration, p_details, p_strict, p_next, p_lane,
                                        p_lease, p_soldier, p_start) c;
    END IF;
END
$function$;
GRANT EXECUTE ON FUNCTION queue_succeed_counted(bigint,uuid,uuid,double precision,integer,integer,jsonb,boolean,text,double precision,bigint,boolean,jsonb,boolean) TO bf4ps_collector;

-- Sequences and the schema itself

GRANT USAGE ON SCHEMA public TO bf4ps_collector;
GRANT USAGE ON SCHEMA public TO bf4ps_operator;
GRANT USAGE ON SCHEMA public TO bf4ps_scheduler;
GRANT USAGE ON SCHEMA public TO bf4ps_web;
