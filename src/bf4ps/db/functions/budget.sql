-- The fleet budget: a ceiling of requests per window over the whole fleet, shared by class.
-- `budget_window` counts the window from `budget_buckets` (the ledger's counted requests, view
-- `counted_requests`, per class in seconds and minutes) and the part-second at the window's edge
-- from the ledger itself, so its cost does not grow with the window; `budget_allowed_classes`
-- says which classes may send now given their shares and demand. `bf4ps_budget_seed` (a
-- collector's first start) and `bf4ps_budget_set` (the operator's `bf4ps budget set`) write the
-- policy, audited.
-- The buckets are written by triggers on request_ledger in the same statement as the ledger
-- row, its unsent marking and its pruning (`bf4ps_budget_count`, `bf4ps_budget_bump`,
-- `bf4ps_budget_add`), and rebuilt from the ledger (`bf4ps_budget_rebuild`) when this file is
-- applied and whenever the restore guard's row records a new server run, a restore or a rewind
-- (trigger `budget_rebuild`). They are unlogged (no WAL for a copy of what the ledger holds):
-- crash recovery empties them and their ready row, and the first admission or ledger write after
-- that makes them again (`bf4ps_budget_ready`) before it reads or changes them.
-- Calls no other room; admission reads it.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_budget_seed(p_requests integer, p_window_seconds double precision, p_reason text)
 RETURNS SETOF fleet_budget
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM set_config('bf4ps.change_reason', left(p_reason, 200), true);
    RETURN QUERY
    UPDATE fleet_budget b
    SET requests = p_requests, window_seconds = p_window_seconds, configured_at = now(),
        updated_at = now()
    WHERE b.budget_id = 1 AND b.configured_at IS NULL
    RETURNING b.*;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_seed(p_requests integer, p_window_seconds double precision, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_budget_seed(p_requests integer, p_window_seconds double precision, p_reason text) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_budget_set(p_requests integer, p_window_seconds double precision, p_configured boolean, p_reason text)
 RETURNS SETOF fleet_budget
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM set_config('bf4ps.change_reason', COALESCE(left(p_reason, 200), ''), true);
    RETURN QUERY
    UPDATE fleet_budget b
    SET requests = p_requests, window_seconds = p_window_seconds,
        configured_at = CASE WHEN p_configured THEN now() ELSE b.configured_at END,
        updated_at = now()
    WHERE b.budget_id = 1
    RETURNING b.*;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_set(p_requests integer, p_window_seconds double precision, p_configured boolean, p_reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_budget_set(p_requests integer, p_window_seconds double precision, p_configured boolean, p_reason text) TO bf4ps_operator;

CREATE OR REPLACE FUNCTION budget_allowed_classes(n integer, used jsonb, demand text[], policy jsonb, interactive_lane boolean)
 RETURNS text[]
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
DECLARE
    total double precision;
    cls text;
    others double precision;
    allowed text[] := '{}';
BEGIN
    SELECT COALESCE(sum(value::double precision), 0) INTO total FROM jsonb_each_text(used);
    IF total >= n THEN
        RETURN allowed;
    END IF;
    IF interactive_lane THEN
        RETURN ARRAY['interactive', 'active', 'recent', 'bootstrap', 'retry'];
    END IF;
    FOREACH cls IN ARRAY ARRAY['active', 'recent', 'bootstrap', 'retry'] LOOP
        -- the active cap holds the rest for the other classes only while one of them has
        -- runnable work: an unused share is lent, as every floor is
        CONTINUE WHEN cls = 'active' AND COALESCE((used ->> 'active')::double precision, 0)
                                         >= (policy ->> 'cap_active')::double precision * n
                      AND demand && ARRAY['interactive', 'recent', 'bootstrap', 'retry'];
        SELECT COALESCE(sum(GREATEST(0, (policy ->> ('floor_' || f))::double precision * n
                                        - COALESCE((used ->> f)::double precision, 0))), 0)
        INTO others
        FROM unnest(ARRAY['interactive', 'bootstrap', 'retry']) AS f
        WHERE f <> cls AND f = ANY(demand);
        IF n - total - 1 >= others - 1e-9 THEN
            allowed := allowed || cls;
        END IF;
    END LOOP;
    RETURN allowed;
END
$function$;

-- The fleet budget's class shares, the database's policy (`bf4ps config set budget_*`, the
-- scheduler_policy table): the active class's cap and the floors kept free for interactive,
-- bootstrap and retry work while it waits, each within 0-1. The defaults are bf4ps.policy's
-- (tests/db/test_admission_trust.py holds them equal).
CREATE OR REPLACE FUNCTION budget_shares()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
    SELECT jsonb_object_agg(d.share, LEAST(1, GREATEST(0, COALESCE(
               CASE WHEN jsonb_typeof(p.value) = 'number' THEN (p.value #>> '{}')::float8 END,
               d.fallback))))
    FROM (VALUES ('cap_active', 0.75), ('floor_interactive', 0.25),
                 ('floor_bootstrap', 0.20), ('floor_retry', 0.05)) AS d(share, fallback)
    LEFT JOIN scheduler_policy p ON p.key = 'budget_' || d.share
$function$;

CREATE OR REPLACE FUNCTION bf4ps_budget_second(p_at timestamp with time zone)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT floor(extract(epoch FROM p_at))::bigint
$function$;

CREATE OR REPLACE FUNCTION bf4ps_budget_minute(p_second bigint)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT p_second - ((p_second % 60) + 60) % 60
$function$;

-- the counted requests with a slot after the edge (slot - span), as the ledger has them: the
-- edge's own second from the ledger (its index on slot_at; at most a second of rows), then the
-- second buckets up to the next whole minute, then the minute buckets from there on (at most
-- 59 + 60 bucket rows a class for an hour): every second after the edge is counted once
CREATE OR REPLACE FUNCTION budget_window(slot timestamp with time zone, span double precision, OUT used jsonb, OUT total integer, OUT last_slot timestamp with time zone)
 RETURNS record
 LANGUAGE sql
 STABLE
AS $function$
    WITH edge AS (
        SELECT x.e, bf4ps_budget_second(x.e) + 1 AS s1,
               bf4ps_budget_minute(bf4ps_budget_second(x.e) + 60) AS m1
        FROM (SELECT slot - make_interval(secs => span)) x(e)
    ), counted AS (
        SELECT l.budget_class, count(*)::integer AS n
        FROM edge, request_ledger l
        WHERE l.slot_at > edge.e AND l.slot_at < to_timestamp(edge.s1) AND l.unsent_at IS NULL
        GROUP BY l.budget_class
        UNION ALL
        SELECT b.budget_class, b.n FROM edge, budget_buckets b
        WHERE b.span = 1 AND b.starts_at >= edge.s1 AND b.starts_at < edge.m1
        UNION ALL
        SELECT b.budget_class, b.n FROM edge, budget_buckets b
        WHERE b.span = 60 AND b.starts_at >= edge.m1
    ), by_class AS (
        SELECT c.budget_class, sum(c.n)::integer AS n FROM counted c
        GROUP BY c.budget_class HAVING sum(c.n) > 0
    )
    SELECT COALESCE((SELECT jsonb_object_agg(k.budget_class, k.n) FROM by_class k), '{}'),
           COALESCE((SELECT sum(k.n)::integer FROM by_class k), 0),
           (SELECT l.slot_at FROM request_ledger l  -- the newest counted: a step back the index
            WHERE l.slot_at > (SELECT edge.e FROM edge) AND l.unsent_at IS NULL
            ORDER BY l.slot_at DESC LIMIT 1)
$function$;

-- the k-th newest counted slot (NULL when fewer are counted): the minute that holds it from the
-- minute buckets (newest first, summed over classes), the second within that minute from the
-- second buckets, then the row within that second from the ledger's slot index — what
-- `ORDER BY slot_at DESC OFFSET k - 1` over every counted request gives, at a cost that does
-- not grow with k (a full hour's window is admission's every call once the budget binds)
CREATE OR REPLACE FUNCTION budget_nth_newest(k integer)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    m bigint;
    s bigint;
    newer bigint;  -- counted requests newer than the minute (then the second) found
    in_second bigint;
BEGIN
    IF k < 1 THEN
        RETURN NULL;
    END IF;
    SELECT c.starts_at, c.upto - c.n INTO m, newer
    FROM (SELECT p.starts_at, p.n, sum(p.n) OVER (ORDER BY p.starts_at DESC) AS upto
          FROM (SELECT b.starts_at, sum(b.n) AS n FROM budget_buckets b
                WHERE b.span = 60 GROUP BY b.starts_at) p) c
    WHERE c.upto >= k ORDER BY c.starts_at DESC LIMIT 1;
    IF m IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT c.starts_at, newer + c.upto - c.n INTO s, newer
    FROM (SELECT p.starts_at, p.n, sum(p.n) OVER (ORDER BY p.starts_at DESC) AS upto
          FROM (SELECT b.starts_at, sum(b.n) AS n FROM budget_buckets b
                WHERE b.span = 1 AND b.starts_at >= m AND b.starts_at < m + 60
                GROUP BY b.starts_at) p) c
    WHERE newer + c.upto >= k ORDER BY c.starts_at DESC LIMIT 1;
    in_second := k - newer;  -- the in_second-th newest of that second
    RETURN (SELECT l.slot_at FROM request_ledger l
            WHERE l.slot_at >= to_timestamp(s) AND l.slot_at < to_timestamp(s + 1)
              AND l.unsent_at IS NULL
            ORDER BY l.slot_at DESC OFFSET in_second - 1 LIMIT 1);
END
$function$;
REVOKE ALL ON FUNCTION budget_nth_newest(k integer) FROM PUBLIC;

-- counted requests in (second, class) added (+1) or taken away (-1), as the net change of each
-- second's bucket and its minute's
CREATE OR REPLACE FUNCTION bf4ps_budget_keys(p_seconds bigint[], p_classes text[], p_deltas integer[])
 RETURNS TABLE(span smallint, starts_at bigint, budget_class text, n integer)
 LANGUAGE sql
 IMMUTABLE
AS $function$
    WITH d AS (
        SELECT u.sec, u.cls, u.delta FROM unnest(p_seconds, p_classes, p_deltas) u(sec, cls, delta)
    ), k AS (
        SELECT 60::smallint AS span, bf4ps_budget_minute(d.sec) AS starts_at, d.cls,
               sum(d.delta)::integer AS n
        FROM d GROUP BY 1, 2, 3
        UNION ALL
        SELECT 1::smallint, d.sec, d.cls, sum(d.delta)::integer FROM d GROUP BY 1, 2, 3
    )
    SELECT k.span, k.starts_at, k.cls, k.n FROM k WHERE k.n <> 0
    ORDER BY k.span DESC, k.starts_at, k.cls
$function$;

-- the changes applied: each bucket that exists updated in place (heap-only: `n` is in no
-- index; no row-lock record as an upsert's conflict would write), then the ones still missing
-- inserted (an upsert, for a writer that inserts the same bucket meanwhile); a bucket that
-- empties is deleted, and one missing or going below zero fails the statement (the buckets and
-- the ledger would disagree: the ceiling is not bent to carry on)
CREATE OR REPLACE FUNCTION bf4ps_budget_add(p_seconds bigint[], p_classes text[], p_deltas integer[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    spans smallint[];
    starts bigint[];
    classes text[];
    ns integer[];
    hit text[];  -- the buckets updated in place
BEGIN
    SELECT array_agg(k.span), array_agg(k.starts_at), array_agg(k.budget_class), array_agg(k.n)
    INTO spans, starts, classes, ns
    FROM bf4ps_budget_keys(p_seconds, p_classes, p_deltas) k;
    IF spans IS NULL THEN
        RETURN;
    END IF;
    WITH up AS (
        UPDATE budget_buckets b SET n = b.n + k.n
        FROM unnest(spans, starts, classes, ns) k(span, starts_at, budget_class, n)
        WHERE b.span = k.span AND b.starts_at = k.starts_at AND b.budget_class = k.budget_class
        RETURNING b.span, b.starts_at, b.budget_class
    )
    SELECT array_agg(up.span::text || ':' || up.starts_at || ':' || up.budget_class) INTO hit
    FROM up;
    IF cardinality(hit) IS DISTINCT FROM cardinality(spans) THEN
        IF EXISTS (SELECT 1 FROM unnest(spans, starts, classes, ns) k(span, starts_at, cls, n)
                   WHERE k.n < 0 AND NOT (k.span::text || ':' || k.starts_at || ':' || k.cls)
                                         = ANY(COALESCE(hit, '{}'))) THEN
            RAISE EXCEPTION 'a counted request is taken from a budget bucket that does not '
                'hold it (the buckets disagree with request_ledger: SELECT '
                'bf4ps_budget_rebuild())' USING ERRCODE = 'check_violation';
        END IF;
        -- the buckets not there when updated: inserted, or added to where a writer inserted
        -- one since (its commit came after the update's look)
        INSERT INTO budget_buckets AS b (span, starts_at, budget_class, n)
        SELECT k.span, k.starts_at, k.cls, k.n
        FROM unnest(spans, starts, classes, ns) k(span, starts_at, cls, n)
        WHERE NOT (k.span::text || ':' || k.starts_at || ':' || k.cls) = ANY(COALESCE(hit, '{}'))
        ON CONFLICT (span, starts_at, budget_class) DO UPDATE SET n = b.n + excluded.n;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(ns) x WHERE x < 0) THEN
        DELETE FROM budget_buckets b
        USING unnest(spans, starts, classes, ns) k(span, starts_at, budget_class, n)
        WHERE k.n < 0 AND b.span = k.span AND b.starts_at = k.starts_at
          AND b.budget_class = k.budget_class AND b.n = 0;
    END IF;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_add(p_seconds bigint[], p_classes text[], p_deltas integer[]) FROM PUBLIC;

-- one counted request added in (second, class), admission's one row a count: its minute's and
-- its second's buckets, in that order (every writer locks shared buckets in the same order),
-- each updated in place when it exists (heap-only: `n` is in no index; no row-lock record as
-- an upsert's conflict writes) and inserted once a second otherwise
CREATE OR REPLACE FUNCTION bf4ps_budget_bump(p_second bigint, p_class text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    w smallint;
    k bigint;
BEGIN
    FOREACH w IN ARRAY ARRAY[60, 1]::smallint[] LOOP
        k := CASE w WHEN 60 THEN bf4ps_budget_minute(p_second) ELSE p_second END;
        UPDATE budget_buckets b SET n = b.n + 1
        WHERE b.span = w AND b.starts_at = k AND b.budget_class = p_class;
        IF NOT FOUND THEN
            INSERT INTO budget_buckets AS b (span, starts_at, budget_class, n)
            VALUES (w, k, p_class, 1)
            ON CONFLICT (span, starts_at, budget_class) DO UPDATE SET n = b.n + 1;
        END IF;
    END LOOP;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_bump(p_second bigint, p_class text) FROM PUBLIC;

-- the trigger on request_ledger: what a statement added to or took from the counted requests
-- (an insert: admission's one row by the short way; an unsent marking or any other update; a
-- prune), in the same statement; many rows at once are summed per bucket first (one update of
-- a bucket a statement, not one a row)
CREATE OR REPLACE FUNCTION bf4ps_budget_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    secs bigint[];
    classes text[];
    deltas integer[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM budget_buckets;
        RETURN NULL;
    ELSIF NOT bf4ps_budget_ready() THEN
        RETURN NULL;  -- made again from the ledger, this statement's rows included
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(bf4ps_budget_second(r.slot_at)), array_agg(r.budget_class),
               array_agg(1)
        INTO secs, classes, deltas
        FROM new_rows r WHERE r.unsent_at IS NULL;
        IF cardinality(secs) = 1 THEN
            PERFORM bf4ps_budget_bump(secs[1], classes[1]);
            RETURN NULL;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(bf4ps_budget_second(r.slot_at)), array_agg(r.budget_class),
               array_agg(-1)
        INTO secs, classes, deltas
        FROM old_rows r WHERE r.unsent_at IS NULL;
    ELSE
        SELECT array_agg(bf4ps_budget_second(c.slot_at)), array_agg(c.budget_class),
               array_agg(c.delta)
        INTO secs, classes, deltas
        FROM (SELECT r.slot_at, r.budget_class, 1 AS delta FROM new_rows r
              WHERE r.unsent_at IS NULL
              UNION ALL
              SELECT r.slot_at, r.budget_class, -1 FROM old_rows r
              WHERE r.unsent_at IS NULL) c;
    END IF;
    IF secs IS NOT NULL THEN
        PERFORM bf4ps_budget_add(secs, classes, deltas);
    END IF;
    RETURN NULL;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_count() FROM PUBLIC;

-- the buckets made again from the ledger, whole (a new server run, a restore, this file
-- applied); the lock waits for every writer whose buckets are not yet committed and holds off
-- the next until the rebuild commits (readers go on, seeing the buckets as they were)
CREATE OR REPLACE FUNCTION bf4ps_budget_rebuild()
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    counted bigint;
BEGIN
    LOCK TABLE budget_buckets IN EXCLUSIVE MODE;
    DELETE FROM budget_buckets;
    WITH d AS (
        SELECT bf4ps_budget_second(l.slot_at) AS sec, l.budget_class AS cls, count(*) AS n
        FROM request_ledger l WHERE l.unsent_at IS NULL GROUP BY 1, 2
    ), k AS (
        SELECT 60::smallint AS span, bf4ps_budget_minute(d.sec) AS starts_at, d.cls,
               sum(d.n) AS n
        FROM d GROUP BY 1, 2, 3
        UNION ALL
        SELECT 1::smallint, d.sec, d.cls, d.n FROM d
    )
    INSERT INTO budget_buckets (span, starts_at, budget_class, n)
    SELECT k.span, k.starts_at, k.cls, k.n FROM k ORDER BY 1, 2, 3;
    INSERT INTO budget_buckets_ready AS r DEFAULT VALUES
    ON CONFLICT (ready) DO UPDATE SET built_at = excluded.built_at;
    SELECT COALESCE(sum(b.n), 0) INTO counted FROM budget_buckets b WHERE b.span = 60;
    RETURN counted;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_rebuild() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_budget_rebuild() TO bf4ps_operator;

-- the buckets are unlogged (no WAL: they are the ledger's count, kept beside it): crash
-- recovery empties them and their ready row; the first admission or ledger write after that
-- makes them again from the ledger (true: they were ready; false: just rebuilt, from a ledger
-- that already holds the calling statement's own rows)
CREATE OR REPLACE FUNCTION bf4ps_budget_ready()
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    PERFORM FROM budget_buckets_ready;
    IF FOUND THEN
        RETURN true;
    END IF;
    PERFORM bf4ps_budget_rebuild();  -- its lock queues a second caller, which rebuilds again
    RETURN false;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_ready() FROM PUBLIC;

-- the restore guard's row changed what it knows of the server (a new run, another cluster,
-- timeline, database or ledger table) or recorded a restore: the buckets are made again from
-- the ledger as it is now (a restored dump's buckets and its ledger need not agree)
CREATE OR REPLACE FUNCTION bf4ps_budget_restored()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    IF TG_OP = 'INSERT'
            OR OLD.run_started_at IS DISTINCT FROM NEW.run_started_at
            OR OLD.detected_at IS DISTINCT FROM NEW.detected_at
            OR OLD.system_identifier IS DISTINCT FROM NEW.system_identifier
            OR OLD.timeline_id IS DISTINCT FROM NEW.timeline_id
            OR OLD.database_oid IS DISTINCT FROM NEW.database_oid
            OR OLD.ledger_relid IS DISTINCT FROM NEW.ledger_relid THEN
        PERFORM bf4ps_budget_rebuild();
    END IF;
    RETURN NULL;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_budget_restored() FROM PUBLIC;

CREATE OR REPLACE VIEW counted_requests AS
 SELECT request_id,
    slot_at,
    counted_at,
    egress_key,
    budget_class,
    collector_uuid,
    job_id,
    resource
   FROM request_ledger
  WHERE unsent_at IS NULL;
GRANT SELECT ON TABLE counted_requests TO bf4ps_collector;
GRANT SELECT ON TABLE counted_requests TO bf4ps_operator;
GRANT SELECT ON TABLE counted_requests TO bf4ps_scheduler;
GRANT SELECT ON TABLE counted_requests TO bf4ps_web;

CREATE OR REPLACE TRIGGER budget_count_insert AFTER INSERT ON request_ledger REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();

CREATE OR REPLACE TRIGGER budget_count_update AFTER UPDATE ON request_ledger REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();

CREATE OR REPLACE TRIGGER budget_count_delete AFTER DELETE ON request_ledger REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();

CREATE OR REPLACE TRIGGER budget_count_truncate AFTER TRUNCATE ON request_ledger FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_budget_count();

CREATE OR REPLACE TRIGGER budget_rebuild AFTER INSERT OR UPDATE OF run_started_at, detected_at, system_identifier, timeline_id, database_oid, ledger_relid ON restore_guard FOR EACH ROW EXECUTE FUNCTION bf4ps_budget_restored();

-- this file applied: the triggers above count from its commit on (creating them locks the
-- ledger against writes until then), so the buckets start from the ledger as it is
SELECT bf4ps_budget_rebuild();
