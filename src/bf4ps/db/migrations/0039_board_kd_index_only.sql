-- The K/D board's index carries the two counters its key is computed from, so a soldier's place
-- on it (community.sql community_rank_kd: the soldiers above him, up to 10,000) is counted in
-- the index alone, as the other three boards' are: without them PostgreSQL cannot answer the
-- expression from the index and planned a bitmap scan of every soldier above him and a sort
-- (at 100,000 soldiers 27-41 ms a count against 13 ms, bench/RESULTS.md). Both counters are in
-- the key expression already, so an update that changes them touched this index before too.
DROP INDEX ix_board_kd;
CREATE INDEX ix_board_kd ON detailed_stats_current
    (platform, ((kills::double precision / deaths)) DESC NULLS LAST, soldier_id)
    INCLUDE (kills, deaths)
    WHERE time_played_seconds >= 36000 AND deaths > 0;
