"""Failed operator logins, limited per client network and per account with a growing delay:
the first `free` failures within `forget_after` cost nothing, each further one locks that client
and that account out for twice as long as the one before (from `delay` up to `max_delay`);
while locked, /ops answers 429 with Retry-After without looking at the password, so guessing
goes no faster than the lock allows. A success clears both records. Kept in the web process
(each process limits on its own) and bounded in size; every failure and refusal is one log
line (docs/operations.md gives the fail2ban filter) and counted in a metric."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Record:
    failures: int = 0
    last_at: float = 0.0
    locked_until: float = 0.0


@dataclass(frozen=True)
class LoginPolicy:
    free: int = 5
    delay: float = 1.0
    max_delay: float = 300.0
    forget_after: float = 900.0
    max_entries: int = 10_000


class LoginLimiter:
    def __init__(self, policy: LoginPolicy,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def retry_after(self, *keys: str) -> float:
        """Seconds until every one of `keys` may try again (0: now)."""
        now = self._clock()
        return max((r.locked_until - now for k in keys if (r := self._records.get(k))),
                   default=0.0) if keys else 0.0

    def failed_count(self, *keys: str) -> int:
        return max((r.failures for k in keys if (r := self._records.get(k))), default=0)

    def failed(self, *keys: str) -> tuple[int, float]:
        """Count a wrong password for each key: the most failures among them, and the lock
        (seconds) the failure starts (0 while still free)."""
        now = self._clock()
        worst, lock = 0, 0.0
        for key in keys:
            record = self._record(key, now)
            record.failures += 1
            record.last_at = now
            over = record.failures - self.policy.free
            if over > 0:
                seconds = min(self.policy.max_delay, self.policy.delay * 2 ** (over - 1))
                record.locked_until = max(record.locked_until, now + seconds)
                lock = max(lock, record.locked_until - now)
            worst = max(worst, record.failures)
        return worst, lock

    def succeeded(self, *keys: str) -> None:
        for key in keys:
            self._records.pop(key, None)

    def _record(self, key: str, now: float) -> _Record:
        record = self._records.pop(key, None)
        if record is None or (now - record.last_at > self.policy.forget_after
                              and record.locked_until <= now):
            record = _Record()
        self._records[key] = record  # the most recent last: the oldest go first when full
        while len(self._records) > self.policy.max_entries:
            self._records.popitem(last=False)
        return record


def retry_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
