-- The fleet budget's running count writes no WAL.
--
-- `budget_buckets` (0036) is the ledger's counted requests summed per second and minute: a copy
-- of what request_ledger already holds durably, rebuilt from it whenever the two may disagree.
-- Logged, it cost every counted request two heap records (about 148 bytes of WAL, 6 % of the
-- queue's own WAL a cycle) to protect numbers the ledger can give again. Unlogged, crash
-- recovery (and a standby's promotion, and a base backup's restore) leaves the table empty; the
-- ready row beside it, unlogged too, goes with it, and the first admission or ledger write after
-- that rebuilds the buckets from the ledger before it reads or changes them
-- (db/functions/budget.sql: bf4ps_budget_ready). A clean shutdown keeps both.
ALTER TABLE budget_buckets SET UNLOGGED;

-- one row while the buckets equal the ledger; none after a crash (or on a new replica)
CREATE UNLOGGED TABLE budget_buckets_ready (
    ready boolean PRIMARY KEY DEFAULT true CHECK (ready),
    built_at timestamp with time zone NOT NULL DEFAULT now()
);
GRANT SELECT ON TABLE budget_buckets_ready TO bf4ps_operator;
