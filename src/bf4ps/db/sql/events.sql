-- name: insert_event
INSERT INTO collection_events (
    event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id, lease_token,
    soldier_id, persona_id, platform, resource, priority_class, attempt_number, result,
    duration_ms, wait_ms, http_status, error_class, error_message, details)
VALUES (
    %(event_type)s, %(collector_uuid)s, %(collector_name)s, %(hostname)s, %(egress_key)s,
    %(lane)s, %(job_id)s, %(lease_token)s, %(soldier_id)s, %(persona_id)s, %(platform)s,
    %(resource)s, %(priority_class)s, %(attempt_number)s, %(result)s, %(duration_ms)s,
    %(wait_ms)s, %(http_status)s, %(error_class)s, %(error_message)s, %(details)s)
