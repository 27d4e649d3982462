-- Forecast records and their backtest (db/schema.sql).

-- name: forecast_record_insert
INSERT INTO forecast_records (figures) VALUES (%(figures)s)
ON CONFLICT (recorded_at) DO NOTHING

-- name: forecast_records_since
SELECT recorded_at, figures FROM forecast_records
WHERE recorded_at >= %(since)s ORDER BY recorded_at

-- name: forecast_records_delete_batch
DELETE FROM forecast_records
WHERE recorded_at IN (SELECT recorded_at FROM forecast_records WHERE recorded_at < %(cutoff)s
                      LIMIT %(batch)s)

-- name: ledger_between
-- Physical requests counted per resource in (t0, t1] (the ledger's slot times).
SELECT resource, count(*) AS n FROM counted_requests
WHERE slot_at > %(t0)s AND slot_at <= %(t1)s
GROUP BY resource

-- name: history_between
SELECT recorded_at, coverage, backlog_age FROM fleet_history
WHERE recorded_at >= %(t0)s AND recorded_at <= %(t1)s ORDER BY recorded_at

-- name: backtest_set
INSERT INTO forecast_backtest (check_id, checked_at, since, records, errors)
VALUES (1, clock_timestamp(), %(since)s, %(records)s, %(errors)s)
ON CONFLICT (check_id) DO UPDATE
SET checked_at = excluded.checked_at, since = excluded.since, records = excluded.records,
    errors = excluded.errors

-- name: backtest_get
SELECT checked_at, since, records, errors FROM forecast_backtest
