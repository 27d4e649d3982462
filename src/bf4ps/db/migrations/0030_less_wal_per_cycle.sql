-- Issue 32 (fleet scale on one primary), item 2: less WAL per product cycle. Each change
-- keeps what it served; the plans at 10M event rows are bench/event_plans.py's.
--
-- 1. The event log's time index goes: its primary key is now (occurred_at, event_id), which
--    serves what ix_events_time served (a UTC window, the newest events first: the search's
--    ORDER BY occurred_at DESC, event_id DESC is the key read backwards), so a row writes one
--    B-tree entry fewer (≈ 72 B of WAL). The cursors that walk the log by id (the website's
--    metrics, the circuit's failures since a scrape) read a BRIN index of event_id instead:
--    ids are drawn in insertion order, so each block range holds a narrow run of them, and an
--    insert into a range not yet summarized writes nothing to it (autosummarize summarizes a
--    range once the next one begins). The newest settled event is read from the key too
--    (web.sql web_metrics_last_event).
ALTER TABLE collection_events DROP CONSTRAINT collection_events_pkey;
ALTER TABLE collection_events ADD CONSTRAINT collection_events_pkey
    PRIMARY KEY (occurred_at, event_id);
DROP INDEX ix_events_time;
CREATE INDEX ix_events_id ON collection_events USING brin (event_id)
    WITH (autosummarize = on);

-- A BRIN index is built with its last (partial) block range summarized, and an insert into a
-- summarized range widens the summary: a WAL record per row until the range is full. The
-- range a partition is filling is left unsummarized instead (a query reads such a range
-- whole, as it would read the newest pages anyway); autosummarize summarizes it once full.
CREATE FUNCTION bf4ps_events_brin_open(part regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    idx regclass;
    pages bigint := pg_relation_size(part) / current_setting('block_size')::bigint;
BEGIN
    SELECT x.indexrelid INTO idx FROM pg_index x
    JOIN pg_inherits i ON i.inhrelid = x.indexrelid AND i.inhparent = 'ix_events_id'::regclass
    WHERE x.indrelid = part;
    IF idx IS NOT NULL THEN
        PERFORM brin_desummarize_range(idx, pages - pages % 128);
    END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION bf4ps_events_brin_open(regclass) FROM PUBLIC;
SELECT bf4ps_events_brin_open(i.inhrelid::regclass) FROM pg_inherits i
WHERE i.inhparent = 'collection_events'::regclass;

CREATE OR REPLACE FUNCTION bf4ps_ensure_event_partitions(from_month date, months integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    m date := date_trunc('month', from_month)::date;
    created integer := 0;
    part text;
BEGIN
    FOR i IN 0 .. months - 1 LOOP
        part := format('collection_events_%s', to_char(m + make_interval(months => i), 'YYYYMM'));
        IF to_regclass(part) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF collection_events FOR VALUES FROM (%L) TO (%L)',
                part, (m + make_interval(months => i))::timestamptz,
                (m + make_interval(months => i + 1))::timestamptz);
            PERFORM bf4ps_events_brin_open(part::regclass);
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;

-- 2. A claim no longer locks its collector's registry row: the foreign key from a job's owner
--    to collectors checked it on every claim (a FOR KEY SHARE lock: a WAL record, and a
--    query of its own, each cycle). The claim names only a collector that exists (its own
--    EXISTS test of the registry row, in the same statement), and a collector is never
--    deleted (retired instead; no role but the owner may delete one): now a trigger refuses
--    the deletion itself, so no job can outlive its owner's row. (TRUNCATE, the owner's
--    whole-table step of a data-only restore, docs/operations.md, stays possible.)
ALTER TABLE collection_jobs DROP CONSTRAINT collection_jobs_collector_uuid_fkey;
CREATE FUNCTION bf4ps_collectors_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a collector is retired, never deleted (its jobs and events name it)'
        USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER collectors_kept BEFORE DELETE ON collectors
    FOR EACH ROW EXECUTE FUNCTION bf4ps_collectors_kept();

-- 3. Two row locks a counted success no longer writes (≈ 54 B of WAL each): the count's lock
--    of the job it fences (FOR SHARE) when this very transaction wrote that lease (the success
--    that claimed the next job: the new row version is this transaction's and nobody can
--    change it before the commit; any other count still locks it), and the fleet budget's
--    row lock, which serialized every count fleet-wide until its commit: an advisory
--    transaction lock does that and writes no WAL (the budget row is only read; a change of
--    the budget is a setting, read by the counts after it).
CREATE OR REPLACE FUNCTION admission_slot(p_egress text, p_collector uuid, p_job_id bigint, p_lease_token uuid, p_interactive boolean, p_margin double precision, p_ahead double precision, p_connect_lead double precision, p_policy jsonb, p_class text DEFAULT NULL::text, p_resource text DEFAULT NULL::text)
RETURNS TABLE(outcome text, slot timestamp with time zone, wait_until timestamp with time zone, ledger_id bigint, classes text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    counting boolean := p_job_id IS NOT NULL;
    g egress_gates;
    budget integer;
    budget_window_s double precision;
    now_at timestamptz;
    s timestamptz;
    nth timestamptz;
    win record;
    demand text[] := '{}';
    allowed text[];
    job_class text;
    job_resource text;
    counted_id bigint;
    serving boolean;
    ours boolean;  -- the lease was written by this transaction (a success's claim)
BEGIN
    IF p_job_id = 0 THEN
        -- a request of no queue job (recon, `bf4ps battlelog fetch`): nothing to fence, but
        -- counted like any other, in the class and resource it names
        job_class := p_class;
        job_resource := p_resource;
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSIF counting THEN
        SELECT CASE WHEN j.last_error_at IS NOT NULL THEN 'retry' ELSE j.priority_class END,
               j.resource, j.xmin = pg_current_xact_id()::xid
        INTO job_class, job_resource, ours
        FROM collection_jobs j
        WHERE j.job_id = p_job_id AND j.collector_uuid = p_collector
          AND j.lease_token = p_lease_token AND j.status IN ('claimed', 'running')
          AND j.lease_expires_at > clock_timestamp();
        IF FOUND AND NOT ours THEN
            -- a lease another transaction wrote: held (and seen still live) until the commit
            PERFORM FROM collection_jobs j
            WHERE j.job_id = p_job_id AND j.lease_token = p_lease_token
              AND j.lease_expires_at > clock_timestamp() FOR SHARE;
        END IF;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'lost', NULL::timestamptz, NULL::timestamptz, NULL::bigint,
                                NULL::text[];
            RETURN;
        END IF;
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress FOR UPDATE;
    ELSE
        SELECT * INTO g FROM egress_gates WHERE egress_key = p_egress;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no rate gate for egress %', p_egress USING ERRCODE = 'no_data_found';
    END IF;

    -- the egress: pacing, cool-down, its own window; at least the connect lead from now
    now_at := clock_timestamp();
    s := GREATEST(now_at + make_interval(secs => p_connect_lead), g.next_slot_at,
                  g.cooldown_until);
    IF g.window_requests IS NOT NULL THEN
        SELECT c.slot_at INTO nth FROM counted_requests c WHERE c.egress_key = p_egress
        ORDER BY c.slot_at DESC LIMIT 1 OFFSET g.window_requests - 1;
        s := GREATEST(s, nth + make_interval(secs => g.window_seconds + p_margin));
    END IF;
    IF s > now_at + make_interval(secs => p_ahead) THEN
        RETURN QUERY SELECT 'wait', s, s - make_interval(secs => p_ahead), NULL::bigint,
                            NULL::text[];
        RETURN;
    END IF;

    -- the fleet budget, only when one is set
    SELECT b.requests, b.window_seconds INTO budget, budget_window_s
    FROM fleet_budget b WHERE b.budget_id = 1;
    IF budget IS NOT NULL AND counting THEN
        -- counts are serialized fleet-wide until the commit (a lock that writes no WAL)
        PERFORM pg_advisory_xact_lock(hashtextextended('bf4ps.fleet_budget', 0));
        SELECT b.requests, b.window_seconds INTO budget, budget_window_s
        FROM fleet_budget b WHERE b.budget_id = 1;
    END IF;
    IF budget IS NOT NULL THEN
        SELECT * INTO win FROM budget_window(s, budget_window_s + p_margin);
        IF win.total >= budget THEN
            SELECT c.slot_at INTO nth FROM counted_requests c
            ORDER BY c.slot_at DESC LIMIT 1 OFFSET budget - 1;
            s := GREATEST(s, win.last_slot + interval '1 microsecond',
                          nth + make_interval(secs => budget_window_s + p_margin));
            -- the window the later slot will be in
            SELECT * INTO win FROM budget_window(s, budget_window_s + p_margin);
        END IF;
        IF s > now_at + make_interval(secs => p_ahead) THEN
            RETURN QUERY SELECT 'wait', s, s - make_interval(secs => p_ahead), NULL::bigint,
                                NULL::text[];
            RETURN;
        END IF;
        IF NOT p_interactive THEN
            -- the classes with runnable work in any lane: a background collector leaves a
            -- waiting interactive request's floor free, but only while an interactive
            -- collector is serving (else nothing could use the floor)
            -- (only the classes with a floor matter: budget_allowed_classes asks of no
            -- other; one probe of ix_jobs_demand each, not a pass over every pending job)
            serving := EXISTS (SELECT 1 FROM collectors c
                               WHERE c.lane = 'interactive' AND c.enabled AND NOT c.drained
                                 AND c.retired_at IS NULL AND c.health = 'healthy');
            SELECT COALESCE(array_agg(f.cls), '{}') INTO demand
            FROM unnest(ARRAY['interactive', 'bootstrap', 'retry']) AS f(cls)
            WHERE EXISTS (SELECT 1 FROM collection_jobs j
                          WHERE j.lease_token IS NULL AND j.status = 'pending'
                            AND (CASE WHEN j.last_error_at IS NOT NULL THEN 'retry'
                                      ELSE j.priority_class END) = f.cls
                            AND j.eligible_at <= clock_timestamp()
                            AND (j.lane <> 'interactive' OR serving));
        END IF;
        allowed := budget_allowed_classes(budget, win.used, demand, p_policy, p_interactive);
        IF cardinality(allowed) = 0 OR (counting AND NOT job_class = ANY(allowed)) THEN
            RETURN QUERY SELECT 'wait', s, now_at + interval '1 second', NULL::bigint,
                                allowed;
            RETURN;
        END IF;
    END IF;
    IF NOT counting THEN
        RETURN QUERY SELECT 'open', s, NULL::timestamptz, NULL::bigint, allowed;
        RETURN;
    END IF;

    -- counted before anything is sent; the gate moves past the slot (slower while a throttle
    -- streak decays: gates/admission.py effective_interval)
    INSERT INTO request_ledger (slot_at, egress_key, budget_class, collector_uuid, job_id,
                                resource)
    VALUES (s, p_egress, job_class, p_collector, NULLIF(p_job_id, 0), job_resource)
    RETURNING request_id INTO counted_id;
    UPDATE egress_gates
    SET next_slot_at = s + make_interval(secs => g.min_interval_seconds
                                                 * (1 + 0.5 * g.throttle_streak) + p_margin),
        requests_total = requests_total + 1, updated_at = now()
    WHERE egress_key = p_egress;
    RETURN QUERY SELECT 'counted', s, NULL::timestamptz, counted_id, allowed;
END
$$;
