-- Progress from snapshots (issue 34): the gains between consecutive good snapshots, written by
-- the collector with the snapshot that ends them (stats/progress_store.py), checked after
-- storage by the scheduler (stats/progress_check.py), and the "this week" gains leaderboards
-- the scheduler precomputes from them. Additive: older builds ignore these tables.

-- A soldier's detailed gains between two good snapshots (ended_at: the later one). A reset
-- (a counter went down: Battlelog reset the stats) carries zeros and reset = true.
CREATE TABLE soldier_intervals (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    platform text NOT NULL CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    started_at timestamptz NOT NULL,
    ended_at timestamptz NOT NULL,
    kills bigint NOT NULL CHECK (kills >= 0),
    deaths bigint NOT NULL CHECK (deaths >= 0),
    score bigint NOT NULL CHECK (score >= 0),
    seconds bigint NOT NULL CHECK (seconds >= 0),
    headshots bigint CHECK (headshots >= 0),
    shots_fired bigint CHECK (shots_fired >= 0),
    shots_hit bigint CHECK (shots_hit >= 0),
    rank_from bigint,
    rank_to bigint,
    reset boolean NOT NULL DEFAULT false,
    checked_at timestamptz,  -- NULL until the checks after storage ran
    PRIMARY KEY (soldier_id, ended_at),
    CHECK (ended_at > started_at)
);
CREATE INDEX ix_soldier_intervals_unchecked ON soldier_intervals (ended_at)
    WHERE checked_at IS NULL;
CREATE INDEX ix_soldier_intervals_board ON soldier_intervals (ended_at, soldier_id)
    WHERE checked_at IS NOT NULL AND NOT reset;

-- One weapon's or vehicle's gains between two good snapshots of it (item_id: weapon_catalog
-- or vehicle_catalog, by kind).
CREATE TABLE item_intervals (
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('weapon', 'vehicle')),
    item_id integer NOT NULL,
    platform text NOT NULL CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    started_at timestamptz NOT NULL,
    ended_at timestamptz NOT NULL,
    kills bigint NOT NULL CHECK (kills >= 0),
    seconds bigint NOT NULL CHECK (seconds >= 0),
    headshots bigint CHECK (headshots >= 0),
    shots_fired bigint CHECK (shots_fired >= 0),
    shots_hit bigint CHECK (shots_hit >= 0),
    stars_from bigint,
    stars_to bigint,
    reset boolean NOT NULL DEFAULT false,
    checked_at timestamptz,
    PRIMARY KEY (soldier_id, kind, item_id, ended_at),
    CHECK (ended_at > started_at)
);
CREATE INDEX ix_item_intervals_unchecked ON item_intervals (ended_at)
    WHERE checked_at IS NULL;
CREATE INDEX ix_item_intervals_board ON item_intervals (kind, ended_at)
    WHERE checked_at IS NOT NULL AND NOT reset;

-- An interval whose rates exceed the policy ceilings. While not cleared, its soldier is kept
-- out of every leaderboard; an operator's clear (`bf4ps flags clear`, the console) restores him.
-- Flagging and clearing are also collection_events (progress_flagged, progress_flag_cleared).
CREATE TABLE progress_flags (
    flag_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('soldier', 'weapon', 'vehicle')),
    item_id integer,
    started_at timestamptz NOT NULL,
    ended_at timestamptz NOT NULL,
    reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    flagged_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    cleared_at timestamptz,
    cleared_by text CHECK (length(cleared_by) <= 200),
    clear_note text CHECK (length(clear_note) <= 500),
    UNIQUE (soldier_id, kind, item_id, ended_at)
);
CREATE INDEX ix_progress_flags_open ON progress_flags (soldier_id) WHERE cleared_at IS NULL;
CREATE INDEX ix_progress_flags_soldier ON progress_flags (soldier_id, ended_at DESC);

-- The "this week" gains leaderboards, rebuilt by the scheduler (gains_boards_refresh): one row
-- per board, platform, item (0 for the soldier boards) and soldier, ranked by the smoothed
-- value. A page of a board is an index range, whatever the number of soldiers.
CREATE TABLE gains_boards (
    board text NOT NULL CHECK (board IN ('spm', 'kpm', 'weapon_kpm', 'vehicle_kpm')),
    platform text NOT NULL CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    item_id integer NOT NULL DEFAULT 0,
    soldier_id bigint NOT NULL REFERENCES soldiers ON DELETE CASCADE,
    value double precision NOT NULL,  -- smoothed toward the population average
    raw double precision,             -- the soldier's own rate over the window
    kills bigint NOT NULL,
    score bigint,
    seconds bigint NOT NULL,
    refreshed_at timestamptz NOT NULL,
    PRIMARY KEY (board, platform, item_id, soldier_id)
);
CREATE INDEX ix_gains_boards_rank ON gains_boards
    (board, platform, item_id, value DESC, soldier_id);
CREATE INDEX ix_gains_boards_soldier ON gains_boards (soldier_id);

-- The weapons and vehicles that have a board, per platform, with their number of soldiers
-- (the board picker; rebuilt with the boards, so no request aggregates gains_boards).
CREATE TABLE gains_board_items (
    board text NOT NULL CHECK (board IN ('weapon_kpm', 'vehicle_kpm')),
    platform text NOT NULL CHECK (platform IN ('pc', 'xbox360', 'ps3', 'ps4', 'xboxone')),
    item_id integer NOT NULL,
    soldiers integer NOT NULL,
    PRIMARY KEY (board, platform, item_id)
);

GRANT SELECT ON gains_board_items TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;
GRANT INSERT, DELETE ON gains_board_items TO bf4ps_scheduler, bf4ps_operator, bf4ps_web;
GRANT SELECT ON soldier_intervals, item_intervals, progress_flags, gains_boards
    TO bf4ps_collector, bf4ps_scheduler, bf4ps_web, bf4ps_operator;
GRANT INSERT ON soldier_intervals, item_intervals TO bf4ps_collector;
GRANT UPDATE, DELETE ON soldier_intervals, item_intervals TO bf4ps_scheduler;
GRANT INSERT ON progress_flags TO bf4ps_scheduler;
GRANT INSERT, DELETE ON gains_boards TO bf4ps_scheduler, bf4ps_operator, bf4ps_web;
GRANT UPDATE ON progress_flags TO bf4ps_operator, bf4ps_web;
