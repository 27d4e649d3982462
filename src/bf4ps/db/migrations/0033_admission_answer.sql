-- The answer every admission mode returns (db/functions/admission.sql): admission_slot's
-- four modes become one function each, all of this row type. A type only: the functions
-- themselves are the code files'.
CREATE TYPE admission_answer AS (outcome text, slot timestamptz, wait_until timestamptz,
                                 ledger_id bigint, classes text[]);
