-- The request ledger: every request counted before it is sent, signed so a restore from an
-- older backup is seen (`bf4ps_ledger_sign`, `bf4ps_mark_sign`, `bf4ps_ledger_receipt`), marked
-- unsent when a counted request never went out, and pruned outside the budget's and the restore
-- guard's windows. Calls the restore room (`bf4ps_restore_span`).
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_ledger_prune(p_cutoff timestamp with time zone, p_batch integer)
 RETURNS SETOF bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    DELETE FROM request_ledger
    WHERE request_id IN (
        SELECT l.request_id FROM request_ledger l
        WHERE l.slot_at < least(p_cutoff, clock_timestamp() - make_interval(secs => 2 * greatest(
            (SELECT b.window_seconds FROM fleet_budget b WHERE b.budget_id = 1),
            bf4ps_restore_span())))
        LIMIT greatest(p_batch, 0))
    RETURNING request_id
$function$;
REVOKE ALL ON FUNCTION bf4ps_ledger_prune(p_cutoff timestamp with time zone, p_batch integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_ledger_receipt(p_request bigint)
 RETURNS TABLE(request_id bigint, slot_at timestamp with time zone, receipt text)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT l.request_id, l.slot_at, bf4ps_ledger_sign(l.request_id, l.slot_at)
    FROM request_ledger l WHERE l.request_id = p_request
      -- a receipt of a request counted for a registration of the caller's login only
      AND (l.collector_uuid IS NULL OR bf4ps_caller_holds('bf4ps_operator')
           OR EXISTS (SELECT 1 FROM collectors c WHERE c.collector_uuid = l.collector_uuid
                        AND bf4ps_caller_owns(c.db_login)))
$function$;
REVOKE ALL ON FUNCTION bf4ps_ledger_receipt(p_request bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_receipt(p_request bigint) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_ledger_sign(p_request bigint, p_slot_at timestamp with time zone)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT encode(sha256(k.secret || sha256(k.secret || convert_to(
               p_request::text || ':' || (extract(epoch FROM p_slot_at) * 1000000)::bigint,
               'UTF8'))), 'hex')
    FROM ledger_receipt_key k
$function$;
REVOKE ALL ON FUNCTION bf4ps_ledger_sign(p_request bigint, p_slot_at timestamp with time zone) FROM PUBLIC;

-- A collector's own slot given up before a byte was written stops counting; when it is still
-- its egress's latest counted slot, the gate's next slot goes back to it (the slot it gave up
-- was spaced from the one before, and a new one is never before now and the connect lead), so
-- a request late at its checks costs the egress the delay it took to re-slot, not a whole
-- interval. The gate row is locked first: a later slot counted meanwhile is seen, and kept.
CREATE OR REPLACE FUNCTION bf4ps_ledger_unsent(p_request bigint, p_collector uuid, p_token uuid)
 RETURNS TABLE(request_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    mine request_ledger;
BEGIN
    PERFORM bf4ps_collector_own(p_collector, 'mark unsent the requests of');
    PERFORM 1 FROM egress_gates g JOIN request_ledger l ON l.egress_key = g.egress_key
    WHERE l.request_id = p_request AND l.collector_uuid = p_collector
    FOR UPDATE OF g;
    UPDATE request_ledger l SET unsent_at = clock_timestamp()
    WHERE l.request_id = p_request AND l.collector_uuid = p_collector AND l.unsent_at IS NULL
      AND l.slot_at > clock_timestamp() - interval '10 seconds'
      AND (l.job_id IS NULL  -- a recon request: of no queue job
           OR EXISTS (SELECT 1 FROM collection_jobs j
                      WHERE j.job_id = l.job_id AND j.collector_uuid = p_collector
                        AND j.lease_token = p_token))
    RETURNING l.* INTO mine;
    IF mine.request_id IS NULL THEN
        RETURN;
    END IF;
    UPDATE egress_gates g SET next_slot_at = mine.slot_at, updated_at = now()
    WHERE g.egress_key = mine.egress_key AND g.next_slot_at > mine.slot_at
      AND NOT EXISTS (SELECT 1 FROM request_ledger x
                      WHERE x.egress_key = mine.egress_key AND x.slot_at >= mine.slot_at
                        AND x.request_id <> mine.request_id AND x.unsent_at IS NULL);
    request_id := mine.request_id;
    RETURN NEXT;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_ledger_unsent(p_request bigint, p_collector uuid, p_token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_unsent(p_request bigint, p_collector uuid, p_token uuid) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_ledger_unsent_operator(p_request bigint)
 RETURNS TABLE(request_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE request_ledger l SET unsent_at = clock_timestamp()
    WHERE l.request_id = p_request AND l.collector_uuid IS NULL AND l.job_id IS NULL
      AND l.unsent_at IS NULL AND l.slot_at > clock_timestamp() - interval '10 seconds'
    RETURNING l.request_id;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_ledger_unsent_operator(p_request bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_unsent_operator(p_request bigint) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_mark_sign(p_payload text)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    SELECT encode(sha256(k.secret || sha256(k.secret || convert_to('mark:' || p_payload,
                                                                   'UTF8'))), 'hex')
    FROM ledger_receipt_key k
$function$;
REVOKE ALL ON FUNCTION bf4ps_mark_sign(p_payload text) FROM PUBLIC;
