"""The database errors every long-running loop tells apart: any database failure, and the subset
that is an outage (retry later) rather than a bug or bad data."""

from __future__ import annotations

import psycopg
from psycopg_pool import PoolTimeout

DB_ERRORS = (psycopg.Error, PoolTimeout, OSError)
OUTAGE_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, OSError)
