-- Issue 44 (a role API that trusts no caller): the website's table writes, the collector's
-- writes of soldiers, names, sources and new collection-state rows, and the scheduler's records
-- (fleet history, forecast records, the capacity check, the backtest, the intake's cursors)
-- move behind functions (db/functions/soldiers.sql bf4ps_soldier_sighted, state.sql
-- bf4ps_state_init, requests.sql bf4ps_request_insert and bf4ps_request_planned, history.sql,
-- feeder.sql bf4ps_intake_mark). The coverage counters are written only by
-- the scheduler's owner-run fold and the deltas only by triggers on collection_state, so no role
-- that no longer writes collection_state needs either.
--
-- An older build's website, scheduler (or a collector's look-up) running through the upgrade
-- gets a permission error on those writes until it is restarted on this build.
REVOKE INSERT, UPDATE ON collection_state, coverage_counters, interactive_requests,
    soldier_names, soldier_sources, soldiers FROM bf4ps_web;
REVOKE INSERT ON coverage_deltas FROM bf4ps_web;
REVOKE INSERT ON collection_state, coverage_deltas, soldiers FROM bf4ps_collector;
REVOKE INSERT, UPDATE ON coverage_counters, soldier_names, soldier_sources FROM bf4ps_collector;
REVOKE INSERT, UPDATE ON coverage_counters FROM bf4ps_scheduler;
REVOKE DELETE ON coverage_deltas FROM bf4ps_scheduler;
REVOKE INSERT, UPDATE ON capacity_check, forecast_backtest, intake_state FROM bf4ps_scheduler;
REVOKE INSERT, DELETE ON fleet_history, forecast_records FROM bf4ps_scheduler;
-- Recon is an operator's command (its ladder sets the egress's pacing, which only an operator
-- may): the collector's role never needed its rows.
REVOKE INSERT, UPDATE ON recon_runs, recon_samples FROM bf4ps_collector;
-- A run of suspect answers only through bf4ps_suspect_note (db/functions/stats.sql: fenced by
-- the lease, one answer a lease), so no collector confirms a stats reset on its own.
REVOKE INSERT, UPDATE, DELETE ON answer_suspects FROM bf4ps_collector;
-- Progress flags are raised only through bf4ps_progress_flag_raise (db/functions/progress.sql:
-- an unchecked interval that exists).
REVOKE INSERT ON progress_flags FROM bf4ps_scheduler;
-- A request follows its jobs through triggers on collection_jobs, which only owner-run functions
-- write: the scheduler's role never writes a request itself.
REVOKE INSERT, UPDATE ON interactive_requests FROM bf4ps_scheduler;
