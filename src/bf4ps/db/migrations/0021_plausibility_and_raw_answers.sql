-- 0021: answers that must not be taken for truths, and the raw answers kept for a while.
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

-- 4. An outage answer cools its egress (its Retry-After, or the outage cool-down): through a
--    function, as a throttle's cool-down (a collector may not write gates). It only ever
--    lengthens the cool-down, by at most an hour, and never touches the pacing; the audit
--    triggers leave it out as they leave out a throttle's (last_outage_at marks it).
ALTER TABLE egress_gates ADD COLUMN last_outage_at timestamptz;

CREATE FUNCTION bf4ps_gate_cool(p_egress text, p_seconds double precision)
RETURNS TABLE (cooldown_until timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE egress_gates g
    SET cooldown_until = GREATEST(COALESCE(g.cooldown_until, '-infinity'), clock_timestamp()
            + make_interval(secs => LEAST(GREATEST(p_seconds, 0), 3600))),
        last_outage_at = clock_timestamp(), updated_at = now()
    WHERE g.egress_key = p_egress
    RETURNING g.cooldown_until;
END
$$;
REVOKE EXECUTE ON FUNCTION bf4ps_gate_cool(text, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gate_cool(text, double precision)
    TO bf4ps_collector, bf4ps_operator;

DROP TRIGGER settings_stamp_change ON egress_gates;
CREATE TRIGGER settings_stamp_change BEFORE UPDATE ON egress_gates
    FOR EACH ROW WHEN (OLD.min_interval_seconds IS DISTINCT FROM NEW.min_interval_seconds
                       OR OLD.window_requests IS DISTINCT FROM NEW.window_requests
                       OR OLD.window_seconds IS DISTINCT FROM NEW.window_seconds
                       OR (OLD.cooldown_until IS DISTINCT FROM NEW.cooldown_until
                           AND OLD.last_throttle_at IS NOT DISTINCT FROM NEW.last_throttle_at
                           AND OLD.last_outage_at IS NOT DISTINCT FROM NEW.last_outage_at))
    EXECUTE FUNCTION bf4ps_settings_stamp();
DROP TRIGGER settings_audit_change ON egress_gates;
CREATE TRIGGER settings_audit_change AFTER UPDATE ON egress_gates
    FOR EACH ROW WHEN (OLD.min_interval_seconds IS DISTINCT FROM NEW.min_interval_seconds
                       OR OLD.window_requests IS DISTINCT FROM NEW.window_requests
                       OR OLD.window_seconds IS DISTINCT FROM NEW.window_seconds
                       OR (OLD.cooldown_until IS DISTINCT FROM NEW.cooldown_until
                           AND OLD.last_throttle_at IS NOT DISTINCT FROM NEW.last_throttle_at
                           AND OLD.last_outage_at IS NOT DISTINCT FROM NEW.last_outage_at))
    EXECUTE FUNCTION bf4ps_settings_audit();
