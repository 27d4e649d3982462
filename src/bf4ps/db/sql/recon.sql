-- `bf4ps recon` (recon/): its runs and every request it sent (each also in request_ledger).

-- name: recon_personas
-- A sample of known personas, soldiers with current detailed stats first.
SELECT s.persona_id, s.platform
FROM soldiers s
LEFT JOIN collection_state cs ON cs.soldier_id = s.soldier_id AND cs.resource = 'detailed'
ORDER BY (cs.status = 'current') IS NOT TRUE, s.last_seen_at DESC, s.soldier_id
LIMIT %(n)s

-- name: recon_run_insert
INSERT INTO recon_runs (egress_key, settings) VALUES (%(egress_key)s, %(settings)s)
RETURNING run_id, started_at

-- name: recon_sample_insert
INSERT INTO recon_samples (run_id, seq, phase, stage, interval_seconds, ledger_request_id,
                           resource, persona_id, platform, sent_at, http_status, error_class,
                           message, wire_bytes, decoded_bytes, latency_ms)
VALUES (%(run_id)s, %(seq)s, %(phase)s, %(stage)s, %(interval_seconds)s,
        %(ledger_request_id)s, %(resource)s, %(persona_id)s, %(platform)s, %(sent_at)s,
        %(http_status)s, %(error_class)s, %(message)s, %(wire_bytes)s, %(decoded_bytes)s,
        %(latency_ms)s)

-- name: recon_run_finish
UPDATE recon_runs
SET finished_at = clock_timestamp(), stopped_by = %(stopped_by)s,
    threshold_interval_seconds = %(threshold)s, recommended_interval_seconds = %(recommended)s,
    safety_factor = %(safety)s, summary = %(summary)s
WHERE run_id = %(run_id)s

-- name: recon_gate_interval
-- The gate's pacing for one ladder stage (the window rule is left as configured).
SELECT * FROM bf4ps_recon_gate_interval(%(egress_key)s, %(min_interval)s)
