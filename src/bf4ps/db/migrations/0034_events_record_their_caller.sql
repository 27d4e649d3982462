-- Issue 44 (a role API that trusts no caller): every event names the login that wrote it, and
-- the runtime roles lose the table writes that moved behind functions (below).
--
-- `recorded_by` is the session_user of the statement that inserted the event, whichever
-- function wrote it (a SECURITY DEFINER function runs as its owner, but session_user stays the
-- caller's login): a collector marking another lost, a website draining, a scheduler reaping,
-- all named. Existing events keep NULL (who wrote them was never recorded).
ALTER TABLE collection_events ADD COLUMN recorded_by text;
ALTER TABLE collection_events ALTER COLUMN recorded_by SET DEFAULT session_user;

-- the runtime roles read the event log by column (their grants name each column they see)
GRANT SELECT (recorded_by) ON collection_events TO bf4ps_collector, bf4ps_scheduler, bf4ps_web;

-- The gains boards and a flag's clear move behind functions (db/functions/progress.sql): the
-- website drains and resumes, it no longer clears flags by a direct UPDATE nor deletes boards,
-- and the scheduler rebuilds the boards only through bf4ps_gains_boards_refresh.
REVOKE INSERT, DELETE ON gains_boards, gains_board_items FROM bf4ps_web, bf4ps_scheduler;
REVOKE UPDATE ON progress_flags FROM bf4ps_web;

-- The circuit's rows move behind functions (db/functions/circuit.sql: open, probes due, a
-- probe's success, close), their probe interval and closing count the policy's: a collector
-- no longer opens a circuit for ten years by a direct INSERT.
REVOKE INSERT, UPDATE ON circuit_breakers FROM bf4ps_collector;

-- The raw answers archive behind functions (db/functions/stats.sql): a collector adds an answer
-- and drops only that soldier and resource's answers beyond the policy's count; retention
-- never deletes an answer younger than archive_retention_days.
REVOKE INSERT, DELETE ON raw_answers FROM bf4ps_collector;
REVOKE DELETE ON raw_answers FROM bf4ps_scheduler;

-- A failed attempt's collection state behind a function fenced by the job's lease
-- (db/functions/state.sql): a collector no longer parks or delays a soldier it holds no lease
-- on. It keeps INSERT (a soldier it resolves gets its rows; ON CONFLICT DO NOTHING).
REVOKE UPDATE ON collection_state FROM bf4ps_collector;

-- A look-up's answer reaches its player's request through bf4ps_lookup_request_resolved,
-- under the look-up job's lease (db/functions/requests.sql): a collector no longer rewrites
-- players' requests (their status, message, ETA) directly.
REVOKE UPDATE ON interactive_requests FROM bf4ps_collector;
