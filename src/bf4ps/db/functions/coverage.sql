-- Coverage counters: how many soldier-resources are in each state, kept by triggers on
-- `collection_state` as deltas (so a status change never contends on one counter row) and folded
-- by the scheduler (`bf4ps_coverage_fold`); `coverage_totals` is the sum the status and the
-- console read. Calls no other room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_coverage_apply()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION bf4ps_coverage_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO coverage_deltas (resource, shard, from_status, to_status, n)
    VALUES (NEW.resource, (NEW.soldier_id % 16)::smallint, OLD.status, NEW.status, 1);
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION bf4ps_coverage_fold()
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
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
$function$;
REVOKE ALL ON FUNCTION bf4ps_coverage_fold() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_coverage_fold() TO bf4ps_scheduler;

CREATE OR REPLACE VIEW coverage_totals AS
 SELECT coverage_counters.resource,
    coverage_counters.status,
    coverage_counters.shard,
    coverage_counters.n
   FROM coverage_counters
UNION ALL
 SELECT d.resource,
    x.status,
    d.shard,
    x.n
   FROM coverage_deltas d
     CROSS JOIN LATERAL ( VALUES (d.to_status,d.n), (d.from_status,- d.n)) x(status, n)
  WHERE x.status IS NOT NULL;
GRANT SELECT ON TABLE coverage_totals TO bf4ps_collector;
GRANT SELECT ON TABLE coverage_totals TO bf4ps_operator;
GRANT SELECT ON TABLE coverage_totals TO bf4ps_scheduler;
GRANT SELECT ON TABLE coverage_totals TO bf4ps_web;

CREATE OR REPLACE TRIGGER coverage_change AFTER UPDATE OF status ON collection_state FOR EACH ROW WHEN (((old.status)::text IS DISTINCT FROM (new.status)::text)) EXECUTE FUNCTION bf4ps_coverage_change();

CREATE OR REPLACE TRIGGER coverage_delete AFTER DELETE ON collection_state REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_coverage_apply();

CREATE OR REPLACE TRIGGER coverage_insert AFTER INSERT ON collection_state REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bf4ps_coverage_apply();
