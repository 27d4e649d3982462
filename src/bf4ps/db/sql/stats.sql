-- Statistics: the writers collectors pass to finalize.succeed (stats/store.py) and the soldier
-- page's reads (stats/read.py). Every read is by primary key (prefix).
--
-- No-backwards rule everywhere: a write whose fetched_at is not newer than what is stored changes
-- nothing (the first committed of two equally new results wins), and writes no history.

-- name: detailed_write
-- One round trip. Upsert the current row unless the stored one is as new or newer; then append
-- the values actually written to history only when they differ (NULL-safe, every stat column)
-- from the soldier's latest history row. Nothing written to current means no history.
WITH cur AS (
    INSERT INTO detailed_stats_current AS c (
        soldier_id, fetched_at,
        {detailed})
    VALUES (
        %(soldier_id)s, %(fetched_at)s,
        {%detailed})
    ON CONFLICT (soldier_id) DO UPDATE SET (
        fetched_at,
        {detailed}
    ) = ROW(
        excluded.fetched_at,
        {excluded.detailed})
    WHERE c.fetched_at < excluded.fetched_at
    RETURNING c.*
), last AS (
    SELECT h.*
    FROM detailed_stats_history h
    WHERE h.soldier_id = %(soldier_id)s
    ORDER BY h.fetched_at DESC
    LIMIT 1
), hist AS (
    INSERT INTO detailed_stats_history (
        soldier_id, fetched_at,
        {detailed})
    SELECT cur.soldier_id, cur.fetched_at,
        {cur.detailed}
    FROM cur
    WHERE NOT EXISTS (
        SELECT 1 FROM last
        WHERE ROW(
            {last.detailed}
        ) IS NOT DISTINCT FROM ROW(
            {cur.detailed}))
    ON CONFLICT (soldier_id, fetched_at) DO NOTHING
    RETURNING 1
)
SELECT (SELECT count(*) FROM cur) AS current_written,
       (SELECT count(*) FROM hist) AS history_written

-- name: profile_write
-- One round trip. Upsert profile_current (same no-backwards rule; a known Battlelog user id is
-- never replaced by an unknown one), then record the user id on the soldier when it is known and
-- differs. That soldiers row is taken with SKIP LOCKED: if intake holds it right now, the link
-- waits for the next profile collection instead of making finalize wait (no lock cycle with
-- intake, and profile_current keeps the id meanwhile).
WITH cur AS (
    INSERT INTO profile_current AS c (
        soldier_id, fetched_at, battlelog_user_id, clan_tag, rank, rank_name, rank_score,
        current_rank_score, next_rank_score, skill, score, kills, deaths, time_played_seconds,
        score_per_minute, kills_per_minute, accuracy_percent, wins, losses, top_weapons,
        top_vehicles, progress, linked_soldiers)
    VALUES (
        %(soldier_id)s, %(fetched_at)s, %(battlelog_user_id)s, %(clan_tag)s, %(rank)s,
        %(rank_name)s, %(rank_score)s, %(current_rank_score)s, %(next_rank_score)s, %(skill)s,
        %(score)s, %(kills)s, %(deaths)s, %(time_played_seconds)s, %(score_per_minute)s,
        %(kills_per_minute)s, %(accuracy_percent)s, %(wins)s, %(losses)s, %(top_weapons)s,
        %(top_vehicles)s, %(progress)s, %(linked_soldiers)s)
    ON CONFLICT (soldier_id) DO UPDATE SET (
        fetched_at, battlelog_user_id, clan_tag, rank, rank_name, rank_score,
        current_rank_score, next_rank_score, skill, score, kills, deaths, time_played_seconds,
        score_per_minute, kills_per_minute, accuracy_percent, wins, losses, top_weapons,
        top_vehicles, progress, linked_soldiers
    ) = ROW(
        excluded.fetched_at, COALESCE(excluded.battlelog_user_id, c.battlelog_user_id),
        excluded.clan_tag, excluded.rank, excluded.rank_name, excluded.rank_score,
        excluded.current_rank_score, excluded.next_rank_score, excluded.skill, excluded.score,
        excluded.kills, excluded.deaths, excluded.time_played_seconds, excluded.score_per_minute,
        excluded.kills_per_minute, excluded.accuracy_percent, excluded.wins, excluded.losses,
        excluded.top_weapons, excluded.top_vehicles, excluded.progress, excluded.linked_soldiers)
    WHERE c.fetched_at < excluded.fetched_at
    RETURNING c.soldier_id, c.battlelog_user_id
), owner AS (
    SELECT s.soldier_id, cur.battlelog_user_id
    FROM soldiers s
    JOIN cur ON cur.soldier_id = s.soldier_id
    WHERE cur.battlelog_user_id > 0
      AND s.battlelog_user_id IS DISTINCT FROM cur.battlelog_user_id
    FOR NO KEY UPDATE OF s SKIP LOCKED
), linked AS (
    UPDATE soldiers s
    SET battlelog_user_id = owner.battlelog_user_id, updated_at = now()
    FROM owner
    WHERE s.soldier_id = owner.soldier_id
    RETURNING s.soldier_id
)
SELECT (SELECT count(*) FROM cur) AS current_written,
       (SELECT count(*) FROM linked) AS user_linked

-- name: {item}_catalog_sync
-- Statement 1 of a weapons or vehicles write (written once, named weapon_catalog_sync and
-- vehicle_catalog_sync: db/queries.py). Inserts the guids the catalog lacks in guid order, so
-- that collectors storing the same new items at once take the unique-index locks in one order
-- (they queue behind each other, they cannot deadlock). Refreshes name/slug/category/code only
-- when they changed, and last_seen_at at most once a day per item; those rows are locked with
-- SKIP LOCKED, so a collector never waits for another one refreshing the same row.
WITH input AS (
    SELECT *
    FROM unnest(%(guid)s::text[], %(name)s::text[], %(slug)s::text[], %(category)s::text[],
                %(code)s::text[]) AS t(guid, name, slug, category, code)
), missing AS (
    INSERT INTO {item}_catalog (guid, name, slug, category, code, first_seen_at, last_seen_at)
    SELECT i.guid, i.name, i.slug, i.category, i.code, %(seen_at)s, %(seen_at)s
    FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM {item}_catalog c WHERE c.guid = i.guid)
    ORDER BY i.guid
    ON CONFLICT (guid) DO NOTHING
    RETURNING {item}_id
), stale AS (
    SELECT c.{item}_id
    FROM {item}_catalog c
    JOIN input i ON i.guid = c.guid
    WHERE (c.last_seen_at <= %(seen_at)s
           AND (c.name, c.slug, c.category, c.code)
               IS DISTINCT FROM (i.name, i.slug, i.category, i.code))
       OR c.last_seen_at < %(seen_at)s::timestamptz - interval '1 day'
    ORDER BY c.{item}_id
    FOR NO KEY UPDATE OF c SKIP LOCKED
), refreshed AS (
    UPDATE {item}_catalog c
    SET name = i.name, slug = i.slug, category = i.category, code = i.code,
        last_seen_at = GREATEST(c.last_seen_at, %(seen_at)s)
    FROM stale s, input i
    WHERE c.{item}_id = s.{item}_id AND i.guid = c.guid AND c.last_seen_at <= %(seen_at)s
    RETURNING c.{item}_id
)
SELECT (SELECT count(*) FROM missing) AS catalog_inserted,
       (SELECT count(*) FROM refreshed) AS catalog_refreshed

-- name: {item}_stats_write
-- Statement 2 of a weapons or vehicles write (a new statement, so it sees every catalog row
-- committed while statement 1 waited; {counters}, {extras} and {stats} are the kind's columns,
-- db/queries.py). Skipped as a whole when it is not newer than what is stored for the soldier
-- (a stored item or the resource's last success). Current rows: only new or changed items are
-- written; items absent from this list are kept (last-known-good). History: a row per item
-- whose counters changed since its current row; for an item seen for the first time, only
-- when it has a positive counter (an all-zero item has no history until it is first used).
WITH input AS (
    SELECT *
    FROM unnest(%(guid)s::text[], {arrays}) AS t(guid, {stats})
), outdated AS (
    SELECT EXISTS (
        SELECT 1 FROM soldier_{item}_stats
        WHERE soldier_id = %(soldier_id)s AND fetched_at >= %(fetched_at)s
    ) OR EXISTS (
        SELECT 1 FROM collection_state
        WHERE soldier_id = %(soldier_id)s AND resource = '{item}s'
          AND last_success_at > %(fetched_at)s
    ) AS yes
), items AS (
    SELECT c.{item}_id, i.*, p.{item}_id IS NULL AS first_seen,
           ({p.counters}) IS DISTINCT FROM ({i.counters}) AS counters_changed,
           ({p.extras}) IS DISTINCT FROM ({i.extras}) AS extras_changed
    FROM input i
    JOIN {item}_catalog c ON c.guid = i.guid
    LEFT JOIN soldier_{item}_stats p
           ON p.soldier_id = %(soldier_id)s AND p.{item}_id = c.{item}_id
    WHERE NOT (SELECT yes FROM outdated)
), up AS (
    INSERT INTO soldier_{item}_stats AS s (soldier_id, {item}_id, fetched_at, {stats})
    SELECT %(soldier_id)s, {item}_id, %(fetched_at)s, {stats}
    FROM items
    WHERE first_seen OR counters_changed OR extras_changed
    ORDER BY {item}_id
    ON CONFLICT (soldier_id, {item}_id) DO UPDATE SET (fetched_at, {stats})
        = ROW(excluded.fetched_at, {excluded.stats})
    WHERE s.fetched_at < excluded.fetched_at
    RETURNING s.{item}_id
), hist AS (
    INSERT INTO soldier_{item}_history (soldier_id, {item}_id, fetched_at, {counters})
    SELECT %(soldier_id)s, i.{item}_id, %(fetched_at)s, {i.counters}
    FROM items i
    JOIN up ON up.{item}_id = i.{item}_id
    WHERE CASE WHEN i.first_seen THEN GREATEST({i.counters}) > 0
               ELSE i.counters_changed END
    ON CONFLICT (soldier_id, {item}_id, fetched_at) DO NOTHING
    RETURNING 1
)
SELECT (SELECT yes FROM outdated) AS outdated,
       (SELECT count(*) FROM items) AS matched,
       (SELECT count(*) FROM up) AS current_written,
       (SELECT count(*) FROM hist) AS history_written

-- name: detailed_current_of
SELECT * FROM detailed_stats_current WHERE soldier_id = %(soldier_id)s

-- name: profile_current_of
SELECT * FROM profile_current WHERE soldier_id = %(soldier_id)s

-- name: collection_states_of
SELECT resource, status, last_success_at, last_attempt_at, last_error_class
FROM collection_state
WHERE soldier_id = %(soldier_id)s
ORDER BY resource

-- name: {item}s_of
-- The soldier's weapons or vehicles with their catalog names, most kills first.
SELECT c.{item}_id, c.guid, c.name, c.slug, c.category, c.code, s.fetched_at, {s.stats}
FROM soldier_{item}_stats s
JOIN {item}_catalog c ON c.{item}_id = s.{item}_id
WHERE s.soldier_id = %(soldier_id)s
ORDER BY s.kills DESC NULLS LAST, {s.seconds} DESC NULLS LAST, c.{item}_id

-- name: detailed_history_of
SELECT fetched_at, kills, deaths, score, time_played_seconds, skill, rank, wins, losses,
       shots_fired, shots_hit, headshots, score_per_minute, kills_per_minute
FROM detailed_stats_history
WHERE soldier_id = %(soldier_id)s
ORDER BY fetched_at DESC
LIMIT %(limit)s

-- name: collections_of
-- When each of %(resources)s of the soldier was last collected successfully: (resource,
-- collected_at), newest first and at most %(limit)s per resource. One history point per
-- collection, also when the values did not change (history stores only changes).
SELECT r.resource, e.collected_at
FROM unnest(%(resources)s::text[]) AS r(resource)
CROSS JOIN LATERAL (
    SELECT occurred_at AS collected_at
    FROM collection_events
    WHERE soldier_id = %(soldier_id)s AND resource = r.resource AND event_type = 'succeeded'
    ORDER BY occurred_at DESC
    LIMIT %(limit)s
) e

-- name: {item}_history_of
-- The history of the soldier's most-used weapons or vehicles (by kills), newest rows first per
-- item.
SELECT h.{item}_id, c.name, c.slug, h.fetched_at, {h.counters}
FROM (SELECT {item}_id FROM soldier_{item}_stats WHERE soldier_id = %(soldier_id)s
      ORDER BY kills DESC NULLS LAST, {item}_id LIMIT %(items)s) AS top
JOIN {item}_catalog c ON c.{item}_id = top.{item}_id
CROSS JOIN LATERAL (
    SELECT {item}_id, fetched_at, {counters}
    FROM soldier_{item}_history
    WHERE soldier_id = %(soldier_id)s AND {item}_id = top.{item}_id
    ORDER BY fetched_at DESC LIMIT %(limit)s) AS h
