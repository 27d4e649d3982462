"""Where the refreshes of the last `bench.forecast_accuracy` run waited for the due sweep, read
from each scenario's database (left on disk until that scenario runs again). For each
collected soldier whose last refresh is done, that refresh's cycle: its due time F after the
success before it, the moment the sweep took as its due time (the state row's eligible_since,
which a success leaves alone), and its feed (its job's `created` event). Printed per scenario:
how far the due times were moved ahead (the sweep spreads them over its period: uniform over
[0, S); before, 0) and the waits from the moved due time to the feed (the sweep's wait, uniform
over a sweep period, plus the feed a scheduler loop later; locked in one phase, as before, they
all sat near one value). Waits from the unmoved due time fall on the sweep's grid (two values a
soldier) and are not what the model's age is of.

Run: ``python -m bench.forecast_phases [--scenario NAME ...]`` (BF4PS_BENCH_DIR as the run's)
"""

from __future__ import annotations

import argparse
import statistics

import psycopg

from bench.common import server_url
from bench.forecast_accuracy import BASE, SCENARIOS, SWEEP
from bf4ps.db.connect import with_dbname

CYCLES = """
SELECT extract(epoch FROM p.at - cs.eligible_since)::float8 + %(f)s AS ahead,
       extract(epoch FROM c.at - cs.eligible_since)::float8 AS wait
FROM collection_state cs
JOIN soldiers s ON s.soldier_id = cs.soldier_id
CROSS JOIN LATERAL (
    SELECT max(e.occurred_at) AS at FROM collection_events e
    WHERE e.event_type = 'created' AND e.result = 'active_refresh'
      AND e.soldier_id = cs.soldier_id AND e.resource = cs.resource) c
CROSS JOIN LATERAL (
    SELECT max(e.occurred_at) AS at FROM collection_events e
    WHERE e.event_type = 'succeeded' AND e.soldier_id = cs.soldier_id
      AND e.resource = cs.resource AND e.occurred_at < c.at) p
WHERE cs.resource = 'detailed' AND cs.status = 'current' AND cs.activity_class = 'active'
  AND s.persona_id <= %(base)s + %(collected)s AND p.at IS NOT NULL
  AND c.at >= cs.eligible_since
"""


def cycles(url: str, collected: int) -> tuple[float, list[tuple[float, float]]]:
    """(F, [(seconds the due time was moved ahead, seconds from it to the feed)])."""
    with psycopg.connect(url) as conn:
        f_row = conn.execute("SELECT value FROM scheduler_policy WHERE key = "
                             "'freshness_detailed_seconds'").fetchone()
        if f_row is None:
            return 0.0, []
        f = float(f_row[0])
        rows = conn.execute(CYCLES, {"f": f, "base": BASE, "collected": collected}).fetchall()
    return f, [(float(a), float(w)) for a, w in rows]


def _quartiles(xs: list[float]) -> str:
    q1, q2, q3 = statistics.quantiles(xs, n=4)
    return f"{q1:.2f} / {q2:.2f} / {q3:.2f} s"


def describe(name: str, got: list[tuple[float, float]]) -> str:
    if len(got) < 8:
        return f"{name}: {len(got)} refresh cycles: too few to tell"
    ahead, wait = [a for a, _ in got], [w for _, w in got]
    thirds = [sum(1 for a in ahead if k * SWEEP / 3 <= a < (k + 1) * SWEEP / 3)
              for k in range(3)]
    return (f"{name}: {len(got)} soldiers' last refresh: due time moved ahead by "
            f"{_quartiles(ahead)} (quartiles; per third of the {SWEEP:g} s sweep: "
            f"{', '.join(map(str, thirds))}), moved due time -> fed {_quartiles(wait)}, "
            f"mean {statistics.mean(wait):.2f} s, sd {statistics.pstdev(wait):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    admin = server_url()
    for name in args.scenario or list(SCENARIOS):
        url = with_dbname(admin, f"bf4ps_bench_fc_{name.replace('-', '_')}")
        try:
            got = cycles(url, SCENARIOS[name].collected)[1]
        except psycopg.OperationalError as exc:
            print(f"{name}: no database of a run ({exc.__class__.__name__})")
            continue
        print(describe(name, got))


if __name__ == "__main__":
    main()
