-- 0011: the website's discovery reads (home page, leaderboards) as index scans.
--
-- Leaderboards rank collected soldiers per platform, so detailed_stats_current carries the
-- soldier's platform (copied from soldiers on insert: a soldier's platform never changes; the
-- upsert's UPDATE leaves it as it is). Each board is a partial index over the soldiers with at
-- least 10 hours played (the boards' minimum playtime, stats/discovery.py BOARD_MIN_SECONDS):
-- a page of a board reads its rows in index order, whatever the number of soldiers.
ALTER TABLE detailed_stats_current ADD COLUMN platform text
    CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone'));

UPDATE detailed_stats_current d SET platform = s.platform
FROM soldiers s WHERE s.soldier_id = d.soldier_id;

CREATE FUNCTION bf4ps_detailed_platform() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.platform := (SELECT s.platform FROM soldiers s WHERE s.soldier_id = NEW.soldier_id);
    RETURN NEW;
END
$$;

CREATE TRIGGER detailed_platform BEFORE INSERT ON detailed_stats_current
    FOR EACH ROW EXECUTE FUNCTION bf4ps_detailed_platform();

CREATE INDEX ix_board_spm ON detailed_stats_current
    (platform, score_per_minute DESC NULLS LAST, soldier_id)
    WHERE time_played_seconds >= 36000;
CREATE INDEX ix_board_kd ON detailed_stats_current
    (platform, (kills::double precision / deaths) DESC NULLS LAST, soldier_id)
    WHERE time_played_seconds >= 36000 AND deaths > 0;
CREATE INDEX ix_board_skill ON detailed_stats_current
    (platform, skill DESC NULLS LAST, soldier_id)
    WHERE time_played_seconds >= 36000;
CREATE INDEX ix_board_kills ON detailed_stats_current
    (platform, kills DESC NULLS LAST, soldier_id)
    WHERE time_played_seconds >= 36000;

-- The home page's "recently collected": the newest detailed collections first.
CREATE INDEX ix_detailed_recent ON detailed_stats_current (fetched_at DESC);
