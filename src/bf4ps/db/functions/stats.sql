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

-- A run of suspect answers (answer_suspects: stats/plausible.py), written for a collector only
-- of the soldier and resource of a job whose lease it holds now (an all-zero first answer, in
-- the success's transaction), or whose lease just failed as implausible (the run extended after
-- that failure: its `failed` event of the last ten minutes). The run grows by at most one
-- answer a lease (a run the lease already touched is not extended again), its start is the
-- database's clock or the run's own, and `p_clear` ends it: never another soldier's, never a
-- run of a length the caller names, so no collector confirms a stats reset on its own.
CREATE OR REPLACE FUNCTION bf4ps_suspect_note(p_job bigint, p_token uuid, p_kind text, p_extend boolean, p_counters jsonb, p_clear boolean DEFAULT false)
 RETURNS TABLE(answers integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
#variable_conflict use_column
DECLARE
    t constant timestamptz := clock_timestamp();
    sid bigint;
    res text;
    began timestamptz;
    old answer_suspects;
BEGIN
    SELECT j.soldier_id, j.resource, j.claimed_at INTO sid, res, began
    FROM collection_jobs j
    WHERE j.job_id = p_job AND j.lease_token = p_token AND j.status IN ('claimed', 'running')
      AND j.lease_expires_at > t;
    IF NOT FOUND THEN
        SELECT e.soldier_id, e.resource, COALESCE(e.claimed_at, e.occurred_at)
        INTO sid, res, began
        FROM collection_events e
        WHERE e.job_id = p_job AND e.lease_token = p_token AND e.event_type = 'failed'
          AND e.error_class = 'implausible' AND e.occurred_at > t - interval '10 minutes'
        ORDER BY e.occurred_at DESC LIMIT 1;
        IF NOT FOUND OR p_clear THEN
            RETURN;  -- no such lease: nothing written
        END IF;
    END IF;
    IF sid IS NULL OR res NOT IN ('detailed', 'profile', 'weapons', 'vehicles') THEN
        RETURN;
    END IF;
    IF p_clear THEN
        DELETE FROM answer_suspects s WHERE s.soldier_id = sid AND s.resource = res;
        RETURN;
    END IF;
    SELECT * INTO old FROM answer_suspects s
    WHERE s.soldier_id = sid AND s.resource = res FOR UPDATE;
    RETURN QUERY
    INSERT INTO answer_suspects AS s (soldier_id, resource, kind, first_at, last_at, answers,
                                      counters)
    SELECT sid, res, p_kind, CASE WHEN ext THEN old.first_at ELSE t END, t,
           CASE WHEN ext THEN old.answers + 1 ELSE 1 END, p_counters
    FROM (SELECT COALESCE(p_extend AND old.kind = p_kind
                          AND old.last_at < COALESCE(began, t), false) AS ext) x
    ON CONFLICT (soldier_id, resource) DO UPDATE
    SET kind = excluded.kind, first_at = excluded.first_at, last_at = excluded.last_at,
        answers = excluded.answers, counters = excluded.counters
    RETURNING s.answers;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_suspect_note(p_job bigint, p_token uuid, p_kind text, p_extend boolean, p_counters jsonb, p_clear boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION bf4ps_suspect_note(p_job bigint, p_token uuid, p_kind text, p_extend boolean, p_counters jsonb, p_clear boolean) TO bf4ps_collector;
