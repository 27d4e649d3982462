"""The queue engine: enqueue/coalesce/promote, claim, start, renew, release, finalize, fail.

It knows nothing of Battlelog: callers pass a stats-writing callback into finalize and a
classified error into fail.
"""
