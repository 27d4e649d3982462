-- 0009: answers BF4PS does not recognize, the fleet circuit breaker and egress reconnaissance.
--
-- 1. A new failure class, 'unrecognized' (an unknown Battlelog error wording or HTML page, a
--    success envelope without its data, a login wall): retried with backoff, never parked.
-- 2. circuit_breakers: one row per lane + resource whose circuit has ever opened. While open,
--    the lane/resource sends only a slow probe (one held job released per probe interval);
--    circuit_holds remembers which pending jobs the circuit holds back, so closing releases
--    exactly them. Every collector reads the same rows.
-- 3. recon_runs / recon_samples: what `bf4ps recon` measured from one egress (each request is
--    also in request_ledger, counted before it was sent).

ALTER DOMAIN bf4ps_error_class DROP CONSTRAINT bf4ps_error_class_check;
ALTER DOMAIN bf4ps_error_class ADD CONSTRAINT bf4ps_error_class_check
    CHECK (VALUE IN ('throttle', 'timeout', 'server', 'not_found', 'malformed', 'internal',
                     'unrecognized'));

CREATE TABLE circuit_breakers (
    lane text NOT NULL CHECK (lane IN ('background', 'interactive')),
    resource text NOT NULL
        CHECK (resource IN ('detailed', 'profile', 'weapons', 'vehicles', 'lookup')),
    state text NOT NULL CHECK (state IN ('open', 'closed')),
    signature text NOT NULL CHECK (length(signature) <= 80),
    opened_at timestamptz NOT NULL,
    closed_at timestamptz,
    next_probe_at timestamptz,
    probe_seconds double precision NOT NULL CHECK (probe_seconds > 0),
    probe_successes integer NOT NULL DEFAULT 0 CHECK (probe_successes >= 0),
    close_successes integer NOT NULL CHECK (close_successes >= 1),
    soldiers integer NOT NULL CHECK (soldiers >= 0),
    egresses integer NOT NULL CHECK (egresses >= 0),
    times_opened integer NOT NULL DEFAULT 1 CHECK (times_opened >= 1),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (lane, resource),
    CONSTRAINT circuit_open_shape CHECK (
        (state = 'open') = (next_probe_at IS NOT NULL)
        AND (state = 'closed') = (closed_at IS NOT NULL))
);

CREATE TABLE circuit_holds (
    job_id bigint PRIMARY KEY,
    lane text NOT NULL,
    resource text NOT NULL,
    held_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ix_circuit_holds_circuit ON circuit_holds (lane, resource, held_at);

-- The circuit counts a window's finished attempts of one lane/resource.
CREATE INDEX ix_events_lane_outcome ON collection_events (resource, lane, occurred_at DESC)
    WHERE event_type IN ('succeeded', 'failed');

CREATE TABLE recon_runs (
    run_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    egress_key text NOT NULL CHECK (btrim(egress_key) <> '' AND length(egress_key) <= 100),
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz,
    settings jsonb NOT NULL,
    stopped_by text CHECK (length(stopped_by) <= 200),
    threshold_interval_seconds double precision,
    recommended_interval_seconds double precision,
    safety_factor double precision CHECK (safety_factor >= 1),
    summary jsonb
);

CREATE TABLE recon_samples (
    run_id bigint NOT NULL REFERENCES recon_runs ON DELETE CASCADE,
    seq integer NOT NULL CHECK (seq >= 0),
    phase text NOT NULL CHECK (phase IN ('survey', 'ladder', 'backoff')),
    stage integer CHECK (stage >= 0),
    interval_seconds double precision,
    ledger_request_id bigint NOT NULL,
    resource text NOT NULL CHECK (resource IN ('detailed', 'profile', 'weapons', 'vehicles')),
    persona_id bigint NOT NULL,
    platform text NOT NULL CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    sent_at timestamptz NOT NULL,
    http_status integer CHECK (http_status BETWEEN 100 AND 599),
    error_class text CHECK (error_class IN ('throttle', 'timeout', 'server', 'not_found',
                                            'malformed', 'internal', 'unrecognized')),
    message text CHECK (length(message) <= 500),
    wire_bytes integer CHECK (wire_bytes >= 0),
    decoded_bytes integer CHECK (decoded_bytes >= 0),
    latency_ms integer CHECK (latency_ms >= 0),
    PRIMARY KEY (run_id, seq)
);
