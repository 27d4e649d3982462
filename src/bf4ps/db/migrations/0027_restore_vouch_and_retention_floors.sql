-- The restore guard's run rule (0026), for its readers and for an operator
-- (docs/operations.md "Restoring the database", docs/architecture.md "The restore guard"):
--
-- 1. bf4ps_restore_hold(): the hold every reader shows (/metrics, the console, `bf4ps status`)
--    — the stored hold of a detected restore, and the run rule's computed one: a server start
--    that no running process vouched for yet is held one window from its start. Before, the
--    readers read restore_guard.hold_until only and said "not held" while every collector
--    waited on the run rule.
-- 2. bf4ps_restore_vouch(reason): `bf4ps db vouch`, for a server started while the whole fleet
--    was down (no running process holds a mark of the earlier run, so nobody vouches and the
--    fleet waits one window). An operator's word that this is the database the fleet knew: it
--    sets the run's vouch only while none is set, leaves a detected restore's hold as it is,
--    and is audited (fleet_settings_changes 'restore' and a fleet_settings_changed event,
--    with session_user).
-- 3. Retention's deletes of the request ledger and the event log through owner-run functions
--    that keep their own floor: the scheduler's and the operator's DELETE on both tables goes.
--    Before, a scheduler login could delete the ledger rows inside the budget windows (all but
--    the newest, which the fleet's marks name) and so free the whole fleet budget unseen, or
--    erase every event; the floor was only in the query the scheduler chose to run.

-- The guard's window: the longest any budget window reaches back (0026's check uses the same).
CREATE FUNCTION bf4ps_restore_span() RETURNS double precision
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT greatest(1.0,
        (SELECT b.window_seconds FROM fleet_budget b WHERE b.requests IS NOT NULL),
        (SELECT max(greatest(e.window_seconds, e.min_interval_seconds)) FROM egress_gates e))
$$;

-- Until when sends are held now and why (no row: not held). run_rule: the hold is the run
-- rule's (nobody vouched for this server start), not a detected restore's. A run the guard has
-- not looked at yet counts as not vouched for (its first check will find it so), unless the
-- guard never looked at any run (a new database).
CREATE FUNCTION bf4ps_restore_hold()
RETURNS TABLE (hold_until timestamptz, reason text, run_rule boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    g restore_guard;
    started timestamptz := pg_postmaster_start_time();
    run_hold timestamptz;
BEGIN
    SELECT * INTO g FROM restore_guard;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF g.run_started_at IS NOT NULL
            AND (g.run_started_at IS DISTINCT FROM started OR g.run_vouched_at IS NULL) THEN
        run_hold := started + make_interval(secs => bf4ps_restore_span());
    END IF;
    IF run_hold > now() AND run_hold > COALESCE(g.hold_until, '-infinity') THEN
        RETURN QUERY SELECT run_hold,
            'the server started at ' || started || ' and no running process has vouched yet '
            || 'that it is the database it knew (`bf4ps db vouch` if it is)', true;
    ELSIF g.hold_until > now() THEN
        RETURN QUERY SELECT g.hold_until, COALESCE(g.reason, 'unknown'), false;
    END IF;
END
$$;

ALTER TABLE fleet_settings_changes DROP CONSTRAINT fleet_settings_changes_setting_check;
ALTER TABLE fleet_settings_changes ADD CONSTRAINT fleet_settings_changes_setting_check
    CHECK (setting IN ('gate', 'budget', 'shares', 'policy', 'restore'));

-- outcome: 'vouched' (this call set the vouch), 'already vouched' (a running process or an
-- operator did, at vouched_at: nothing changed), or 'no guard' (a restore under way: the
-- guard row is gone). hold_until/reason: what still holds sends after it (a detected
-- restore's hold is not the operator's to lift).
CREATE FUNCTION bf4ps_restore_vouch(p_reason text)
RETURNS TABLE (outcome text, run_started_at timestamptz, vouched_at timestamptz,
               hold_until timestamptz, reason text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    g restore_guard;
    started timestamptz := pg_postmaster_start_time();
    result text := 'already vouched';
    id bigint;
    before jsonb;
    after jsonb;
BEGIN
    IF NOT bf4ps_caller_holds('bf4ps_operator') THEN
        RAISE EXCEPTION 'only an operator may vouch for a server start (not %)', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF btrim(COALESCE(p_reason, '')) = '' THEN
        RAISE EXCEPTION 'a vouch needs a reason' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO g FROM restore_guard FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'no guard'::text, NULL::timestamptz, NULL::timestamptz,
                            NULL::timestamptz, NULL::text;
        RETURN;
    END IF;
    IF g.run_started_at IS DISTINCT FROM started THEN  -- as the guard's check registers a run
        UPDATE restore_guard x
        SET run_started_at = started, run_lsn = pg_current_wal_lsn(), updated_at = now(),
            run_vouched_at = CASE WHEN x.run_started_at IS NULL THEN now() END
        RETURNING * INTO g;
    END IF;
    IF g.run_vouched_at IS NULL THEN
        before := jsonb_build_object('run_started_at', g.run_started_at, 'run_vouched_at', NULL);
        UPDATE restore_guard x SET run_vouched_at = now(), updated_at = now()
        WHERE x.run_vouched_at IS NULL
        RETURNING * INTO g;
        after := jsonb_build_object('run_started_at', g.run_started_at,
                                    'run_vouched_at', g.run_vouched_at);
        INSERT INTO fleet_settings_changes (setting, subject, old_value, new_value, changed_by,
                                            reason)
        VALUES ('restore', 'run', before, after, left(session_user, 200), left(p_reason, 200))
        RETURNING change_id INTO id;
        INSERT INTO collection_events (event_type, result, details)
        VALUES ('fleet_settings_changed', 'restore',
                jsonb_build_object('change_id', id, 'setting', 'restore', 'subject', 'run',
                                   'old', before, 'new', after, 'by', session_user::text,
                                   'reason', p_reason));
        result := 'vouched';
    END IF;
    RETURN QUERY SELECT result, g.run_started_at, g.run_vouched_at,
        CASE WHEN g.hold_until > now() THEN g.hold_until END,
        CASE WHEN g.hold_until > now() THEN g.reason END;
END
$$;

REVOKE EXECUTE ON FUNCTION bf4ps_restore_span(), bf4ps_restore_hold(),
    bf4ps_restore_vouch(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_restore_hold()
TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;
GRANT EXECUTE ON FUNCTION bf4ps_restore_vouch(text) TO bf4ps_operator;

-- ---------------------------------------------------------------- 3. retention's floors
-- Ledger rows older than the horizon and older than twice the longest window any budget counts
-- over (the fleet budget's, a gate's), whatever the horizon; at most p_batch. The ids deleted.
CREATE FUNCTION bf4ps_ledger_prune(p_cutoff timestamptz, p_batch integer)
RETURNS SETOF bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DELETE FROM request_ledger
    WHERE request_id IN (
        SELECT l.request_id FROM request_ledger l
        WHERE l.slot_at < least(p_cutoff, clock_timestamp() - make_interval(secs => 2 * greatest(
            (SELECT b.window_seconds FROM fleet_budget b WHERE b.budget_id = 1),
            bf4ps_restore_span())))
        LIMIT greatest(p_batch, 0))
    RETURNING request_id
$$;

-- Events older than the horizon and at least a day old (the policy's shortest horizon); at
-- most p_batch. The ids deleted.
CREATE FUNCTION bf4ps_events_prune(p_cutoff timestamptz, p_batch integer)
RETURNS SETOF bigint
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DELETE FROM collection_events
    WHERE (event_id, occurred_at) IN (
        SELECT e.event_id, e.occurred_at FROM collection_events e
        WHERE e.occurred_at < least(p_cutoff, clock_timestamp() - interval '1 day')
        LIMIT greatest(p_batch, 0))
    RETURNING event_id
$$;

REVOKE EXECUTE ON FUNCTION bf4ps_ledger_prune(timestamptz, integer),
    bf4ps_events_prune(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_ledger_prune(timestamptz, integer),
    bf4ps_events_prune(timestamptz, integer) TO bf4ps_scheduler, bf4ps_operator;
REVOKE DELETE ON request_ledger, collection_events FROM bf4ps_scheduler, bf4ps_operator;
