-- compatible-from: 0014
-- The queue engine's transitions as server-side calls, a one-row-per-lease event log, a HOT
-- start and coverage counters off the hot path (docs/architecture.md, "The job state machine").
-- A contract step: builds before it read claimed/started rows and the counters alone.
--
-- 1. A HOT start. No index of collection_jobs names `status` any more (the partial indexes key
--    on whether a lease is held, which claimed → running does not change), so the start, which
--    writes status, started_at and lease_expires_at only, is a heap-only update.
DROP INDEX ix_jobs_claim;
CREATE INDEX ix_jobs_claim ON collection_jobs (lane, rank, job_id) WHERE lease_token IS NULL;
DROP INDEX ix_jobs_leased;
CREATE INDEX ix_jobs_leased ON collection_jobs (lane, collector_uuid)
    WHERE lease_token IS NOT NULL;
-- The same rule as before, in fewer nodes: PostgreSQL re-reads a table's CHECKs from their text
-- on every statement (migration 0002), so a short one costs less on every transition.
ALTER TABLE collection_jobs DROP CONSTRAINT jobs_lease_shape;
ALTER TABLE collection_jobs ADD CONSTRAINT jobs_lease_shape CHECK (
    num_nonnulls(collector_uuid, lease_token, claimed_at, lease_expires_at)
        = CASE WHEN status = 'pending' THEN 0 ELSE 4 END
    AND (started_at IS NOT NULL) = (status = 'running')
    AND (status <> 'running' OR started_at >= claimed_at));

-- 2. One event row per lease instead of three. The row that ends a lease (succeeded, failed,
--    released, lease_expired) carries the lease's claimed and started instants; the view
--    collection_events_log gives the per-transition log back (claimed, started, then the row
--    itself), ordered by (occurred_at, event_id, ord) or, per job, (event_id, ord).
ALTER TABLE collection_events ADD COLUMN claimed_at timestamptz,
                              ADD COLUMN started_at timestamptz;

-- The rows of the log one stored event stands for: the claim, the start (with the wait between
-- them) and the event itself. The one place the expansion is written (the view, the operator's
-- search).
CREATE FUNCTION bf4ps_event_log_rows(e collection_events)
RETURNS TABLE (ord smallint, occurred_at timestamptz, event_type text, wait_ms integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT x.ord, x.at, x.kind, x.wait_ms
    FROM (VALUES (0::smallint, e.claimed_at, 'claimed'::text, NULL::integer),
                 (1::smallint, e.started_at, 'started'::text,
                  (extract(epoch FROM e.started_at - e.claimed_at) * 1000)::integer),
                 (2::smallint, e.occurred_at, e.event_type::text, e.wait_ms::integer))
         AS x(ord, at, kind, wait_ms)
    WHERE x.at IS NOT NULL
$$;

CREATE VIEW collection_events_log AS
SELECT e.event_id, x.ord, x.occurred_at, x.event_type, e.collector_uuid, e.collector_name,
       e.hostname, e.egress_key, e.lane, e.job_id, e.lease_token, e.soldier_id, e.persona_id,
       e.platform, e.resource, e.priority_class, e.attempt_number,
       CASE WHEN x.ord = 2 THEN e.result END AS result,
       CASE WHEN x.ord = 2 THEN e.duration_ms END AS duration_ms,
       x.wait_ms,
       CASE WHEN x.ord = 2 THEN e.http_status END AS http_status,
       CASE WHEN x.ord = 2 THEN e.error_class END AS error_class,
       CASE WHEN x.ord = 2 THEN e.error_message END AS error_message,
       CASE WHEN x.ord = 2 THEN e.details END AS details
FROM collection_events e
CROSS JOIN LATERAL bf4ps_event_log_rows(e) x;

-- Existing rows: a lease's claimed and started rows fold into the row that ended it, and go.
-- Those of a lease still held go too (its end will carry them, from the job). A claimed or
-- started row whose lease ended without a row of its own stays as it is (the view shows it).
CREATE TEMPORARY TABLE lease_ends ON COMMIT DROP AS
SELECT DISTINCT ON (t.lease_token) t.event_id, t.occurred_at, t.lease_token, t.job_id
FROM collection_events t
WHERE t.lease_token IS NOT NULL
  AND t.event_type IN ('succeeded', 'failed', 'released', 'lease_expired')
ORDER BY t.lease_token, t.event_id;
CREATE INDEX ON lease_ends (lease_token);

UPDATE collection_events t
SET claimed_at = f.claimed_at, started_at = f.started_at
FROM (SELECT l.event_id, l.occurred_at,
             min(e.occurred_at) FILTER (WHERE e.event_type = 'claimed') AS claimed_at,
             min(e.occurred_at) FILTER (WHERE e.event_type = 'started') AS started_at
      FROM lease_ends l
      JOIN collection_events e ON e.job_id = l.job_id AND e.lease_token = l.lease_token
                              AND e.event_type IN ('claimed', 'started')
      GROUP BY l.event_id, l.occurred_at) f
WHERE t.event_id = f.event_id AND t.occurred_at = f.occurred_at;

DELETE FROM collection_events e
WHERE e.event_type IN ('claimed', 'started') AND e.lease_token IS NOT NULL
  AND (EXISTS (SELECT 1 FROM lease_ends l WHERE l.lease_token = e.lease_token)
       OR EXISTS (SELECT 1 FROM collection_jobs j WHERE j.lease_token = e.lease_token));

-- 3. The log's indexes, for one row per lease: a persona's history goes through its soldier
--    (soldiers (persona_id, platform) → ix_events_soldier); the type index keeps the rare types
--    (lease recovery, fencing, health, throttles), the resource index all but the common
--    outcomes, which ix_events_lane_outcome (resource, lane, time) already serves. A succeeded
--    row now updates 6 indexes (primary key, time, soldier, collector, job, lane outcome)
--    instead of 9.
DROP INDEX ix_events_persona;
DROP INDEX ix_events_type;
CREATE INDEX ix_events_type ON collection_events (event_type, occurred_at DESC)
    WHERE event_type NOT IN ('succeeded', 'failed', 'retry_scheduled', 'created');
DROP INDEX ix_events_resource;
CREATE INDEX ix_events_resource ON collection_events (resource, event_type, occurred_at DESC)
    WHERE resource IS NOT NULL AND event_type NOT IN ('succeeded', 'failed');

-- 4. Coverage counters off the hot path: the state table's triggers append each change to an
--    unindexed delta table (one row per change: the status a row left and the one it entered;
--    no lock on a shared counter row held through a commit's WAL wait); the scheduler folds
--    the deltas into the counters every tick. Readers read coverage_totals (the counters plus
--    the deltas not yet folded), so coverage stays exact at every snapshot.
CREATE TABLE coverage_deltas (
    resource text NOT NULL,
    shard smallint NOT NULL,
    from_status text,          -- NULL: a new row
    to_status text,            -- NULL: a deleted row
    n bigint NOT NULL
);

CREATE VIEW coverage_totals AS
SELECT resource, status, shard, n FROM coverage_counters
UNION ALL
SELECT d.resource, x.status, d.shard, x.n
FROM coverage_deltas d
CROSS JOIN LATERAL (VALUES (d.to_status, d.n), (d.from_status, -d.n)) AS x(status, n)
WHERE x.status IS NOT NULL;

-- Bulk inserts and deletes (intake, tests) stay statement triggers: one delta row per group.
CREATE OR REPLACE FUNCTION bf4ps_coverage_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO coverage_deltas (resource, shard, to_status, n)
        SELECT resource, (soldier_id % 16)::smallint, status, count(*)
          FROM new_rows GROUP BY 1, 2, 3;
    ELSE
        INSERT INTO coverage_deltas (resource, shard, from_status, n)
        SELECT resource, (soldier_id % 16)::smallint, status, count(*)
          FROM old_rows GROUP BY 1, 2, 3;
    END IF;
    RETURN NULL;
END;
$$;
-- An update (a finalize's, a sweep's) appends one row, only when the row changes its count.
DROP TRIGGER coverage_update ON collection_state;
CREATE FUNCTION bf4ps_coverage_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO coverage_deltas (resource, shard, from_status, to_status, n)
    VALUES (NEW.resource, (NEW.soldier_id % 16)::smallint, OLD.status, NEW.status, 1);
    RETURN NULL;
END;
$$;
CREATE TRIGGER coverage_change AFTER UPDATE OF status ON collection_state
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION bf4ps_coverage_change();
-- (a state row never changes its soldier or resource: the primary key)

-- The scheduler's fold: the deltas it sees move into the counters in one transaction (a reader
-- sees each in one place or the other, never both or neither). Returns the rows folded.
CREATE FUNCTION bf4ps_coverage_fold() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
BEGIN
    WITH d AS (DELETE FROM coverage_deltas RETURNING *),
    moves AS (SELECT d.resource, x.status, d.shard, x.n
              FROM d CROSS JOIN LATERAL (VALUES (d.to_status, d.n), (d.from_status, -d.n))
                   AS x(status, n)
              WHERE x.status IS NOT NULL),
    agg AS (SELECT resource, status, shard, sum(n) AS n FROM moves GROUP BY 1, 2, 3),
    up AS (INSERT INTO coverage_counters AS c (resource, status, shard, n)
           SELECT resource, status, shard, n FROM agg ORDER BY 1, 2, 3
           ON CONFLICT (resource, status, shard) DO UPDATE SET n = c.n + excluded.n)
    SELECT count(*) INTO folded FROM d;
    RETURN folded;
END;
$$;
SELECT bf4ps_coverage_fold();

GRANT INSERT ON coverage_deltas TO bf4ps_collector, bf4ps_web, bf4ps_scheduler;
GRANT DELETE ON coverage_deltas TO bf4ps_scheduler;
GRANT SELECT ON coverage_deltas, coverage_totals, collection_events_log
    TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;

-- 5. The transitions, one call each. The claim's optional filters (one soldier, for the
--    interactive lane's chaining; the budget's classes), as CASE expressions: an inlined SQL
--    function, so the planner still sees them, and the cached generic plans keep walking the
--    claim indexes in rank order (with `$n IS NULL OR ...` it chose a sequential scan and a
--    sort, or re-planned every call).
CREATE FUNCTION bf4ps_claim_wanted(soldier bigint, klass text, retrying boolean,
                                   p_soldier bigint, p_classes text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_soldier IS NULL THEN true ELSE soldier = p_soldier END
       AND CASE WHEN p_classes IS NULL THEN true
                ELSE (CASE WHEN retrying THEN 'retry' ELSE klass END) = ANY(p_classes) END
$$;

-- What a claim hands out:
CREATE TYPE queue_claimed AS (
    finished bigint,          -- queue_succeed: the job it finished (NULL: fenced out)
    gate_wait_until timestamptz, -- queue_succeed with a gate: the look said wait until then
    job_id bigint, soldier_id bigint, resource text, lane text, priority_class text,
    rank timestamptz, reason text, attempt_count integer, is_retry boolean, lease_token uuid,
    claimed_at timestamptz, started_at timestamptz, lease_expires_at timestamptz,
    request_id uuid, lookup_name text, lookup_platform text, reclaimed boolean,
    persona_id bigint, platform text, current_name text);

-- The claim: the lane's first expired lease by rank if any (reclaimed at once, recording
-- lease_expired with the old lease's instants and reclaimed, both at the new claim's instant,
-- so the log reads lease_expired, reclaimed, claimed), else its first pending job by
-- rank; locked with SKIP LOCKED, handed a fresh lease token. With p_start (a slot open now)
-- the job goes straight to running, claimed_at = started_at. No event: the claim's instants
-- travel on the row that ends the lease.
CREATE FUNCTION queue_claim(p_collector uuid, p_lane text, p_lease double precision,
                            p_soldier bigint DEFAULT NULL, p_classes text[] DEFAULT NULL,
                            p_start boolean DEFAULT false)
RETURNS SETOF queue_claimed
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    old collection_jobs;
BEGIN
    SELECT * INTO old FROM collection_jobs j
    WHERE j.lane = p_lane AND j.lease_token IS NOT NULL
      AND j.lease_expires_at <= clock_timestamp()
      AND bf4ps_claim_wanted(j.soldier_id, j.priority_class, j.last_error_at IS NOT NULL,
                             p_soldier, p_classes)
    ORDER BY j.rank, j.job_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED;

    RETURN QUERY
    WITH claimed AS (
        UPDATE collection_jobs j
        SET status = CASE WHEN p_start THEN 'running' ELSE 'claimed' END,
            collector_uuid = p_collector, lease_token = gen_random_uuid(),
            claimed_at = clock_timestamp(),
            started_at = CASE WHEN p_start THEN clock_timestamp() END,
            lease_expires_at = clock_timestamp() + make_interval(secs => p_lease),
            attempt_count = j.attempt_count + 1, updated_at = clock_timestamp()
        WHERE j.job_id = COALESCE(old.job_id, (
                SELECT f.job_id FROM collection_jobs f
                WHERE f.lane = p_lane AND f.lease_token IS NULL
                  AND f.eligible_at <= clock_timestamp()
                  AND bf4ps_claim_wanted(f.soldier_id, f.priority_class,
                                         f.last_error_at IS NOT NULL, p_soldier, p_classes)
                ORDER BY f.rank, f.job_id
                LIMIT 1
                FOR UPDATE SKIP LOCKED))
          AND EXISTS (SELECT 1 FROM collectors me
                      WHERE me.collector_uuid = p_collector AND me.enabled AND NOT me.drained
                        AND me.retired_at IS NULL)
        RETURNING j.*
    )
    SELECT NULL::bigint, NULL::timestamptz, c.job_id, c.soldier_id, c.resource::text,
           c.lane::text, c.priority_class::text, c.rank, c.reason::text,
           c.attempt_count::integer, c.last_error_at IS NOT NULL, c.lease_token, c.claimed_at,
           c.started_at, c.lease_expires_at, c.request_id, c.lookup_name::text,
           c.lookup_platform::text, old.job_id IS NOT NULL, s.persona_id, s.platform::text,
           s.current_name::text
    FROM claimed c LEFT JOIN soldiers s ON s.soldier_id = c.soldier_id;

    IF FOUND AND old.job_id IS NOT NULL THEN
        INSERT INTO collection_events (
            occurred_at, event_type, collector_uuid, collector_name, hostname, egress_key,
            lane, job_id, lease_token, soldier_id, persona_id, platform, resource,
            priority_class, attempt_number, claimed_at, started_at)
        SELECT j.claimed_at, kind.event_type,
               CASE WHEN kind.ord = 1 THEN old.collector_uuid ELSE p_collector END,
               who.collector_name, who.hostname, who.egress_key, j.lane, j.job_id,
               CASE WHEN kind.ord = 1 THEN old.lease_token ELSE j.lease_token END,
               j.soldier_id, s.persona_id, COALESCE(s.platform, j.lookup_platform), j.resource,
               j.priority_class, j.attempt_count,
               CASE WHEN kind.ord = 1 THEN old.claimed_at END,
               CASE WHEN kind.ord = 1 THEN old.started_at END
        FROM collection_jobs j
        CROSS JOIN (VALUES ('lease_expired', 1), ('reclaimed', 2)) AS kind(event_type, ord)
        LEFT JOIN collectors who ON who.collector_uuid = CASE WHEN kind.ord = 1
                                                         THEN old.collector_uuid
                                                         ELSE p_collector END
        LEFT JOIN soldiers s ON s.soldier_id = j.soldier_id
        WHERE j.job_id = old.job_id
        ORDER BY kind.ord;
    END IF;
END
$$;

-- The fenced success and, when the collector would claim anyway, its next claim, in one call
-- and one transaction, as statements in this fixed order: the fenced DELETE of job N first (it
-- takes the row lock on the caller's own job before any claim scan can lock another's row, so
-- two collectors finishing and claiming at once cannot deadlock, unlike a single statement
-- whose claim may run first), the collection state and the succeeded event (with the lease's
-- claimed/started instants), then the claim of N+1. Callers that write statistics run them
-- earlier in the same transaction (after lock_owned_job_now) and roll back when `finished` is
-- NULL (the lease was not ours). With p_gate ({egress, interactive, margin, ahead,
-- connect_lead, policy}: admission_slot's look) the next claim is made only when the egress
-- opens within the claim horizon, for the budget classes it allows; otherwise
-- gate_wait_until says when to look again. Always one row.
CREATE FUNCTION queue_succeed(p_job bigint, p_collector uuid, p_token uuid,
                              p_freshness double precision, p_http integer, p_duration integer,
                              p_details jsonb, p_next boolean DEFAULT false,
                              p_lane text DEFAULT NULL, p_lease double precision DEFAULT NULL,
                              p_soldier bigint DEFAULT NULL, p_start boolean DEFAULT false,
                              p_gate jsonb DEFAULT NULL)
RETURNS SETOF queue_claimed
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    fin bigint;
    r queue_claimed;
    look record;
    classes text[];
BEGIN
    WITH gone AS (
        DELETE FROM collection_jobs d
        WHERE d.job_id = p_job AND d.collector_uuid = p_collector AND d.lease_token = p_token
          AND d.status = 'running' AND d.lease_expires_at > clock_timestamp()
        RETURNING d.*
    ), state AS (
        UPDATE collection_state cs
        SET status = 'current', last_attempt_at = clock_timestamp(),
            last_success_at = clock_timestamp(),
            next_due_at = clock_timestamp() + make_interval(secs => p_freshness),
            next_attempt_at = NULL, consecutive_failures = 0,
            attempts_total = cs.attempts_total + 1, updated_at = clock_timestamp()
        FROM gone
        WHERE cs.soldier_id = gone.soldier_id AND cs.resource = gone.resource
    ), ev AS (
        INSERT INTO collection_events (
            event_type, collector_uuid, collector_name, hostname, egress_key, lane, job_id,
            lease_token, soldier_id, persona_id, platform, resource, priority_class,
            attempt_number, result, http_status, duration_ms, details, claimed_at, started_at)
        SELECT 'succeeded', g.collector_uuid, c.collector_name, c.hostname, c.egress_key,
               g.lane, g.job_id, g.lease_token, g.soldier_id, s.persona_id,
               COALESCE(s.platform, g.lookup_platform), g.resource, g.priority_class,
               g.attempt_count, 'ok', p_http, p_duration, p_details, g.claimed_at, g.started_at
        FROM gone g
        JOIN collectors c ON c.collector_uuid = g.collector_uuid
        LEFT JOIN soldiers s ON s.soldier_id = g.soldier_id
    )
    SELECT gone.job_id INTO fin FROM gone;

    IF fin IS NOT NULL AND p_next THEN
        IF p_gate IS NOT NULL THEN
            SELECT * INTO look FROM admission_slot(
                p_gate ->> 'egress', p_collector, NULL, NULL, (p_gate ->> 'interactive')::boolean,
                (p_gate ->> 'margin')::double precision, (p_gate ->> 'ahead')::double precision,
                (p_gate ->> 'connect_lead')::double precision, p_gate -> 'policy');
            IF look.outcome <> 'open' THEN
                r.finished := fin;
                r.gate_wait_until := look.wait_until;
                RETURN NEXT r;
                RETURN;
            END IF;
            classes := look.classes;
        END IF;
        FOR r IN SELECT * FROM queue_claim(p_collector, p_lane, p_lease, p_soldier, classes,
                                           p_start) LOOP
            r.finished := fin;
            RETURN NEXT r;
        END LOOP;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    r := NULL;
    r.finished := fin;
    RETURN NEXT r;
END
$$;
