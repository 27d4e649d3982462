-- Settings audit: triggers on the gates, the fleet budget and the scheduling policy that stamp
-- who changed what (`bf4ps_settings_stamp`, from session_user) and write the audit event
-- (`bf4ps_settings_audit`). Calls no other room.
--
-- Applied by `bf4ps db upgrade` whenever this file changes (bf4ps.db.code): every statement
-- here may run again. Grants follow each object; a runtime role may call only what is granted.

CREATE OR REPLACE FUNCTION bf4ps_settings_audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
DECLARE
    kind text;
    subj text;
    before jsonb;
    after jsonb;
    why text := NULLIF(current_setting('bf4ps.change_reason', true), '');
    id bigint;
BEGIN
    IF TG_TABLE_NAME = 'egress_gates' THEN
        kind := 'gate';
        subj := COALESCE(NEW.egress_key, OLD.egress_key);
        IF TG_OP <> 'INSERT' THEN
            before := jsonb_build_object(
                'min_interval_seconds', OLD.min_interval_seconds,
                'window_requests', OLD.window_requests, 'window_seconds', OLD.window_seconds,
                'cooldown_until', OLD.cooldown_until, 'throttle_streak', OLD.throttle_streak);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            after := jsonb_build_object(
                'min_interval_seconds', NEW.min_interval_seconds,
                'window_requests', NEW.window_requests, 'window_seconds', NEW.window_seconds,
                'cooldown_until', NEW.cooldown_until, 'throttle_streak', NEW.throttle_streak);
        END IF;
    ELSIF TG_TABLE_NAME = 'fleet_budget' THEN
        kind := 'budget';
        subj := 'fleet';
        before := jsonb_build_object('requests', OLD.requests,
                                     'window_seconds', OLD.window_seconds);
        after := jsonb_build_object('requests', NEW.requests,
                                    'window_seconds', NEW.window_seconds);
    ELSE
        subj := COALESCE(NEW.key, OLD.key);
        kind := CASE WHEN subj LIKE 'budget\_%' THEN 'shares' ELSE 'policy' END;
        IF TG_OP <> 'INSERT' THEN
            before := jsonb_build_object(subj, OLD.value);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            after := jsonb_build_object(subj, NEW.value);
        END IF;
    END IF;
    IF before IS NOT DISTINCT FROM after THEN
        RETURN NULL;
    END IF;
    INSERT INTO fleet_settings_changes (setting, subject, old_value, new_value, changed_by,
                                        reason)
    VALUES (kind, left(subj, 100), before, after, left(session_user, 200), left(why, 200))
    RETURNING change_id INTO id;
    INSERT INTO collection_events (event_type, egress_key, result, details)
    VALUES ('fleet_settings_changed', CASE WHEN kind = 'gate' THEN subj END, kind,
            jsonb_build_object('change_id', id, 'setting', kind, 'subject', subj,
                               'old', before, 'new', after, 'by', session_user::text,
                               'reason', why));
    RETURN NULL;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_settings_audit() FROM PUBLIC;

CREATE OR REPLACE FUNCTION bf4ps_settings_stamp()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
BEGIN
    NEW.updated_by := left(session_user, 200);
    RETURN NEW;
END
$function$;
REVOKE ALL ON FUNCTION bf4ps_settings_stamp() FROM PUBLIC;

CREATE OR REPLACE TRIGGER settings_audit AFTER INSERT OR DELETE ON egress_gates FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();

CREATE OR REPLACE TRIGGER settings_audit AFTER UPDATE ON fleet_budget FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();

CREATE OR REPLACE TRIGGER settings_audit AFTER INSERT OR DELETE OR UPDATE ON scheduler_policy FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_audit();

CREATE OR REPLACE TRIGGER settings_audit_change AFTER UPDATE ON egress_gates FOR EACH ROW WHEN (((old.min_interval_seconds IS DISTINCT FROM new.min_interval_seconds) OR (old.window_requests IS DISTINCT FROM new.window_requests) OR (old.window_seconds IS DISTINCT FROM new.window_seconds) OR ((old.cooldown_until IS DISTINCT FROM new.cooldown_until) AND (NOT (old.last_throttle_at IS DISTINCT FROM new.last_throttle_at)) AND (NOT (old.last_outage_at IS DISTINCT FROM new.last_outage_at))))) EXECUTE FUNCTION bf4ps_settings_audit();

CREATE OR REPLACE TRIGGER settings_stamp BEFORE INSERT ON egress_gates FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_stamp();

CREATE OR REPLACE TRIGGER settings_stamp BEFORE UPDATE ON fleet_budget FOR EACH ROW WHEN (((old.requests IS DISTINCT FROM new.requests) OR (old.window_seconds IS DISTINCT FROM new.window_seconds))) EXECUTE FUNCTION bf4ps_settings_stamp();

CREATE OR REPLACE TRIGGER settings_stamp BEFORE INSERT OR UPDATE ON scheduler_policy FOR EACH ROW EXECUTE FUNCTION bf4ps_settings_stamp();

CREATE OR REPLACE TRIGGER settings_stamp_change BEFORE UPDATE ON egress_gates FOR EACH ROW WHEN (((old.min_interval_seconds IS DISTINCT FROM new.min_interval_seconds) OR (old.window_requests IS DISTINCT FROM new.window_requests) OR (old.window_seconds IS DISTINCT FROM new.window_seconds) OR ((old.cooldown_until IS DISTINCT FROM new.cooldown_until) AND (NOT (old.last_throttle_at IS DISTINCT FROM new.last_throttle_at)) AND (NOT (old.last_outage_at IS DISTINCT FROM new.last_outage_at))))) EXECUTE FUNCTION bf4ps_settings_stamp();
