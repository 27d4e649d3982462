-- Soldiers, their names and where they were seen, written for the website and the collectors
-- by one function (`bf4ps_soldier_sighted`): a sighting of one soldier, by the website (a
-- player's Battlelog URL: source `manual`, an unconfirmed name that never renames a known
-- soldier) or by a collector's look-up (Battlelog's own search: source `battlelog`, only under
-- the lease of a look-up job of that platform; an operator's either), with the soldier's
-- never-attempted collection state. The sighting's time is the database's clock, and no such sighting makes a soldier
-- active (only BF4SW's do: the scheduler's intake). Calls the access room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_soldier_sighted(p_persona bigint, p_platform text, p_name text, p_source text, p_eligible_since timestamp with time zone, p_job bigint DEFAULT NULL::bigint, p_token uuid DEFAULT NULL::uuid)
 RETURNS TABLE(soldier_id bigint, inserted boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := clock_timestamp();
    confirmed boolean;
    sid bigint;
    ins boolean;
BEGIN
    IF p_source = 'manual' AND (bf4ps_caller_holds('bf4ps_web')
                                OR bf4ps_caller_holds('bf4ps_operator')) THEN
        confirmed := false;
    ELSIF p_source = 'battlelog' AND (bf4ps_caller_holds('bf4ps_operator') OR EXISTS (
            SELECT 1 FROM collection_jobs j
            WHERE j.job_id = p_job AND j.lease_token = p_token AND j.resource = 'lookup'
              AND j.lookup_platform = p_platform AND j.status IN ('claimed', 'running')
              AND j.lease_expires_at > t)) THEN
        confirmed := true;
    ELSE
        RAISE EXCEPTION 'a sighting of source % is the website''s (manual) or a look-up''s '
            'under its lease (battlelog)', p_source USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO soldiers AS s (persona_id, platform, current_name, first_seen_at)
    VALUES (p_persona, p_platform, p_name, t)
    ON CONFLICT (persona_id, platform) DO UPDATE
    SET current_name = CASE WHEN confirmed THEN excluded.current_name ELSE s.current_name END,
        updated_at = now()
    RETURNING s.soldier_id, (s.xmax = 0) INTO sid, ins;
    INSERT INTO soldier_names AS n (soldier_id, name, first_seen_at, last_seen_at)
    VALUES (sid, p_name, t, t)
    ON CONFLICT (soldier_id, name) DO UPDATE
    SET first_seen_at = LEAST(n.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(n.last_seen_at, excluded.last_seen_at);
    INSERT INTO soldier_sources AS src (soldier_id, source_type, first_seen_at, last_seen_at)
    VALUES (sid, p_source, t, t)
    ON CONFLICT (soldier_id, source_type) DO UPDATE
    SET first_seen_at = LEAST(src.first_seen_at, excluded.first_seen_at),
        last_seen_at = GREATEST(src.last_seen_at, excluded.last_seen_at);
    -- every resource never attempted, eligible since the caller's instant within the last day
    INSERT INTO collection_state (soldier_id, resource, eligible_since)
    SELECT sid, r, LEAST(GREATEST(COALESCE(p_eligible_since, t), t - interval '1 day'), t)
    FROM unnest(ARRAY['detailed', 'profile', 'weapons', 'vehicles']) AS r
    ON CONFLICT DO NOTHING;
    RETURN QUERY SELECT sid, ins;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_soldier_sighted(p_persona bigint, p_platform text, p_name text, p_source text, p_eligible_since timestamp with time zone, p_job bigint, p_token uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_sighted(p_persona bigint, p_platform text, p_name text, p_source text, p_eligible_since timestamp with time zone, p_job bigint, p_token uuid) TO bf4ps_collector;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_sighted(p_persona bigint, p_platform text, p_name text, p_source text, p_eligible_since timestamp with time zone, p_job bigint, p_token uuid) TO bf4ps_web;
