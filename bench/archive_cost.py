"""Cost of archiving a live-sized raw answer (stats/archive.py): zlib compression of a
weapons body of ~590 KB (bench/parse_cost.py builds it from the 2013 capture) and of the real
detailed capture, at the archive's level and at level 1, and the decompression `bf4ps
battlelog show/replay` pays. Median of many runs.

Run: ``PYTHONPATH=src python -m bench.archive_cost [--runs N]``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
import zlib
from collections.abc import Callable

from bench.parse_cost import build_body
from bf4ps.stats.archive import LEVEL
from tests import captures

DETAILED = captures.captures_dir() / "2013-bf4intel/details-stats.json"


def median_ms(function: Callable[[], object], runs: int) -> float:
    function()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def report(name: str, body: bytes, runs: int) -> None:
    for level in sorted({LEVEL, 1}):
        packed = zlib.compress(body, level)
        pack = median_ms(lambda lv=level: zlib.compress(body, lv), runs)
        unpack = median_ms(lambda p=packed: zlib.decompress(p), runs)
        print(f"{name}: {len(body)} bytes -> {len(packed)} bytes at level {level} "
              f"({len(packed) / len(body):.1%}); compress {pack:.2f} ms, "
              f"decompress {unpack:.2f} ms (median of {runs})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    report("weapons (live-sized)", build_body(), runs)
    report("detailed (2013 capture)", DETAILED.read_bytes(), runs)


if __name__ == "__main__":
    main()
