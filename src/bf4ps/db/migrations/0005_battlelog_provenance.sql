-- 0005: a third provenance. battlelog: a soldier whose name Battlelog's own name search gave
-- (a website lookup resolved it), trusted like a BF4SW sighting when a typed name is resolved
-- to a soldier; manual stays what a submitted Battlelog URL claimed, which nobody confirmed.
ALTER TABLE soldier_sources
    DROP CONSTRAINT soldier_sources_source_type_check,
    ADD CONSTRAINT soldier_sources_source_type_check
        CHECK (source_type IN ('bf4sw', 'manual', 'battlelog'));
