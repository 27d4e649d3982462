-- Statistics: the trigger that fills a detailed row's platform from its soldier, and the raw
-- answers archive (`bf4ps_archive_keep`, the collector's; `bf4ps_archive_prune`, retention's),
-- its count and age the policy's (archive_answers_kept, archive_retention_days), read here.
-- Calls the access room (`bf4ps_policy_number`).
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_detailed_platform()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    NEW.platform := (SELECT s.platform FROM soldiers s WHERE s.soldier_id = NEW.soldier_id);
    RETURN NEW;
END
$function$;

CREATE OR REPLACE TRIGGER detailed_platform BEFORE INSERT ON detailed_stats_current FOR EACH ROW EXECUTE FUNCTION bf4ps_detailed_platform();

CREATE OR REPLACE FUNCTION bf4ps_archive_keep(p_soldier bigint, p_resource text, p_http integer, p_outcome text, p_body_bytes integer, p_body bytea)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    -- how many answers a soldier and resource keep is the policy's (archive_answers_kept)
    keep constant integer := LEAST(GREATEST(
        bf4ps_policy_number('archive_answers_kept', 3), 0), 100)::integer;
    gone integer;
BEGIN
    IF keep < 1 THEN
        RETURN 0;
    END IF;
    INSERT INTO raw_answers (soldier_id, resource, http_status, outcome, body_bytes, body)
    VALUES (p_soldier, p_resource, p_http, p_outcome, p_body_bytes, p_body);
    -- the soldier and resource's older answers beyond the count: the only ones removed
    DELETE FROM raw_answers
    WHERE answer_id IN (SELECT a.answer_id FROM raw_answers a
                        WHERE a.soldier_id = p_soldier AND a.resource = p_resource
                        ORDER BY a.answer_id DESC OFFSET keep);
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_archive_keep(p_soldier bigint, p_resource text, p_http integer, p_outcome text, p_body_bytes integer, p_body bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_archive_keep(p_soldier bigint, p_resource text, p_http integer, p_outcome text, p_body_bytes integer, p_body bytea) TO bf4ps_collector;

CREATE OR REPLACE FUNCTION bf4ps_archive_prune(p_cutoff timestamp with time zone, p_batch integer)
 RETURNS SETOF bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
    -- never an answer younger than the policy's archive_retention_days, whatever the cut-off
    DELETE FROM raw_answers
    WHERE answer_id IN (
        SELECT a.answer_id FROM raw_answers a
        WHERE a.received_at < least(p_cutoff, clock_timestamp() - make_interval(secs =>
                  86400 * GREATEST(bf4ps_policy_number('archive_retention_days', 14), 1)))
        LIMIT greatest(p_batch, 0))
    RETURNING answer_id
$function$;
REVOKE ALL ON FUNCTION bf4ps_archive_prune(p_cutoff timestamp with time zone, p_batch integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_archive_prune(p_cutoff timestamp with time zone, p_batch integer) TO bf4ps_scheduler;
