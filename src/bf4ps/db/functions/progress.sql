-- Progress: the "this week" gains boards, rebuilt from the checked, unflagged intervals of the
-- window (`bf4ps_gains_boards_refresh`: the scheduler's every refresh period, the console's
-- after a flag is cleared), a flagged soldier taken off them at once (`bf4ps_gains_boards_drop`)
-- and an operator's clear of a flag (`bf4ps_progress_flag_clear`); the scheduler's check raises
-- a flag only on an unchecked interval (`bf4ps_progress_flag_raise`). No runtime role writes the
-- boards or the flags directly: the window, the prior and the minimum times are the
-- policy's, read here (gains_window_seconds, gains_prior_minutes, gains_board_min_seconds,
-- gains_board_item_min_seconds), and no caller's clock is believed more than an hour ahead.
-- Calls the access room (`bf4ps_policy_number`).
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_gains_boards_refresh(p_now timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    t constant timestamptz := LEAST(p_now, clock_timestamp() + interval '1 hour');
    since constant timestamptz := t - make_interval(secs =>
        bf4ps_policy_number('gains_window_seconds', 604800));
    prior_m constant double precision := bf4ps_policy_number('gains_prior_minutes', 60);
    soldiers integer;
    items integer;
BEGIN
    DELETE FROM gains_board_items;
    DELETE FROM gains_boards;
    -- the soldier boards ('kpm', 'spm'): per soldier the checked, non-reset intervals ended
    -- in the window, soldiers with an open flag left out; the rate pulled toward the
    -- platform's time-weighted average as if prior_m more minutes were played at it
    WITH per AS (
        SELECT i.soldier_id, i.platform, sum(i.kills) AS kills, sum(i.score) AS score,
               sum(i.seconds) AS seconds
        FROM soldier_intervals i
        WHERE i.ended_at > since AND i.checked_at IS NOT NULL AND NOT i.reset
          AND NOT EXISTS (SELECT 1 FROM progress_flags f
                          WHERE f.soldier_id = i.soldier_id AND f.cleared_at IS NULL)
        GROUP BY i.soldier_id, i.platform
    ), prior AS (
        SELECT platform,
               COALESCE(sum(kills)::float8 / NULLIF(sum(seconds), 0) * 60, 0) AS kpm,
               COALESCE(sum(score)::float8 / NULLIF(sum(seconds), 0) * 60, 0) AS spm
        FROM per GROUP BY platform
    )
    INSERT INTO gains_boards (board, platform, item_id, soldier_id, value, raw, kills, score,
                              seconds, refreshed_at)
    SELECT b.board, per.platform, 0, per.soldier_id,
           (CASE b.board WHEN 'kpm' THEN per.kills ELSE per.score END
            + CASE b.board WHEN 'kpm' THEN prior.kpm ELSE prior.spm END * prior_m)
           / (per.seconds / 60.0 + prior_m),
           CASE b.board WHEN 'kpm' THEN per.kills ELSE per.score END / (per.seconds / 60.0),
           per.kills, per.score, per.seconds, t
    FROM per
    JOIN prior ON prior.platform = per.platform
    CROSS JOIN (VALUES ('kpm'), ('spm')) AS b(board)
    WHERE per.seconds >= bf4ps_policy_number('gains_board_min_seconds', 3600)
      AND per.seconds > 0;
    GET DIAGNOSTICS soldiers = ROW_COUNT;
    -- the per-weapon and per-vehicle kill-rate boards, the prior the item's own average
    WITH per AS (
        SELECT i.kind, i.item_id, i.soldier_id, i.platform, sum(i.kills) AS kills,
               sum(i.seconds) AS seconds
        FROM item_intervals i
        WHERE i.ended_at > since AND i.checked_at IS NOT NULL AND NOT i.reset
          AND NOT EXISTS (SELECT 1 FROM progress_flags f
                          WHERE f.soldier_id = i.soldier_id AND f.cleared_at IS NULL)
        GROUP BY i.kind, i.item_id, i.soldier_id, i.platform
    ), prior AS (
        SELECT kind, item_id, platform,
               COALESCE(sum(kills)::float8 / NULLIF(sum(seconds), 0) * 60, 0) AS kpm
        FROM per GROUP BY kind, item_id, platform
    )
    INSERT INTO gains_boards (board, platform, item_id, soldier_id, value, raw, kills, score,
                              seconds, refreshed_at)
    SELECT per.kind || '_kpm', per.platform, per.item_id, per.soldier_id,
           (per.kills + prior.kpm * prior_m) / (per.seconds / 60.0 + prior_m),
           per.kills / (per.seconds / 60.0), per.kills, NULL, per.seconds, t
    FROM per
    JOIN prior ON (prior.kind, prior.item_id, prior.platform)
                = (per.kind, per.item_id, per.platform)
    WHERE per.seconds >= bf4ps_policy_number('gains_board_item_min_seconds', 1800)
      AND per.seconds > 0;
    GET DIAGNOSTICS items = ROW_COUNT;
    INSERT INTO gains_board_items (board, platform, item_id, soldiers)
    SELECT board, platform, item_id, count(*)
    FROM gains_boards
    WHERE board IN ('weapon_kpm', 'vehicle_kpm')
    GROUP BY board, platform, item_id;
    RETURN soldiers + items;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_gains_boards_refresh(p_now timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gains_boards_refresh(p_now timestamp with time zone) TO bf4ps_scheduler;
GRANT EXECUTE ON FUNCTION bf4ps_gains_boards_refresh(p_now timestamp with time zone) TO bf4ps_web;

CREATE OR REPLACE FUNCTION bf4ps_gains_boards_drop(p_soldiers bigint[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
BEGIN
    -- a soldier leaves the boards at once only for an open flag
    DELETE FROM gains_boards g
    WHERE g.soldier_id = ANY(p_soldiers)
      AND EXISTS (SELECT 1 FROM progress_flags f
                  WHERE f.soldier_id = g.soldier_id AND f.cleared_at IS NULL);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_gains_boards_drop(p_soldiers bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_gains_boards_drop(p_soldiers bigint[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_progress_flag_clear(p_flag bigint, p_now timestamp with time zone, p_by text, p_note text)
 RETURNS TABLE(flag_id bigint, soldier_id bigint, persona_id bigint, platform text, kind text, item_id bigint, reason text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    -- an open flag once; cleared_by is the console's or the CLI's name for the operator, and
    -- the flag's event (bf4ps_event_record) records the login that cleared it
    RETURN QUERY
    UPDATE progress_flags f
    SET cleared_at = LEAST(p_now, clock_timestamp()), cleared_by = left(p_by, 200),
        clear_note = left(p_note, 500)
    FROM soldiers s
    WHERE f.flag_id = p_flag AND f.cleared_at IS NULL AND s.soldier_id = f.soldier_id
    RETURNING f.flag_id::bigint, f.soldier_id, s.persona_id, s.platform::text, f.kind::text,
              f.item_id::bigint, f.reason::text;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_progress_flag_clear(p_flag bigint, p_now timestamp with time zone, p_by text, p_note text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_progress_flag_clear(p_flag bigint, p_now timestamp with time zone, p_by text, p_note text) TO bf4ps_web;

-- A progress flag, raised by the scheduler's check (stats/progress_check.py) only on an interval
-- that exists and is not yet checked (the soldier's, or the weapon's or vehicle's), once: never
-- a flag of an interval the caller makes up or one already judged; flagged at the database's
-- clock, the reason at most 500 characters.
CREATE OR REPLACE FUNCTION bf4ps_progress_flag_raise(p_soldier bigint, p_kind text, p_item integer, p_started_at timestamp with time zone, p_ended_at timestamp with time zone, p_reason text)
 RETURNS TABLE(flag_id bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
BEGIN
    IF NOT (CASE WHEN p_kind = 'soldier' THEN EXISTS (
                SELECT 1 FROM soldier_intervals i
                WHERE i.soldier_id = p_soldier AND i.ended_at = p_ended_at
                  AND i.started_at = p_started_at AND i.checked_at IS NULL)
            ELSE EXISTS (
                SELECT 1 FROM item_intervals i
                WHERE i.soldier_id = p_soldier AND i.kind = p_kind AND i.item_id = p_item
                  AND i.ended_at = p_ended_at AND i.started_at = p_started_at
                  AND i.checked_at IS NULL) END) THEN
        RETURN;  -- no such unchecked interval: nothing flagged
    END IF;
    RETURN QUERY
    INSERT INTO progress_flags (soldier_id, kind, item_id, started_at, ended_at, reason,
                                flagged_at)
    VALUES (p_soldier, p_kind, CASE WHEN p_kind = 'soldier' THEN NULL ELSE p_item END,
            p_started_at, p_ended_at, left(p_reason, 500), clock_timestamp())
    ON CONFLICT (soldier_id, kind, item_id, ended_at) DO NOTHING
    RETURNING progress_flags.flag_id;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_progress_flag_raise(p_soldier bigint, p_kind text, p_item integer, p_started_at timestamp with time zone, p_ended_at timestamp with time zone, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_progress_flag_raise(p_soldier bigint, p_kind text, p_item integer, p_started_at timestamp with time zone, p_ended_at timestamp with time zone, p_reason text) TO bf4ps_scheduler;

-- The scheduler's checks after storage: the oldest unchecked intervals, locked (SKIP LOCKED) in
-- the caller's transaction so a standby that just took over never checks the same ones, at
-- most 10,000 a call; and their marks, at most 10,000 a call, the time the database's, only
-- on intervals not yet checked (a checked interval's mark never moves).
CREATE OR REPLACE FUNCTION bf4ps_soldier_intervals_unchecked(p_limit integer)
 RETURNS SETOF soldier_intervals
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    RETURN QUERY
    SELECT * FROM soldier_intervals i WHERE i.checked_at IS NULL ORDER BY i.ended_at
    LIMIT LEAST(GREATEST(p_limit, 0), 10000)
    FOR UPDATE SKIP LOCKED;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_soldier_intervals_unchecked(p_limit integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_intervals_unchecked(p_limit integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_item_intervals_unchecked(p_limit integer)
 RETURNS SETOF item_intervals
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    RETURN QUERY
    SELECT * FROM item_intervals i WHERE i.checked_at IS NULL ORDER BY i.ended_at
    LIMIT LEAST(GREATEST(p_limit, 0), 10000)
    FOR UPDATE SKIP LOCKED;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_item_intervals_unchecked(p_limit integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_item_intervals_unchecked(p_limit integer) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_soldier_intervals_checked(p_soldier_id bigint[], p_ended_at timestamp with time zone[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
BEGIN
    IF cardinality(p_soldier_id) > 10000
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_ended_at) THEN
        RAISE EXCEPTION 'at most 10000 intervals a call, each with its end'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE soldier_intervals i SET checked_at = clock_timestamp()
    FROM unnest(p_soldier_id, p_ended_at) AS t(soldier_id, ended_at)
    WHERE i.soldier_id = t.soldier_id AND i.ended_at = t.ended_at AND i.checked_at IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_soldier_intervals_checked(p_soldier_id bigint[], p_ended_at timestamp with time zone[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_soldier_intervals_checked(p_soldier_id bigint[], p_ended_at timestamp with time zone[]) TO bf4ps_scheduler;

CREATE OR REPLACE FUNCTION bf4ps_item_intervals_checked(p_soldier_id bigint[], p_kind text[], p_item_id integer[], p_ended_at timestamp with time zone[])
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    n integer;
BEGIN
    IF cardinality(p_soldier_id) > 10000
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_kind)
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_item_id)
            OR cardinality(p_soldier_id) IS DISTINCT FROM cardinality(p_ended_at) THEN
        RAISE EXCEPTION 'at most 10000 intervals a call, each with its kind, item and end'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE item_intervals i SET checked_at = clock_timestamp()
    FROM unnest(p_soldier_id, p_kind, p_item_id, p_ended_at)
         AS t(soldier_id, kind, item_id, ended_at)
    WHERE i.soldier_id = t.soldier_id AND i.kind = t.kind AND i.item_id = t.item_id
      AND i.ended_at = t.ended_at AND i.checked_at IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_item_intervals_checked(p_soldier_id bigint[], p_kind text[], p_item_id integer[], p_ended_at timestamp with time zone[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_item_intervals_checked(p_soldier_id bigint[], p_kind text[], p_item_id integer[], p_ended_at timestamp with time zone[]) TO bf4ps_scheduler;
