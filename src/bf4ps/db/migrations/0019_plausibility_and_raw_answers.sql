-- 0019: answers that must not be taken for truths, and the raw answers kept for a while.
--
-- 1. A new failure class, 'implausible': a well-formed answer whose lifetime counters are lower
--    than the ones stored (a career "erased" to zeros, counters going down). Retried with
--    backoff, never stored as current, never parked (stats/plausible.py).
-- 2. answer_suspects: per soldier + resource, the run of implausible answers that agree with
--    each other (a genuine Battlelog stats reset is believed only after enough of them over
--    enough time), or the flag of a first answer that was all zeros (stored, but unconfirmed
--    until a second answer agrees).
-- 3. raw_answers: the last few raw bodies per soldier + resource, zlib-compressed, for
--    `bf4ps battlelog show` and `bf4ps battlelog replay` (stats/archive.py); bounded by count
--    (pruned on insert) and by age (the scheduler's upkeep).

ALTER DOMAIN bf4ps_error_class DROP CONSTRAINT bf4ps_error_class_check;
ALTER DOMAIN bf4ps_error_class ADD CONSTRAINT bf4ps_error_class_check
    CHECK (VALUE IN ('throttle', 'timeout', 'server', 'not_found', 'malformed', 'internal',
                     'unrecognized', 'implausible'));

CREATE TABLE answer_suspects (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    resource text NOT NULL CHECK (resource IN ('detailed', 'profile', 'weapons', 'vehicles')),
    kind text NOT NULL CHECK (kind IN ('lower', 'unconfirmed_zero')),
    first_at timestamptz NOT NULL,
    last_at timestamptz NOT NULL,
    answers integer NOT NULL CHECK (answers >= 1),
    counters jsonb NOT NULL,
    PRIMARY KEY (soldier_id, resource),
    CHECK (last_at >= first_at)
);

CREATE TABLE raw_answers (
    answer_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    resource text NOT NULL CHECK (resource IN ('detailed', 'profile', 'weapons', 'vehicles')),
    received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    http_status integer CHECK (http_status BETWEEN 100 AND 599),
    outcome text NOT NULL CHECK (outcome ~ '^[a-z][a-z_:]{1,80}$'),
    body_bytes integer NOT NULL CHECK (body_bytes >= 0),
    body bytea NOT NULL
);
CREATE INDEX ix_raw_answers_soldier ON raw_answers (soldier_id, resource, answer_id DESC);
CREATE INDEX ix_raw_answers_time ON raw_answers (received_at);

GRANT INSERT, UPDATE, DELETE ON answer_suspects TO bf4ps_collector;
GRANT INSERT, DELETE ON raw_answers TO bf4ps_collector;
GRANT DELETE ON raw_answers TO bf4ps_scheduler;
GRANT SELECT ON answer_suspects, raw_answers
    TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;
