-- The scheduler's leadership: a session advisory lock on one key (db/connect.py SCHEDULER_LOCK),
-- held by the active scheduler's lock session; hot standbys try it every tick.

-- name: scheduler_lock_try
SELECT pg_try_advisory_lock(%(lock)s) AS ok

-- name: scheduler_lock_alive
-- A round trip on the lock's session: an error here means the session, and the lock, is gone.
SELECT 1
