"""Advisory lock keys every process agrees on."""

from __future__ import annotations

SCHEDULER_LOCK = 0x4246_3450_5343_4844  # "BF4PSCHD": the leading scheduler holds it
