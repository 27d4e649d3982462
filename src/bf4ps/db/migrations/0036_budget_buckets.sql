-- Issue 47 (scale on one primary), item 1: the fleet budget's window count as running buckets.
--
-- Admission read every counted request in the budget's window (an hour: 200,000 ledger rows at
-- 20 egresses) to count it. `budget_buckets` keeps the same count per budget class in buckets of
-- one second (span 1) and of one minute (span 60), keyed by the start's Unix second; triggers on
-- request_ledger (db/functions/budget.sql) write them in the same statement as the ledger row,
-- its unsent marking and its pruning, so they always equal the ledger's counted requests. The
-- window's count is then at most 60 minute buckets, 59 second buckets and the part-second at the
-- window's edge read from the ledger (budget_window): the same cost for an empty window and a
-- full hour. The code file fills the table from the ledger when it is applied, and again
-- whenever the restore guard sees a new server run or a restore.
--
-- Every ledger row updates two bucket rows (its second's and its minute's); `n` is the only
-- column that changes and no index covers it, so with room left on each page (fillfactor) the
-- updates are heap-only (HOT) and write no index entries.
CREATE TABLE budget_buckets (
    span smallint NOT NULL CHECK (span IN (1, 60)),
    starts_at bigint NOT NULL,  -- Unix seconds, a multiple of span
    budget_class text NOT NULL,
    n integer NOT NULL CHECK (n >= 0),  -- a bucket that empties is deleted (never negative)
    CONSTRAINT budget_buckets_pkey PRIMARY KEY (span, starts_at, budget_class),
    CONSTRAINT budget_buckets_aligned CHECK (starts_at % span = 0)
) WITH (fillfactor = 50);
GRANT SELECT ON TABLE budget_buckets TO bf4ps_collector;
GRANT SELECT ON TABLE budget_buckets TO bf4ps_operator;
GRANT SELECT ON TABLE budget_buckets TO bf4ps_scheduler;
GRANT SELECT ON TABLE budget_buckets TO bf4ps_web;
