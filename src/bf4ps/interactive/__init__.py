"""Interactive requests: submission, name lookups, queue position and ETA, status."""
