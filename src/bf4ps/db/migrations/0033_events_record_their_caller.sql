-- Issue 44 (a role API that trusts no caller): every event names the login that wrote it.
--
-- `recorded_by` is the session_user of the statement that inserted the event, whichever
-- function wrote it (a SECURITY DEFINER function runs as its owner, but session_user stays the
-- caller's login): a collector marking another lost, a website draining, a scheduler reaping,
-- all named. Existing events keep NULL (who wrote them was never recorded).
ALTER TABLE collection_events ADD COLUMN recorded_by text;
ALTER TABLE collection_events ALTER COLUMN recorded_by SET DEFAULT session_user;

-- the runtime roles read the event log by column (their grants name each column they see)
GRANT SELECT (recorded_by) ON collection_events TO bf4ps_collector, bf4ps_scheduler, bf4ps_web;

