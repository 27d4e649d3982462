-- The database's code files as last applied (db/functions/ROOM.sql, bf4ps.db.code): `bf4ps db
-- upgrade` re-applies a file whose checksum differs from the one recorded here. Readable by
-- every role, as the migrations' own record is (`bf4ps db status` runs as the operator).
CREATE TABLE schema_code (
    file text PRIMARY KEY,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT ON schema_code TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;

-- The answer every admission mode returns (db/functions/admission.sql): admission_slot's
-- four modes become one function each, all of this row type. A type only: the functions
-- themselves are the code files'.
CREATE TYPE admission_answer AS (outcome text, slot timestamptz, wait_until timestamptz,
                                 ledger_id bigint, classes text[]);
