-- 0020: the forecasts the scheduler recorded, and the last backtest of them.
--
-- forecast_records: one row per recording (the scheduler writes one an hour): what the model
-- predicted at that moment — requests per hour per resource, when each resource's attempted
-- share would pass 10/25/50/90 %, the steady-state backlog age per class — and the attempted
-- shares it started from. `bf4ps forecast --backtest` compares them with the request ledger
-- and the fleet history since. Retention deletes rows past the policy's history horizon.
CREATE TABLE forecast_records (
    recorded_at timestamptz PRIMARY KEY DEFAULT clock_timestamp(),
    figures jsonb NOT NULL,
    CHECK (pg_column_size(figures) <= 16384)
);

-- forecast_backtest: the last backtest (one row, rewritten by each): its error per figure
-- ({figure: {"error": mean signed relative error, "abs": mean absolute, "n": comparisons}});
-- /metrics and the console show it.
CREATE TABLE forecast_backtest (
    check_id smallint PRIMARY KEY DEFAULT 1 CHECK (check_id = 1),
    checked_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    since timestamptz NOT NULL,
    records integer NOT NULL CHECK (records >= 0),
    errors jsonb NOT NULL,
    CHECK (pg_column_size(errors) <= 16384)
);

-- every role reads them (the console, /metrics, `bf4ps forecast --backtest`); the scheduler
-- records, prunes and backtests, and so may an operator by hand
GRANT SELECT ON forecast_records, forecast_backtest
    TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;
GRANT INSERT, DELETE ON forecast_records TO bf4ps_scheduler, bf4ps_operator;
GRANT INSERT, UPDATE ON forecast_backtest TO bf4ps_scheduler, bf4ps_operator;
