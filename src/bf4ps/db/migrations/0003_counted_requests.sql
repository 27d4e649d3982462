-- The requests that count against the rate gates and the fleet budget: every ledger row except
-- those whose collector gave the slot up before writing a byte (0002, 3). Every reader of the
-- budget, the gates' status and the ETA's measured rate reads this view, so the rule is stated
-- once; request_ledger itself keeps every row for the audit and for retention.
CREATE VIEW counted_requests AS
    SELECT request_id, slot_at, counted_at, egress_key, budget_class, collector_uuid, job_id,
           resource
    FROM request_ledger
    WHERE unsent_at IS NULL;
