-- The scheduler reads the queue and the event log without their lease tokens (docs/operations.md
-- "Roles"). A token is the fence of a lease: whoever holds one could finish or fail that job.
-- Since 0023 the scheduler changes jobs only through its batch functions and the reaper is an
-- owner-run function, so nothing it runs reads a token; before this it could still read every
-- live lease's token (collection_jobs) and the tokens of the event log. The collector and the
-- website lost them in 0018; operators keep the whole rows (diagnosis).
REVOKE SELECT ON collection_jobs, collection_events, collection_events_log FROM bf4ps_scheduler;
GRANT SELECT (job_id, soldier_id, resource, lane, priority_class, rank, reason, status,
              eligible_at, attempt_count, request_id, lookup_name, lookup_platform,
              collector_uuid, claimed_at, started_at, lease_expires_at, last_error_class,
              last_error_message, last_error_at, created_at, updated_at)
    ON collection_jobs TO bf4ps_scheduler;
GRANT SELECT (event_id, occurred_at, event_type, collector_uuid, collector_name, hostname,
              egress_key, lane, job_id, soldier_id, persona_id, platform, resource,
              priority_class, attempt_number, result, duration_ms, wait_ms, http_status,
              error_class, error_message, details, claimed_at, started_at)
    ON collection_events TO bf4ps_scheduler;
GRANT SELECT (event_id, ord, occurred_at, event_type, collector_uuid, collector_name, hostname,
              egress_key, lane, job_id, soldier_id, persona_id, platform, resource,
              priority_class, attempt_number, result, duration_ms, wait_ms, http_status,
              error_class, error_message, details)
    ON collection_events_log TO bf4ps_scheduler;
