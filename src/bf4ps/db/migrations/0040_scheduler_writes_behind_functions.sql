-- Issue 44 (a role API that trusts no caller): the scheduler's checks after storage read the
-- unchecked intervals and mark them checked through functions (db/functions/progress.sql
-- bf4ps_soldier_intervals_unchecked, bf4ps_item_intervals_unchecked,
-- bf4ps_soldier_intervals_checked, bf4ps_item_intervals_checked: at most 10,000 a call, the
-- mark the database's clock and only on an unchecked interval), so its role no longer updates
-- or deletes intervals (no build ever deleted them).
--
-- An older build's scheduler running through the upgrade gets a permission error on its checks
-- until it is restarted on this build.
REVOKE UPDATE, DELETE ON soldier_intervals, item_intervals FROM bf4ps_scheduler;

-- The BF4SW intake's batches write soldiers, their names and bf4sw sources and the new
-- soldiers' collection state through functions (db/functions/feeder.sql bf4ps_intake_soldiers,
-- bf4ps_intake_names, bf4ps_intake_sources: at most 10,000 soldiers a batch, no sighting ahead
-- of the database's clock, the source always bf4sw, an eligibility never ahead of it), so its
-- role no longer writes those tables nor inserts collection state.
REVOKE INSERT, UPDATE ON soldiers, soldier_names, soldier_sources FROM bf4ps_scheduler;
REVOKE INSERT ON collection_state FROM bf4ps_scheduler;
