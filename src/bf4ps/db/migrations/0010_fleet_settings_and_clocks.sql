-- Fleet settings have one source of truth, the database: egress pacing (egress_gates), the
-- fleet budget (fleet_budget) and its class shares (scheduler_policy) are changed by operator
-- commands (`bf4ps gate set`, `bf4ps budget set|remove`); a collector's environment only seeds
-- a value that was never configured. Every change is kept in fleet_settings_changes, which no
-- retention prunes (the event log's partitions are dropped after the retention horizon; the
-- history of who set the fleet's limits is kept for as long as the fleet runs).
ALTER TABLE egress_gates ADD COLUMN updated_by text CHECK (length(updated_by) <= 200);

-- configured_at NULL: never configured (a collector may seed it). A removed budget (requests
-- NULL) keeps its configured_at, so no collector's environment brings it back.
ALTER TABLE fleet_budget
    ADD COLUMN configured_at timestamptz,
    ADD COLUMN updated_by text CHECK (length(updated_by) <= 200);
UPDATE fleet_budget SET configured_at = updated_at WHERE requests IS NOT NULL;

CREATE TABLE fleet_settings_changes (
    change_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    setting text NOT NULL CHECK (setting IN ('gate', 'budget', 'shares')),
    subject text NOT NULL CHECK (btrim(subject) <> '' AND length(subject) <= 100),
    old_value jsonb,
    new_value jsonb,
    changed_by text NOT NULL CHECK (btrim(changed_by) <> '' AND length(changed_by) <= 200),
    reason text CHECK (length(reason) <= 200)
);
CREATE INDEX ix_settings_changes_subject ON fleet_settings_changes (setting, subject, changed_at DESC);

-- Each collector's clock against the database's (clock_timestamp()): the offset of its best
-- (minimum round trip) sample, offset = db_time - (t_send + t_recv) / 2, its round trip, when it
-- was measured, and since when it has been beyond the collector's bound (NULL: within; such a
-- collector takes no send slots).
ALTER TABLE collectors
    ADD COLUMN clock_offset_seconds double precision,
    ADD COLUMN clock_rtt_seconds double precision CHECK (clock_rtt_seconds >= 0),
    ADD COLUMN clock_checked_at timestamptz,
    ADD COLUMN clock_skewed_since timestamptz;
