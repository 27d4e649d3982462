-- 0012: the fleet's history and the capacity check.
--
-- fleet_history: one compact row per recording interval (the scheduler writes one a minute):
-- coverage per resource and status (copied from the counters), what finished and what was
-- sent in the interval (successes and failures per resource, physical requests per egress
-- with the egress's pacing limit for the interval), the backlog age per class and resource at
-- the moment, and the refresh lag (becoming due -> collected) over the trailing hour. The
-- console charts it; retention deletes rows past the policy's history horizon.
CREATE TABLE fleet_history (
    recorded_at timestamptz PRIMARY KEY DEFAULT clock_timestamp(),
    interval_seconds double precision NOT NULL CHECK (interval_seconds > 0),
    soldiers bigint NOT NULL CHECK (soldiers >= 0),
    coverage jsonb NOT NULL,          -- {resource: {status: n}}
    finished jsonb NOT NULL,          -- {resource: {"succeeded": n, "failed": n}}
    requests jsonb NOT NULL,          -- {egress: {"requests": n, "limit": n}}
    backlog_age jsonb NOT NULL,       -- {class: {resource: seconds}}
    refresh_lag jsonb NOT NULL,       -- {class: {resource: {"p50": s, "p95": s, "n": n}}}
    CHECK (pg_column_size(coverage) + pg_column_size(finished) + pg_column_size(requests)
           + pg_column_size(backlog_age) + pg_column_size(refresh_lag) <= 16384)
);

-- capacity_check: the scheduler's verdict at its start on whether the live policy fits the
-- live budget (one row, rewritten at each start); /metrics exposes it.
CREATE TABLE capacity_check (
    check_id smallint PRIMARY KEY DEFAULT 1 CHECK (check_id = 1),
    checked_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    feasible boolean NOT NULL,
    demand_per_hour double precision NOT NULL CHECK (demand_per_hour >= 0),
    capacity_per_hour double precision CHECK (capacity_per_hour >= 0),
    summary text NOT NULL CHECK (length(summary) <= 500)
);

-- The backlog-age probe of bootstrap/recent/active work reads ix_state_feed (its leading
-- columns are class, resource, eligible_since) and the active due sweep's ix_state_active_due;
-- the retry class needs its oldest due retry per resource without walking other resources'.
CREATE INDEX ix_state_retry_resource ON collection_state (resource, next_attempt_at)
    WHERE status = 'retry_wait';
