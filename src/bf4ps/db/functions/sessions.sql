-- Play sessions: BF4SW's observations folded into sessions (`bf4ps_observe_sessions`) and the
-- ended ones closed, with their final refresh enqueued (`bf4ps_close_sessions`: the policy's
-- minimum play per resource read here). The scheduler's. Calls the access room
-- (`bf4ps_policy_number`).
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

DROP FUNCTION IF EXISTS bf4ps_close_sessions(source_now timestamp with time zone, gap_seconds double precision, resources text[], min_age_seconds double precision);

CREATE OR REPLACE FUNCTION bf4ps_close_sessions(source_now timestamp with time zone, gap_seconds double precision)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
    -- the closing snapshots the policy affords (policy.py): detailed after a session (or a
    -- chain of them) of at least this much play, weapons and vehicles after one of at least
    -- the second; read here, whatever the caller would pass
    min_play constant double precision :=
        bf4ps_policy_number('final_refresh_min_play_seconds', 7200);
    items_min_play constant double precision :=
        bf4ps_policy_number('final_refresh_items_min_play_seconds', 28800);
BEGIN
    -- a session ends a gap after BF4SW's clock: never a clock ahead of ours, never a gap
    -- under a minute or under the policy's session_gap_seconds when that is shorter (a sped-up
    -- demo or test), whatever the caller passes
    UPDATE play_sessions SET ended_at = clock_timestamp()
    WHERE ended_at IS NULL
      AND last_seen_at < LEAST(source_now, clock_timestamp()) - make_interval(
          secs => GREATEST(gap_seconds,
                           LEAST(60, bf4ps_policy_number('session_gap_seconds', 1200))));
    -- a soldier off every server closes his ended sessions at once (a chain across servers
    -- is closed once, after the last): its play is the sum of theirs
    WITH closing AS (
        UPDATE play_sessions p SET final_refresh_at = clock_timestamp()
        WHERE p.ended_at IS NOT NULL AND p.final_refresh_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM play_sessions o
                          WHERE o.soldier_id = p.soldier_id AND o.ended_at IS NULL
                            AND o.final_refresh_at IS NULL)
        RETURNING p.soldier_id, p.started_at, p.last_seen_at
    ), played AS (
        SELECT soldier_id, max(last_seen_at) AS last_seen_at,
               sum(extract(epoch FROM last_seen_at - started_at)) AS seconds
        FROM closing GROUP BY soldier_id
    ), marked AS (
        UPDATE collection_state cs
        SET status = 'due', due_reason = 'final_refresh',
            eligible_since = LEAST(c.last_seen_at, clock_timestamp()),
            updated_at = clock_timestamp()
        FROM played c
        WHERE cs.soldier_id = c.soldier_id
          AND ((cs.resource = 'detailed' AND c.seconds >= min_play)
               OR (cs.resource IN ('weapons', 'vehicles') AND c.seconds >= items_min_play))
          AND cs.status IN ('current', 'due') AND cs.last_success_at < c.last_seen_at
        RETURNING cs.soldier_id
    )
    SELECT count(*) INTO n FROM closing;
    RETURN n;
END;
$function$;
REVOKE ALL ON FUNCTION bf4ps_close_sessions(source_now timestamp with time zone, gap_seconds double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_close_sessions(source_now timestamp with time zone, gap_seconds double precision) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_close_sessions(source_now timestamp with time zone, gap_seconds double precision) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION bf4ps_observe_sessions(soldier_ids bigint[], seen timestamp with time zone[], guids text[], names text[], gap_seconds double precision)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    o record;
    s play_sessions%ROWTYPE;
    opened integer := 0;
BEGIN
    FOR o IN SELECT * FROM unnest(soldier_ids, seen, guids, names)
                 AS x(soldier_id, seen_at, guid, name) ORDER BY x.soldier_id LOOP
        IF o.seen_at > clock_timestamp() + interval '5 minutes' THEN
            CONTINUE;  -- a sighting from the future would keep a session open for ever
        END IF;
        SELECT * INTO s FROM play_sessions p WHERE p.soldier_id = o.soldier_id
        ORDER BY p.last_seen_at DESC LIMIT 1 FOR UPDATE;
        IF FOUND AND o.seen_at <= s.last_seen_at THEN
            CONTINUE;
        END IF;
        IF FOUND AND s.ended_at IS NULL AND s.server_guid IS NOT DISTINCT FROM o.guid
           AND o.seen_at <= s.last_seen_at + make_interval(secs => gap_seconds) THEN
            UPDATE play_sessions SET last_seen_at = o.seen_at, sightings = sightings + 1
            WHERE session_id = s.session_id;
            CONTINUE;
        END IF;
        IF FOUND AND s.ended_at IS NULL THEN
            UPDATE play_sessions SET ended_at = clock_timestamp()
            WHERE session_id = s.session_id;
        END IF;
        INSERT INTO play_sessions (soldier_id, server_guid, server_name, started_at,
                                   last_seen_at)
        VALUES (o.soldier_id, o.guid, left(o.name, 200), o.seen_at, o.seen_at);
        opened := opened + 1;
    END LOOP;
    RETURN opened;
END;
$function$;
REVOKE ALL ON FUNCTION bf4ps_observe_sessions(soldier_ids bigint[], seen timestamp with time zone[], guids text[], names text[], gap_seconds double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_observe_sessions(soldier_ids bigint[], seen timestamp with time zone[], guids text[], names text[], gap_seconds double precision) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_observe_sessions(soldier_ids bigint[], seen timestamp with time zone[], guids text[], names text[], gap_seconds double precision) TO bf4ps_operator;
