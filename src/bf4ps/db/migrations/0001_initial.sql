-- 0001: the whole BF4PS schema. Enumerations are text + CHECK (the values are bf4ps.domain's);
-- constraints make illegal states unrepresentable. Applied by bf4ps.db.migrate under an advisory
-- lock, in one transaction.

-- ---------------------------------------------------------------- identity and provenance
CREATE TABLE soldiers (
    soldier_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    persona_id bigint NOT NULL CHECK (persona_id > 0),
    platform text NOT NULL CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    current_name text NOT NULL CHECK (btrim(current_name) <> '' AND length(current_name) <= 64),
    battlelog_user_id bigint CHECK (battlelog_user_id > 0),
    first_seen_at timestamptz,
    last_seen_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_soldiers_persona_platform UNIQUE (persona_id, platform),
    CONSTRAINT soldiers_seen_order CHECK (first_seen_at <= last_seen_at)
);
CREATE INDEX ix_soldiers_name ON soldiers (lower(current_name) text_pattern_ops, platform);
CREATE INDEX ix_soldiers_last_seen ON soldiers (last_seen_at DESC) WHERE last_seen_at IS NOT NULL;
CREATE INDEX ix_soldiers_user ON soldiers (battlelog_user_id) WHERE battlelog_user_id IS NOT NULL;

CREATE TABLE soldier_names (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    name text NOT NULL CHECK (btrim(name) <> '' AND length(name) <= 64),
    first_seen_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    PRIMARY KEY (soldier_id, name),
    CONSTRAINT soldier_names_seen_order CHECK (first_seen_at <= last_seen_at)
);
CREATE INDEX ix_soldier_names_name ON soldier_names (lower(name) text_pattern_ops);

CREATE TABLE soldier_sources (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    source_type text NOT NULL CHECK (source_type IN ('bf4sw', 'manual')),
    first_seen_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    PRIMARY KEY (soldier_id, source_type),
    CONSTRAINT soldier_sources_seen_order CHECK (first_seen_at <= last_seen_at)
);

-- BF4SW intake cursors (alias-id cursor, last_seen watermark by the source's clock).
CREATE TABLE intake_state (
    source_name text PRIMARY KEY CHECK (btrim(source_name) <> ''),
    last_alias_id bigint NOT NULL DEFAULT 0 CHECK (last_alias_id >= 0),
    reconcile_watermark timestamptz,
    last_run_at timestamptz,
    last_success_at timestamptz,
    last_error text,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- ---------------------------------------------------------------- collector registry
CREATE TABLE collectors (
    collector_uuid uuid PRIMARY KEY,
    collector_name text NOT NULL CHECK (collector_name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    hostname text NOT NULL CHECK (btrim(hostname) <> '' AND length(hostname) <= 255),
    lane text NOT NULL CHECK (lane IN ('background', 'interactive')),
    egress_key text NOT NULL CHECK (btrim(egress_key) <> '' AND length(egress_key) <= 100),
    source_address inet,
    enabled boolean NOT NULL DEFAULT true,
    drained boolean NOT NULL DEFAULT false,
    drained_at timestamptz,
    drain_reason text CHECK (length(drain_reason) <= 200),
    registered_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    stopped_at timestamptz,
    last_heartbeat_at timestamptz,
    health text NOT NULL DEFAULT 'unknown'
        CHECK (health IN ('unknown', 'healthy', 'lost', 'stopped')),
    heartbeat_lost_at timestamptz,
    software_version text,
    pid integer,
    current_job_id bigint,
    retired_at timestamptz,
    replaced_by uuid REFERENCES collectors,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT collectors_lost_shape CHECK ((health = 'lost') = (heartbeat_lost_at IS NOT NULL)),
    CONSTRAINT collectors_drain_shape CHECK (drained = (drained_at IS NOT NULL)),
    CONSTRAINT collectors_retired_disabled CHECK (retired_at IS NULL OR NOT enabled)
);
CREATE UNIQUE INDEX uq_collectors_current_name ON collectors (lower(collector_name))
    WHERE retired_at IS NULL;
CREATE INDEX ix_collectors_egress ON collectors (egress_key) WHERE retired_at IS NULL;

-- ---------------------------------------------------------------- collection state (the backlog)
CREATE TABLE collection_state (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    resource text NOT NULL CHECK (resource IN ('detailed', 'profile', 'weapons', 'vehicles')),
    status text NOT NULL DEFAULT 'never_attempted'
        CHECK (status IN ('never_attempted', 'current', 'due', 'retry_wait', 'unavailable')),
    eligible_since timestamptz NOT NULL DEFAULT now(),
    -- The soldier's activity as the feeder classifies it (copied from soldiers.last_seen_at by
    -- intake, decayed by the scheduler's sweep) so each class has its own FIFO index.
    activity_class text NOT NULL DEFAULT 'bootstrap'
        CHECK (activity_class IN ('active', 'recent', 'bootstrap')),
    activity_at timestamptz,
    next_due_at timestamptz,
    next_attempt_at timestamptz,
    consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    attempts_total integer NOT NULL DEFAULT 0 CHECK (attempts_total >= 0),
    last_attempt_at timestamptz,
    last_success_at timestamptz,
    last_error_class text
        CHECK (last_error_class IN ('throttle', 'timeout', 'server', 'not_found', 'malformed',
                                    'internal')),
    last_error_message text CHECK (length(last_error_message) <= 500),
    last_error_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (soldier_id, resource),
    CONSTRAINT state_retry_shape CHECK (
        (status = 'retry_wait') = (next_attempt_at IS NOT NULL)
        AND (status <> 'retry_wait' OR consecutive_failures > 0)),
    CONSTRAINT state_current_shape CHECK (
        status NOT IN ('current', 'due') OR last_success_at IS NOT NULL),
    CONSTRAINT state_never_shape CHECK (
        status <> 'never_attempted' OR (last_attempt_at IS NULL AND last_success_at IS NULL)),
    CONSTRAINT state_error_shape CHECK (
        status NOT IN ('retry_wait', 'unavailable') OR last_error_class IS NOT NULL),
    CONSTRAINT state_error_pair CHECK ((last_error_class IS NULL) = (last_error_at IS NULL))
);
-- The feeder's candidate scans: per activity class and resource, FIFO by when the work became
-- eligible; retries by their due time; the due sweep over active soldiers only; the decay sweep
-- over rows whose activity crossed a window boundary.
CREATE INDEX ix_state_feed ON collection_state
    (activity_class, resource, eligible_since, soldier_id)
    WHERE status IN ('never_attempted', 'due');
CREATE INDEX ix_state_retry ON collection_state (next_attempt_at, resource)
    WHERE status = 'retry_wait';
CREATE INDEX ix_state_active_due ON collection_state (next_due_at)
    WHERE status = 'current' AND activity_class = 'active';
CREATE INDEX ix_state_activity ON collection_state (activity_class, activity_at)
    WHERE activity_class <> 'bootstrap';

-- Coverage counters kept by statement triggers, sharded to spread row locks: reading coverage
-- sums ≤ 5 × 4 × 16 rows instead of scanning collection_state.
CREATE TABLE coverage_counters (
    resource text NOT NULL,
    status text NOT NULL,
    shard smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
    n bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (resource, status, shard)
);

CREATE FUNCTION bf4ps_coverage_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO coverage_counters AS c (resource, status, shard, n)
        SELECT resource, status, (soldier_id % 16)::smallint, count(*)
          FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (resource, status, shard) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO coverage_counters AS c (resource, status, shard, n)
        SELECT resource, status, (soldier_id % 16)::smallint, -count(*)
          FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (resource, status, shard) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO coverage_counters AS c (resource, status, shard, n)
        SELECT resource, status, shard, sum(d) FROM (
            SELECT resource, status, (soldier_id % 16)::smallint AS shard, 1 AS d FROM new_rows
            UNION ALL
            SELECT resource, status, (soldier_id % 16)::smallint, -1 FROM old_rows
        ) AS delta GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (resource, status, shard) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER coverage_insert AFTER INSERT ON collection_state
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_coverage_apply();
CREATE TRIGGER coverage_update AFTER UPDATE ON collection_state
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_coverage_apply();
CREATE TRIGGER coverage_delete AFTER DELETE ON collection_state
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_coverage_apply();

-- ---------------------------------------------------------------- interactive requests
CREATE TABLE interactive_requests (
    request_id uuid PRIMARY KEY,
    soldier_id bigint REFERENCES soldiers ON DELETE CASCADE,
    lookup_name text CHECK (btrim(lookup_name) <> '' AND length(lookup_name) <= 64),
    platform text NOT NULL CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    status text NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'collecting', 'done', 'not_found', 'failed')),
    resources text[] NOT NULL DEFAULT '{}',
    client_key text NOT NULL CHECK (length(client_key) <= 100),
    eta_at timestamptz,
    first_request_at timestamptz,
    finished_at timestamptz,
    message text CHECK (length(message) <= 500),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT requests_target CHECK (soldier_id IS NOT NULL OR lookup_name IS NOT NULL)
);
CREATE INDEX ix_requests_client ON interactive_requests (client_key, created_at DESC);
CREATE INDEX ix_requests_open ON interactive_requests (created_at)
    WHERE status IN ('queued', 'collecting');

-- ---------------------------------------------------------------- live queue (actionable work)
CREATE TABLE collection_jobs (
    job_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    soldier_id bigint REFERENCES soldiers ON DELETE CASCADE,
    resource text NOT NULL
        CHECK (resource IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup')),
    lane text NOT NULL CHECK (lane IN ('background', 'interactive')),
    priority_class text NOT NULL
        CHECK (priority_class IN ('interactive', 'active', 'recent', 'bootstrap')),
    rank timestamptz NOT NULL,
    reason text NOT NULL CHECK (reason IN ('bf4sw_discovery', 'bootstrap', 'active_refresh',
                                           'retry', 'manual', 'lookup')),
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'claimed', 'running')),
    eligible_at timestamptz NOT NULL DEFAULT now(),
    attempt_count integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    request_id uuid REFERENCES interactive_requests ON DELETE SET NULL,
    lookup_name text CHECK (btrim(lookup_name) <> '' AND length(lookup_name) <= 64),
    lookup_platform text CHECK (lookup_platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    collector_uuid uuid REFERENCES collectors,
    lease_token uuid,
    claimed_at timestamptz,
    started_at timestamptz,
    lease_expires_at timestamptz,
    last_error_class text
        CHECK (last_error_class IN ('throttle', 'timeout', 'server', 'not_found', 'malformed',
                                    'internal')),
    last_error_message text CHECK (length(last_error_message) <= 500),
    last_error_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_jobs_soldier_resource UNIQUE (soldier_id, resource),
    CONSTRAINT jobs_lease_shape CHECK (
        (status = 'pending' AND collector_uuid IS NULL AND lease_token IS NULL
            AND claimed_at IS NULL AND started_at IS NULL AND lease_expires_at IS NULL)
        OR (status = 'claimed' AND collector_uuid IS NOT NULL AND lease_token IS NOT NULL
            AND claimed_at IS NOT NULL AND started_at IS NULL AND lease_expires_at IS NOT NULL)
        OR (status = 'running' AND collector_uuid IS NOT NULL AND lease_token IS NOT NULL
            AND claimed_at IS NOT NULL AND started_at IS NOT NULL
            AND lease_expires_at IS NOT NULL AND started_at >= claimed_at)),
    CONSTRAINT jobs_lane_class CHECK ((lane = 'interactive') = (priority_class = 'interactive')),
    CONSTRAINT jobs_lookup_shape CHECK (
        (resource = 'lookup') = (soldier_id IS NULL)
        AND (resource <> 'lookup' OR (lookup_name IS NOT NULL AND lookup_platform IS NOT NULL
                                      AND request_id IS NOT NULL AND lane = 'interactive'))),
    CONSTRAINT jobs_error_pair CHECK ((last_error_class IS NULL) = (last_error_at IS NULL))
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_vacuum_threshold = 200, autovacuum_vacuum_cost_delay = 0);
-- Claim order: per lane by rank (class offset + FIFO, see queue/ranking.py). Lease columns are
-- in no index, so heartbeats and renewals stay HOT updates.
CREATE INDEX ix_jobs_claim ON collection_jobs (lane, rank, job_id) WHERE status = 'pending';
CREATE INDEX ix_jobs_leased ON collection_jobs (lane) WHERE status IN ('claimed', 'running');
CREATE UNIQUE INDEX uq_jobs_lookup_request ON collection_jobs (request_id)
    WHERE resource = 'lookup';
CREATE INDEX ix_jobs_request ON collection_jobs (request_id) WHERE request_id IS NOT NULL;

ALTER TABLE collectors ADD CONSTRAINT fk_collectors_current_job
    FOREIGN KEY (current_job_id) REFERENCES collection_jobs ON DELETE SET NULL;

-- ---------------------------------------------------------------- append-only event log
CREATE TABLE collection_events (
    event_id bigint GENERATED ALWAYS AS IDENTITY,
    occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    event_type text NOT NULL CHECK (event_type ~ '^[a-z][a-z_]{1,40}$'),
    collector_uuid uuid,
    collector_name text,
    hostname text,
    egress_key text,
    lane text CHECK (lane IN ('background', 'interactive')),
    job_id bigint,
    lease_token uuid,
    soldier_id bigint,
    persona_id bigint,
    platform text CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    resource text CHECK (resource IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup')),
    priority_class text CHECK (priority_class IN ('interactive', 'active', 'recent', 'bootstrap')),
    attempt_number integer CHECK (attempt_number >= 0),
    result text CHECK (length(result) <= 40),
    duration_ms integer CHECK (duration_ms >= 0),
    wait_ms integer CHECK (wait_ms >= 0),
    http_status integer CHECK (http_status BETWEEN 100 AND 599),
    error_class text CHECK (error_class IN ('throttle', 'timeout', 'server', 'not_found',
                                            'malformed', 'internal')),
    error_message text CHECK (length(error_message) <= 500),
    details jsonb CHECK (pg_column_size(details) <= 4096),
    PRIMARY KEY (event_id, occurred_at)
) PARTITION BY RANGE (occurred_at);
CREATE TABLE collection_events_default PARTITION OF collection_events DEFAULT;
CREATE INDEX ix_events_time ON collection_events (occurred_at DESC);
CREATE INDEX ix_events_persona ON collection_events (persona_id, platform, resource, occurred_at DESC)
    WHERE persona_id IS NOT NULL;
CREATE INDEX ix_events_soldier ON collection_events (soldier_id, occurred_at DESC)
    WHERE soldier_id IS NOT NULL;
CREATE INDEX ix_events_collector ON collection_events (collector_uuid, occurred_at DESC)
    WHERE collector_uuid IS NOT NULL;
CREATE INDEX ix_events_type ON collection_events (event_type, occurred_at DESC);
CREATE INDEX ix_events_resource ON collection_events (resource, event_type, occurred_at DESC)
    WHERE resource IS NOT NULL;
CREATE INDEX ix_events_throttle ON collection_events (egress_key, occurred_at DESC)
    WHERE error_class = 'throttle' OR http_status IN (403, 429);
CREATE INDEX ix_events_job ON collection_events (job_id, occurred_at) WHERE job_id IS NOT NULL;

-- Monthly partitions; the scheduler keeps the next ones created and retention drops old ones.
CREATE FUNCTION bf4ps_ensure_event_partitions(from_month date, months integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    m date := date_trunc('month', from_month)::date;
    created integer := 0;
    part text;
BEGIN
    FOR i IN 0 .. months - 1 LOOP
        part := format('collection_events_%s', to_char(m + make_interval(months => i), 'YYYYMM'));
        IF to_regclass(part) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF collection_events FOR VALUES FROM (%L) TO (%L)',
                part, (m + make_interval(months => i))::timestamptz,
                (m + make_interval(months => i + 1))::timestamptz);
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;

-- ---------------------------------------------------------------- rate gates and fleet budget
CREATE TABLE egress_gates (
    egress_key text PRIMARY KEY CHECK (btrim(egress_key) <> ''),
    min_interval_seconds double precision NOT NULL CHECK (min_interval_seconds > 0),
    window_requests integer CHECK (window_requests > 0),
    window_seconds double precision CHECK (window_seconds > 0),
    next_slot_at timestamptz NOT NULL DEFAULT '2000-01-01 00:00:00+00',
    cooldown_until timestamptz,
    throttle_streak integer NOT NULL DEFAULT 0 CHECK (throttle_streak >= 0),
    last_throttle_at timestamptz,
    requests_total bigint NOT NULL DEFAULT 0 CHECK (requests_total >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gates_window_pair CHECK ((window_requests IS NULL) = (window_seconds IS NULL))
);

CREATE TABLE fleet_budget (
    budget_id smallint PRIMARY KEY DEFAULT 1 CHECK (budget_id = 1),
    requests integer CHECK (requests > 0),
    window_seconds double precision NOT NULL DEFAULT 3600 CHECK (window_seconds > 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO fleet_budget (budget_id) VALUES (1);

-- Every physical Battlelog request, written and committed BEFORE it is sent (slot_at is the
-- earliest send time). Never deleted by a failure: an ambiguous outcome still counts.
CREATE TABLE request_ledger (
    request_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slot_at timestamptz NOT NULL,
    counted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    egress_key text NOT NULL,
    budget_class text NOT NULL
        CHECK (budget_class IN ('interactive', 'active', 'recent', 'bootstrap', 'retry')),
    collector_uuid uuid,
    job_id bigint,
    resource text
);
CREATE INDEX ix_ledger_slot ON request_ledger (slot_at);
CREATE INDEX ix_ledger_egress ON request_ledger (egress_key, slot_at);

-- ---------------------------------------------------------------- run-time policy
CREATE TABLE scheduler_policy (
    key text PRIMARY KEY CHECK (key ~ '^[a-z][a-z0-9_.]{1,80}$'),
    value jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text
);

-- ---------------------------------------------------------------- statistics
CREATE TABLE detailed_stats_current (
    soldier_id bigint PRIMARY KEY REFERENCES soldiers ON DELETE CASCADE,
    fetched_at timestamptz NOT NULL,
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
    chain_link_score bigint
);

-- One row per collection whose values differ from the previous snapshot.
CREATE TABLE detailed_stats_history (
    LIKE detailed_stats_current INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (soldier_id, fetched_at),
    FOREIGN KEY (soldier_id) REFERENCES soldiers ON DELETE CASCADE
);

CREATE TABLE profile_current (
    soldier_id bigint PRIMARY KEY REFERENCES soldiers ON DELETE CASCADE,
    fetched_at timestamptz NOT NULL,
    battlelog_user_id bigint,
    clan_tag text CHECK (length(clan_tag) <= 16),
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
    top_weapons jsonb NOT NULL DEFAULT '[]',
    top_vehicles jsonb NOT NULL DEFAULT '[]',
    progress jsonb NOT NULL DEFAULT '[]',
    linked_soldiers jsonb NOT NULL DEFAULT '[]'
);

CREATE TABLE weapon_catalog (
    weapon_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guid text NOT NULL UNIQUE CHECK (btrim(guid) <> '' AND length(guid) <= 64),
    name text NOT NULL,
    slug text,
    category text,
    code text,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE vehicle_catalog (
    vehicle_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guid text NOT NULL UNIQUE CHECK (btrim(guid) <> '' AND length(guid) <= 64),
    name text NOT NULL,
    slug text,
    category text,
    code text,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE soldier_weapon_stats (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    weapon_id integer NOT NULL REFERENCES weapon_catalog,
    fetched_at timestamptz NOT NULL,
    kills bigint,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    accuracy_fraction double precision,
    time_equipped_seconds bigint,
    service_stars bigint,
    service_stars_progress double precision,
    PRIMARY KEY (soldier_id, weapon_id)
);

-- Compact history: a row only for items whose counters changed since the previous collection.
CREATE TABLE soldier_weapon_history (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    weapon_id integer NOT NULL REFERENCES weapon_catalog,
    fetched_at timestamptz NOT NULL,
    kills bigint,
    headshots bigint,
    shots_fired bigint,
    shots_hit bigint,
    time_equipped_seconds bigint,
    PRIMARY KEY (soldier_id, weapon_id, fetched_at)
);

CREATE TABLE soldier_vehicle_stats (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    vehicle_id integer NOT NULL REFERENCES vehicle_catalog,
    fetched_at timestamptz NOT NULL,
    kills bigint,
    time_in_seconds bigint,
    destroy_x_in_y bigint,
    service_stars bigint,
    service_stars_progress double precision,
    PRIMARY KEY (soldier_id, vehicle_id)
);

CREATE TABLE soldier_vehicle_history (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    vehicle_id integer NOT NULL REFERENCES vehicle_catalog,
    fetched_at timestamptz NOT NULL,
    kills bigint,
    time_in_seconds bigint,
    destroy_x_in_y bigint,
    PRIMARY KEY (soldier_id, vehicle_id, fetched_at)
);
