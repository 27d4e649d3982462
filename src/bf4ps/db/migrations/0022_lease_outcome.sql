-- 0022: whether a lease already wrote its outcome. A finalize whose commit landed while its
-- answer was lost with the connection (the server restarting between the commit and the reply)
-- is retried by its collector, which finds the job no longer its own: the retry asks this
-- before it records a stale finalize. The collector may not read lease tokens in the event log
-- (migration 0018), so the question goes through this function, which answers only for the
-- lease whose token the caller presents.
CREATE FUNCTION bf4ps_lease_outcome(p_job_id bigint, p_lease_token uuid)
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT event_type FROM collection_events
    WHERE job_id = p_job_id AND lease_token = p_lease_token
      AND event_type IN ('succeeded', 'failed')
    ORDER BY event_id DESC
    LIMIT 1
$$;
REVOKE EXECUTE ON FUNCTION bf4ps_lease_outcome(bigint, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_lease_outcome(bigint, uuid)
    TO bf4ps_collector, bf4ps_scheduler, bf4ps_operator;
