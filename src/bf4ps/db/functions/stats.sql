-- Statistics: the trigger that fills a detailed row's platform from its soldier.
-- Calls no other room.
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
