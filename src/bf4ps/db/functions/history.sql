-- The scheduler's records for the console and the forecast: the fleet's history
-- (`fleet_history`), the forecast's records (`forecast_records`), the capacity check and the
-- forecast's backtest (one row each). Each written through a function: a record's instant is
-- the database's clock (never one the caller names), its figures within their bounds, and
-- retention never removes a record younger than the policy's `history_retention_days`,
-- whatever cut-off is passed, at most 10,000 rows a call. Calls the access room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

-- The cut-off retention may delete before: the caller's, never inside the policy's days.
CREATE OR REPLACE FUNCTION bf4ps_history_cutoff(p_cutoff timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$
    SELECT LEAST(p_cutoff, clock_timestamp() - make_interval(
        secs => 86400 * GREATEST(bf4ps_policy_number('history_retention_days', 180), 1)))
$function$;
REVOKE ALL ON FUNCTION bf4ps_history_cutoff(p_cutoff timestamp with time zone) FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_history_record(p_interval double precision, p_soldiers bigint, p_coverage jsonb, p_finished jsonb, p_requests jsonb, p_backlog_age jsonb, p_refresh_lag jsonb)
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
REVOKE ALL ON FUNCTION bf4ps_history_record(p_interval double precision, p_soldiers bigint, p_coverage jsonb, p_finished jsonb, p_requests jsonb, p_backlog_age jsonb, p_refresh_lag jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_history_record(p_interval double precision, p_soldiers bigint, p_coverage jsonb, p_finished jsonb, p_requests jsonb, p_backlog_age jsonb, p_refresh_lag jsonb) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_history_prune(p_cutoff timestamp with time zone, p_batch integer)
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
REVOKE ALL ON FUNCTION bf4ps_history_prune(p_cutoff timestamp with time zone, p_batch integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_history_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_history_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_forecast_record(p_figures jsonb)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    INSERT INTO forecast_records (recorded_at, figures) VALUES (clock_timestamp(), p_figures)
    ON CONFLICT (recorded_at) DO NOTHING
$function$;
REVOKE ALL ON FUNCTION bf4ps_forecast_record(p_figures jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_record(p_figures jsonb) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_record(p_figures jsonb) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_forecast_prune(p_cutoff timestamp with time zone, p_batch integer)
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
REVOKE ALL ON FUNCTION bf4ps_forecast_prune(p_cutoff timestamp with time zone, p_batch integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_forecast_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_operator;

-- The capacity check's one row (/metrics: bf4ps_policy_feasible), checked now.
CREATE OR REPLACE FUNCTION bf4ps_capacity_check_set(p_feasible boolean, p_demand_per_hour double precision, p_capacity_per_hour double precision, p_summary text)
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
REVOKE ALL ON FUNCTION bf4ps_capacity_check_set(p_feasible boolean, p_demand_per_hour double precision, p_capacity_per_hour double precision, p_summary text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_capacity_check_set(p_feasible boolean, p_demand_per_hour double precision, p_capacity_per_hour double precision, p_summary text) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_capacity_check_set(p_feasible boolean, p_demand_per_hour double precision, p_capacity_per_hour double precision, p_summary text) TO bf4ps_operator;

-- The forecast backtest's one row: since never ahead of the database's clock.
CREATE OR REPLACE FUNCTION bf4ps_backtest_set(p_since timestamp with time zone, p_records integer, p_errors jsonb)
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
REVOKE ALL ON FUNCTION bf4ps_backtest_set(p_since timestamp with time zone, p_records integer, p_errors jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_backtest_set(p_since timestamp with time zone, p_records integer, p_errors jsonb) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_backtest_set(p_since timestamp with time zone, p_records integer, p_errors jsonb) TO bf4ps_operator;
