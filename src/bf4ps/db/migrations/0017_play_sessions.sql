-- Play sessions (scheduler/sessions.py): what BF4SW's sightings say a soldier played, kept as
-- durable rows, and the two refresh reasons they bring. A session starts at the first sighting
-- on a server and ends when the soldier is unseen for the policy's gap (or seen on another
-- server: a new session). Closing a session makes its final_refresh resources due once, so
-- every session is bracketed by snapshots; scheduled_profile refreshes known profiles slowly.
-- An expand step: older builds never read the new table or column.

ALTER DOMAIN bf4ps_job_reason DROP CONSTRAINT bf4ps_job_reason_check;
ALTER DOMAIN bf4ps_job_reason ADD CONSTRAINT bf4ps_job_reason_check
    CHECK (VALUE IN ('bf4sw_discovery', 'bootstrap', 'active_refresh', 'final_refresh',
                     'scheduled_profile', 'retry', 'manual', 'lookup'));

-- Why a `due` resource is due (the feeder gives its job this reason); NULL: active_refresh.
ALTER TABLE collection_state ADD COLUMN due_reason text
    CHECK (due_reason IN ('active_refresh', 'final_refresh', 'scheduled_profile'));

CREATE TABLE play_sessions (
    session_id bigserial PRIMARY KEY,
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    -- BF4SW's server, when BF4SW says which (its optional bf4_server_players table)
    server_guid text CHECK (length(server_guid) <= 100),
    server_name text CHECK (length(server_name) <= 200),
    started_at timestamptz NOT NULL,  -- first sighting (BF4SW's clock)
    last_seen_at timestamptz NOT NULL,  -- latest sighting: the session's end once closed
    sightings integer NOT NULL DEFAULT 1 CHECK (sightings >= 1),
    ended_at timestamptz,  -- when BF4PS closed it; NULL while open
    final_refresh_at timestamptz,  -- when its final refresh was made due (once)
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT play_sessions_order CHECK (started_at <= last_seen_at)
);
-- one open session per soldier; a soldier's sessions newest first; the open ones by age
CREATE UNIQUE INDEX uq_play_sessions_open ON play_sessions (soldier_id) WHERE ended_at IS NULL;
CREATE INDEX ix_play_sessions_soldier ON play_sessions (soldier_id, started_at DESC);
CREATE INDEX ix_play_sessions_open_seen ON play_sessions (last_seen_at) WHERE ended_at IS NULL;

-- Sightings of one intake batch: extend the soldier's open session (same server, within the
-- gap), or close it and open a new one. A sighting not newer than the soldier's latest known
-- one (a reconciliation overlap reading it again) changes nothing. Returns sessions opened.
CREATE FUNCTION bf4ps_observe_sessions(soldier_ids bigint[], seen timestamptz[],
                                       guids text[], names text[], gap_seconds float8)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    o record;
    s play_sessions%ROWTYPE;
    opened integer := 0;
BEGIN
    FOR o IN SELECT * FROM unnest(soldier_ids, seen, guids, names)
                 AS x(soldier_id, seen_at, guid, name) ORDER BY x.soldier_id LOOP
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
$$;

-- Open sessions unseen for the gap (on the source's clock) close; then every closed session
-- whose final refresh is not made yet makes its resources due, reason final_refresh, when
-- their last success is older than min_age_seconds and before the session's last sighting (a
-- success after it already brackets it). Resources never collected, waiting to retry or
-- parked keep their state (they are wanted anyway, or cannot be had). The resource is eligible
-- since the session ended (its last sighting): FIFO within its class. Returns the sessions
-- whose final refresh was considered (made due, or not needed).
CREATE FUNCTION bf4ps_close_sessions(source_now timestamptz, gap_seconds float8,
                                     resources text[], min_age_seconds float8)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    UPDATE play_sessions SET ended_at = clock_timestamp()
    WHERE ended_at IS NULL
      AND last_seen_at < source_now - make_interval(secs => gap_seconds);
    WITH closing AS (
        UPDATE play_sessions SET final_refresh_at = clock_timestamp()
        WHERE ended_at IS NOT NULL AND final_refresh_at IS NULL
        RETURNING soldier_id, last_seen_at
    ), marked AS (
        UPDATE collection_state cs
        SET status = 'due', due_reason = 'final_refresh',
            eligible_since = LEAST(c.last_seen_at, clock_timestamp()),
            updated_at = clock_timestamp()
        FROM closing c
        WHERE cs.soldier_id = c.soldier_id AND cs.resource = ANY(resources)
          AND cs.status IN ('current', 'due') AND cs.last_success_at < c.last_seen_at
          AND cs.last_success_at <= clock_timestamp() - make_interval(secs => min_age_seconds)
        RETURNING cs.soldier_id
    )
    SELECT count(*) INTO n FROM closing;
    RETURN n;
END;
$$;

-- scheduled_profile's sweep: the oldest current profiles, without reading the others
CREATE INDEX ix_state_profile_age ON collection_state (last_success_at)
    WHERE resource = 'profile' AND status = 'current';

-- the feeder's final refreshes, first within their class (db/sql/feeder.sql feed_class)
CREATE INDEX ix_state_final_refresh ON collection_state (activity_class, resource, eligible_since)
    WHERE status = 'due' AND due_reason = 'final_refresh';

-- Who may do what with sessions: every role reads them (the website's last-session report);
-- only the scheduler (and an operator) observes and closes them, through the two functions.
GRANT SELECT ON play_sessions TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;
ALTER FUNCTION bf4ps_observe_sessions(bigint[], timestamptz[], text[], text[], float8)
    SECURITY DEFINER SET search_path FROM CURRENT;
ALTER FUNCTION bf4ps_close_sessions(timestamptz, float8, text[], float8)
    SECURITY DEFINER SET search_path FROM CURRENT;
REVOKE EXECUTE ON FUNCTION bf4ps_observe_sessions(bigint[], timestamptz[], text[], text[], float8),
    bf4ps_close_sessions(timestamptz, float8, text[], float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_observe_sessions(bigint[], timestamptz[], text[], text[], float8),
    bf4ps_close_sessions(timestamptz, float8, text[], float8) TO bf4ps_scheduler, bf4ps_operator;
