-- Forecast records and their backtest (db/schema.sql).

-- name: forecast_record_insert
SELECT bf4ps_forecast_record(%(figures)s)

-- name: forecast_records_since
SELECT recorded_at, figures FROM forecast_records
WHERE recorded_at >= %(since)s ORDER BY recorded_at

-- name: forecast_records_delete_batch
-- Never a record younger than history_retention_days (db/functions/history.sql).
SELECT * FROM bf4ps_forecast_prune(%(cutoff)s::timestamptz, %(batch)s::integer)

-- name: ledger_between
-- Physical requests counted per resource in (t0, t1] (the ledger's slot times).
SELECT resource, count(*) AS n FROM counted_requests
WHERE slot_at > %(t0)s AND slot_at <= %(t1)s
GROUP BY resource

-- name: history_between
SELECT recorded_at, coverage, backlog_age FROM fleet_history
WHERE recorded_at >= %(t0)s AND recorded_at <= %(t1)s ORDER BY recorded_at

-- name: backtest_set
SELECT bf4ps_backtest_set(%(since)s, %(records)s, %(errors)s)

-- name: backtest_get
SELECT checked_at, since, records, errors FROM forecast_backtest
