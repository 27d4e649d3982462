"""Run every benchmark in bench/ and write bench/RESULTS.md: each figure with its value, its target
(the product's Bars), met or missed (and why), the machine and the date.

Each benchmark runs as its own process (`python -m bench.<name>` from the repository root, with
PYTHONPATH=src:.), one after the other so they do not compete for the CPU; its output is shown
as it comes and parsed afterwards. Benchmarks print figures and never assert; where one supports
several runs it reports their median, and so does this table. A benchmark that is missing, fails
or prints nothing recognisable is listed as not measured, with the reason.

    python -m bench.run_all                 # the full set (takes a long time)
    python -m bench.run_all --quick         # shorter runs and smaller scales (a smoke test)
    python -m bench.run_all --only parse_cost,stats_write --quick

A section headed "## Analysis" in an existing RESULTS.md is hand-written and kept across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "RESULTS.md"
ANALYSIS = "## Analysis"


@dataclass
class Figure:
    name: str
    value: str
    target: str = "—"
    verdict: str = "info"  # met | missed | info | not measured
    reason: str = ""

    def cell(self) -> str:
        if self.verdict == "missed":
            return f"**missed** — {self.reason}" if self.reason else "**missed**"
        if self.verdict == "not measured":
            return f"not measured — {self.reason}" if self.reason else "not measured"
        return self.verdict + (f" ({self.reason})" if self.reason else "")


def at_least(name: str, value: float, target: float, fmt: str = "{:.2f}", unit: str = "",
             why: str = "") -> Figure:
    shown = fmt.format(value) + unit
    ok = value >= target
    return Figure(name, shown, f"≥ {fmt.format(target)}{unit}", "met" if ok else "missed",
                  "" if ok else f"{shown} < {fmt.format(target)}{unit}{'; ' + why if why else ''}")


def at_most(name: str, value: float, target: float, fmt: str = "{:.2f}", unit: str = "",
            why: str = "", strict: bool = False) -> Figure:
    shown = fmt.format(value) + unit
    ok = value < target if strict else value <= target
    sign = "<" if strict else "≤"
    goal = f"{fmt.format(target)}{unit}" if target == 0 and not strict else \
        f"{sign} {fmt.format(target)}{unit}"
    return Figure(name, shown, goal, "met" if ok else "missed",
                  "" if ok else f"{shown} {'≥' if strict else '>'} {fmt.format(target)}{unit}"
                                f"{'; ' + why if why else ''}")


def num(text: str) -> float:
    return float(text.replace(",", ""))


# ---------------------------------------------------------------- parsers, one per benchmark


QUEUE_RATIO_TARGETS = {"bare1": 0.40, "pgq10": 0.5}  # issue 32: medians of alternating pairs
QUEUE_RATIO_NAMES = {"bare1": "bare1 (one fenced commit per job, no audit)",
                     "pgq10": "pgqueuer batch 10"}


def parse_queue_cycle(out: str, quick: bool) -> list[Figure]:
    ours = {int(num(s)): num(r) for s, r in re.findall(
        r"bf4ps fenced cycles/s at\s+([\d,]+) soldiers, \d+ workers:\s+([\d.]+)", out)}
    pgq = {int(b): num(r) for b, r in re.findall(
        r"pgqueuer jobs/s, batch\s+(\d+) \(completions committed\), one queue manager:"
        r"\s+([\d.]+)", out)}
    figs = [Figure(f"bf4ps fenced claim→start→finalize cycles/s at {s:,} soldiers",
                   f"{r:.0f}") for s, r in sorted(ours.items())]
    figs += [Figure(f"pgqueuer jobs/s, batch {b}", f"{r:.0f}") for b, r in sorted(pgq.items())]
    for name, label in (("bare1", "one durable commit per job"),
                        ("bare", "three durable commits per job")):
        figs += [Figure(f"{name} fenced cycles/s (no audit, no state: {label})", f"{num(r):.0f}")
                 for r in re.findall(rf"{name} fenced cycles/s \(.*?\), \d+ workers:\s+"
                                     r"([\d.]+)", out)]
    for s, other, pairs, r in re.findall(r"ratio bf4ps_(\d+)/(bare1|pgq10), median of (\d+) "
                                         r"alternating pairs: ([\d.]+)", out):
        figs.append(at_least(f"bf4ps at {int(s):,} soldiers / {QUEUE_RATIO_NAMES[other]} "
                             f"(median of {pairs} pairs)", num(r),
                             QUEUE_RATIO_TARGETS[other], unit="×",
                             why="the audited product cycle's work per job"))
    if len(ours) >= 2:
        small, large = min(ours), max(ours)
        fig = at_least(f"cycles/s at {large:,} / at {small:,} soldiers (flat: within 1.5×)",
                       ours[large] / ours[small], 1 / 1.5,
                       why="claim cost grows with the table")
        if large < 1_000_000:
            fig.reason = (fig.reason + "; " if fig.reason else "") + "quick scale, not the 1M bar"
        figs.append(fig)
    return figs


def parse_feeder_scale(out: str, quick: bool) -> list[Figure]:
    rows = {int(num(s)): (num(f), num(c)) for s, f, c in re.findall(
        r"([\d,]+) soldiers: replenish 1,000 jobs\s+([\d.]+) ms, claim\s+([\d.]+) ms", out)}
    figs = []
    for s, (f, c) in sorted(rows.items()):
        figs.append(Figure(f"replenish 1,000 jobs at {s:,} soldiers (median)", f"{f:.1f} ms"))
        figs.append(Figure(f"one claim at {s:,} soldiers (median)", f"{c:.2f} ms"))
    if len(rows) >= 2:
        small, large = min(rows), max(rows)
        note = "" if large >= 1_000_000 else "quick scale, not the 1M bar"
        for i, what in enumerate(("replenish", "claim")):
            fig = at_most(f"{what} at {large:,} / at {small:,} soldiers", rows[large][i]
                          / rows[small][i], 1.5, unit="×", why=f"{what} cost grows with the table")
            if note:
                fig.reason = (fig.reason + "; " if fig.reason else "") + note
            figs.append(fig)
    return figs


def parse_budget_use(out: str, quick: bool) -> list[Figure]:
    figs = []
    a = re.search(r"median achieved/allowed ([\d.]+) .*?violations (\d+)", out)
    if a:
        figs.append(at_least("A: per-egress pacing used (median egress, achieved/allowed)",
                             num(a.group(1)), 0.98, "{:.3f}"))
        figs.append(at_most("A: rate-limit violations at the simulator", num(a.group(2)), 0,
                            "{:.0f}"))
    b = re.search(r"(\d+) requests, achieved/budget ([\d.]+) .*?fullest window (\d+) of (\d+); "
                  r"fleet violations (\d+), per-IP violations (\d+)", out)
    if b:
        figs.append(at_least("B: fleet budget used (achieved/budget)", num(b.group(2)), 0.98,
                             "{:.3f}"))
        figs.append(Figure("B: fullest rolling window", f"{b.group(3)} of {b.group(4)}"))
        figs.append(at_most("B: fleet budget violations", num(b.group(5)), 0, "{:.0f}"))
        figs.append(at_most("B: per-IP violations", num(b.group(6)), 0, "{:.0f}"))
    c = re.search(r"lowest egress achieved/allowed ([\d.]+) .*?violations (\d+)", out)
    if c:
        figs.append(at_least("C: real fault mix, per-egress pacing used (lowest egress)",
                             num(c.group(1)), 0.97, "{:.3f}"))
        figs.append(at_most("C: rate-limit violations at the simulator", num(c.group(2)), 0,
                            "{:.0f}"))
    return figs


SLOWEST_REQUEST_AT_SPEED_1 = 2.2  # seconds: a weapons request, the simulator's slowest


def parse_eta_accuracy(out: str, quick: bool) -> list[Figure]:
    figs = []
    m = re.search(r"within \+-20 % of the wait: (\d+)/(\d+) = (\d+) %", out)
    if m:
        share = 100 * int(m.group(1)) / max(1, int(m.group(2)))
        figs.append(at_least(f"ETA within ±20 % of the wait ({m.group(1)}/{m.group(2)} "
                             "requests)", share, 80, "{:.0f}", " %"))
    m = re.search(r"within \+-20 % or \+-1 s:\s+(\d+)/(\d+) = (\d+) %", out)
    if m:
        figs.append(Figure("ETA within ±20 % or ±1 s", f"{m.group(3)} %"))
    idle = re.search(r"nothing ahead \((\d+) requests\): p50 ([\d.]+) s, p90 ([\d.]+) s, "
                     r"max ([\d.]+) s \(gate interval ([\d.]+) s", out)
    speed = re.search(r"simulator speed ([\d.]+)", out)
    if idle:
        interval = num(idle.group(5))
        flight = SLOWEST_REQUEST_AT_SPEED_1 / (num(speed.group(1)) if speed else 1.0)
        bound = interval + flight
        figs.append(Figure("submission → first request, lane idle: p50 / p90",
                           f"{idle.group(2)} s / {idle.group(3)} s"))
        fig = at_most(f"submission → first request, lane idle: max ({idle.group(1)} requests)",
                      num(idle.group(4)), bound, unit=" s",
                      why="a submission waited longer than a gate interval plus the request "
                          "in flight")
        fig.target += f" (interval {interval:.2f} s + request in flight {flight:.2f} s)"
        figs.append(fig)
    m = re.search(r"all collected within \+-20 % of the time to done: (\d+)/(\d+) = (\d+) %",
                  out)
    if m:
        figs.append(Figure(f"all-collected estimate within ±20 % ({m.group(1)}/{m.group(2)} "
                           "requests)", f"{m.group(3)} %"))
    return figs


WEB_LINE = re.compile(r"^(?P<name>.+?) +n=\s*(?P<n>\d+)\s+rps=\s*(?P<rps>[\d.]+)\s+"
                      r"p50=\s*(?P<p50>[\d.]+)\s+p95=\s*(?P<p95>[\d.]+)\s+p99=\s*(?P<p99>[\d.]+)"
                      r".*?errors=(?P<errors>\d+)")


def parse_web_load(out: str, quick: bool) -> list[Figure]:
    figs = []
    scale = re.search(r"seeded ([\d,]+) soldiers", out)
    at = f" at {scale.group(1)} soldiers" if scale else ""
    section = ""
    for line in out.splitlines():
        if line.startswith("-- "):
            section = line
            continue
        m = WEB_LINE.match(line)
        if not m:
            continue
        name = m.group("name").strip()
        p99, errors = num(m.group("p99")), int(m.group("errors"))
        if "open loop" in section:
            target = 200.0 if "ops" in name else 50.0
            fig = at_most(f"{name}: p99, open loop{at}", p99, target, "{:.1f}", " ms",
                          why="slower than the bar under the open-loop load")
            if errors:
                fig.verdict, fig.reason = "missed", f"{errors} errors (5xx or transport)"
            figs.append(fig)
        elif "one client" in section:
            figs.append(Figure(f"{name}: p50 service time (one client)",
                               f"{m.group('p50')} ms"))
        elif "closed loop" in section:
            figs.append(Figure(f"{name}: throughput at saturation", f"{m.group('rps')} req/s"))
    return figs


def parse_collector_footprint(out: str, quick: bool) -> list[Figure]:
    figs = []
    w = re.search(r"working: (\d+) requests served, CPU ([\d.]+) % of one core, "
                  r"max RSS ([\d.]+) MB", out)
    if w:
        figs.append(at_most("collector RSS while working (max)", num(w.group(3)), 80, "{:.1f}",
                            " MB", strict=True))
        figs.append(Figure("collector CPU while working", f"{w.group(2)} % of one core "
                           f"({w.group(1)} requests)"))
    i = re.search(r"idle:\s+CPU ([\d.]+) % of one core, RSS ([\d.]+) MB", out)
    if i:
        fig = at_most("collector CPU while idle", num(i.group(1)), 1.0, "{:.2f}", " %",
                      why="polling or heartbeats cost more than expected")
        fig.target = "near 0 % (≤ 1.00 % of one core)"
        figs.append(fig)
        figs.append(at_most("collector RSS while idle", num(i.group(2)), 80, "{:.1f}", " MB",
                            strict=True))
    return figs


def parse_parse_cost(out: str, quick: bool) -> list[Figure]:
    figs = []
    for label, key in (("parse_weapons (full parse)", "parse_weapons"),
                       ("json.loads (stdlib decode)", "json.loads"),
                       ("orjson.loads (decode only)", "orjson.loads")):
        m = re.search(re.escape(label) + r":\s+([\d.]+) ms(?:\s+\(median of (\d+)\))?", out)
        if m:
            figs.append(Figure(f"{key} of a ~600 KB weapons body (median)", f"{m.group(1)} ms"))
    r = re.search(r"ratio parse_weapons / json.loads: ([\d.]+)x", out)
    if r:
        figs.append(at_most("parse_weapons / json.loads", num(r.group(1)), 2.0, unit="×",
                            strict=True))
    return figs


def parse_stats_write(out: str, quick: bool) -> list[Figure]:
    start = out.find("{")
    if start < 0:
        return []
    try:
        data = json.loads(out[start:out.rfind("}") + 1])
    except ValueError:
        return []
    return [Figure(f"{name} write (median / p95)", f"{v['median']} / {v['p95']} ms")
            for name, v in data.get("ms", {}).items()]


def parse_intake_scale(out: str, quick: bool) -> list[Figure]:
    figs = []
    for label, secs, extra in re.findall(r"^(\S.*?)\s+([\d.]+) s\b(.*)$", out, re.M):
        if label.startswith(("machine", "x86", "aarch", "arm")):
            continue
        rate = re.search(r"\(([\d,]+) soldiers/s\)", extra)
        figs.append(Figure(label.strip(), f"{secs} s" + (f" ({rate.group(1)} soldiers/s)"
                                                          if rate else "")))
    return figs


def parse_retention_cost(out: str, quick: bool) -> list[Figure]:
    figs = []
    drop = re.search(r"partition drop \+ boundary batches:\s+([\d.]+) s \((.*)\)", out)
    delete = re.search(r"batched DELETE only:\s+([\d.]+) s \((.*)\)", out)
    filled = re.search(r": ([\d,]+) events over", out)
    at = f" ({filled.group(1)} events)" if filled else ""
    if drop:
        figs.append(Figure(f"retention by partition drop{at}", f"{drop.group(1)} s",
                           reason=drop.group(2)))
    if delete:
        figs.append(Figure(f"retention by batched DELETE{at}", f"{delete.group(1)} s",
                           reason=delete.group(2)))
    return figs


def parse_forecast_accuracy(out: str, quick: bool) -> list[Figure]:
    """One line per scenario and figure: the forecast's error against the ledger, each
    against its own bar (throughput and bootstrap marks 15 %, backlog age 25 %)."""
    figs = []
    for m in re.finditer(r"^(\S+)\s+(.+?)\s+predicted .*?error\s+([+-][\d.]+|[+-]?inf) % "
                         r"\((?:within|OUTSIDE) \+-(\d+) %\)", out, re.MULTILINE):
        figs.append(at_most(f"{m.group(1)}: {m.group(2)} forecast error",
                            abs(num(m.group(3))), float(m.group(4)), "{:.1f}", " %",
                            why="the forecast missed by more"))
    return figs or parse_unknown(out, quick)


def parse_status_latency(out: str, quick: bool) -> list[Figure]:
    figs = []
    for m in re.finditer(r"^(/\S+)\s+n=(\d+) p50\s+([\d.]+) ms\s+p95\s+([\d.]+) ms\s+"
                         r"p99\s+([\d.]+) ms", out, re.MULTILINE):
        name = f"{m.group(1)} one at a time: p99"
        if m.group(1) in ("/ops", "/api/ops/status"):
            figs.append(at_most(name, num(m.group(5)), 200, "{:.1f}", " ms"))
        else:
            figs.append(Figure(name, f"{m.group(5)} ms"))
    return figs or parse_unknown(out, quick)


def parse_unknown(out: str, quick: bool) -> list[Figure]:
    """A benchmark this runner has no parser for: its last lines, as printed."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()][-3:]
    return [Figure("output (no parser here yet)", " / ".join(lines))]


@dataclass(frozen=True)
class Bench:
    name: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    parse: Callable[[str, bool], list[Figure]]
    timeout: float  # seconds, full run (quick: a quarter, at least 10 min)
    bar: str


BENCHES: tuple[Bench, ...] = (
    Bench("queue_cycle", (), ("--jobs", "2000", "--runs", "1", "--scales", "10000,100000"),
          parse_queue_cycle, 3 * 3600,
          "engine ≥ 0.40× bare1 and ≥ 0.5× pgqueuer batch 10 (medians of alternating pairs, "
          "same server); flat 10k → 1M"),
    Bench("feeder_scale", (), ("--scales", "10000,100000", "--events", "200000", "--runs", "3"),
          parse_feeder_scale, 3 * 3600, "replenish and claim at 1M within 1.5× of 10k"),
    Bench("budget_use", (), ("--seconds", "40"), parse_budget_use, 3600,
          "≥ 98 % of the binding limit, 0 violations; in the real fault mix ≥ 97 % on every "
          "egress"),
    Bench("eta_accuracy", (), ("--requests", "15", "--mean-gap", "3", "--burst", "4"),
          parse_eta_accuracy, 3600,
          "submission → first request ≤ one gate interval + the request in flight; "
          "ETA within ±20 % for 80 % of requests"),
    Bench("web_load", (), ("--soldiers", "100000", "--sample", "2000", "--requests", "400",
                           "--seconds", "10", "--rate", "50"),
          parse_web_load, 3 * 3600, "soldier page p99 ≤ 50 ms, status/ops ≤ 200 ms at 1M soldiers"),
    Bench("collector_footprint", (), ("--seconds", "20"), parse_collector_footprint, 3600,
          "RSS < 80 MB, idle CPU near 0 %"),
    Bench("parse_cost", (), ("--runs", "30"), parse_parse_cost, 1800,
          "parsing a 600 KB weapons payload < 2× json.loads"),
    Bench("stats_write", (), ("--soldiers", "40"), parse_stats_write, 3600,
          "(no bar: cost inside the fenced success)"),
    Bench("intake_scale", (), ("--soldiers", "20000"), parse_intake_scale, 3600,
          "(no bar: BF4SW intake at full scale)"),
    Bench("retention_cost", (), ("--events", "200000"), parse_retention_cost, 3 * 3600,
          "(no bar: event retention by partition drop vs DELETE)"),
    Bench("forecast_accuracy", (), ("--scale", "0.5", "--steady", "30"),
          parse_forecast_accuracy, 3600,
          "four fleets: throughput and bootstrap marks within ±15 %, backlog age within ±25 %"),
    Bench("status_latency", (), ("--soldiers", "100000", "--sample", "2000", "--requests", "50"),
          parse_status_latency, 3 * 3600, "status/ops p99 ≤ 200 ms at 1M soldiers"),
)
NOT_BENCHMARKS = {"__init__", "common", "cpu_seconds", "fleetrun", "run_all"}


def discovered() -> list[Bench]:
    """Every benchmark script in bench/: the known ones, then any newer one (run with its
    defaults; in quick mode it is skipped, since its short arguments are not known here)."""
    known = {b.name for b in BENCHES}
    extra = sorted(p.stem for p in (REPO / "bench").glob("*.py")
                   if p.stem not in known and p.stem not in NOT_BENCHMARKS)
    return [*BENCHES, *(Bench(name, (), (), parse_unknown, 3 * 3600,
                              "(unknown to run_all: see its docstring)") for name in extra)]


@dataclass
class Run:
    bench: Bench
    command: str = ""
    seconds: float = 0.0
    code: int | None = None
    output: str = ""
    figures: list[Figure] = field(default_factory=list)
    problem: str = ""


def run_one(bench: Bench, quick: bool, show: bool) -> Run:
    result = Run(bench)
    script = REPO / "bench" / f"{bench.name}.py"
    args = bench.quick if quick else bench.full
    result.command = " ".join(["python -m", f"bench.{bench.name}", *args])
    if not script.exists():
        result.problem = f"bench/{bench.name}.py does not exist (yet): skipped"
        return result
    if quick and bench.parse is parse_unknown:
        result.problem = "new benchmark: no quick arguments known here, run without --quick"
        return result
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),
               PYTHONUNBUFFERED="1")
    timeout = max(600.0, bench.timeout / 4) if quick else bench.timeout
    began = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen([sys.executable, "-m", f"bench.{bench.name}", *args], cwd=REPO,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace") as proc:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                lines.append(line)
                if show:
                    print(f"  {bench.name}| {line}", end="", flush=True)
                if time.monotonic() - began > timeout:
                    proc.kill()
                    result.problem = f"killed after {timeout:.0f} s"
                    break
        finally:
            result.code = proc.wait()
    result.seconds = time.monotonic() - began
    result.output = "".join(lines)
    try:
        result.figures = bench.parse(result.output, quick)
    except Exception as exc:
        result.problem = f"could not read its output: {exc!r}"
    if result.code and not result.problem:
        result.problem = f"exited {result.code}"
    if not result.figures and not result.problem:
        result.problem = "printed no figure this runner recognises"
    return result


def _kept_analysis(path: Path) -> str:
    if not path.exists():
        return ""
    text = path.read_text()
    at = text.find("\n" + ANALYSIS)
    return text[at + 1:].rstrip() + "\n" if at >= 0 else ""


def render(runs: list[Run], quick: bool, machine: str, started: datetime, kept: str) -> str:
    mode = ("quick (shorter runs, smaller scales: a format and smoke check, not the bars' "
            "conditions)" if quick else "full")
    out = [
        "# Benchmark results",
        "",
        f"Written by `python -m bench.run_all{' --quick' if quick else ''}` on "
        f"{started:%Y-%m-%d %H:%M} UTC; mode: {mode}.",
        "",
        f"Machine: {machine}.",
        "",
        "Targets are the product's Bars (docs: /work/shared/product.md). Where a benchmark runs "
        "several times the value is the median it reports. *info*: a figure without a bar.",
        "",
    ]
    counts = {"met": 0, "missed": 0}
    for run in runs:
        for fig in run.figures:
            if fig.verdict in counts:
                counts[fig.verdict] += 1
    not_measured = [r for r in runs if r.problem]
    out.append(f"Summary: {counts['met']} met, {counts['missed']} missed, "
               f"{len(not_measured)} benchmark(s) with a problem.")
    out += ["", "| benchmark | figure | value | target | verdict |", "|---|---|---|---|---|"]
    for run in runs:
        if not run.figures:
            out.append(f"| {run.bench.name} | {run.bench.bar} | — | — | not measured — "
                       f"{run.problem or 'no figures'} |")
            continue
        for fig in run.figures:
            cells = (run.bench.name, fig.name, fig.value, fig.target, fig.cell())
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if not_measured:
        out += ["", "## Problems", ""]
        out += [f"- **{r.bench.name}**: {r.problem}" for r in not_measured]
    out += ["", "## Runs", ""]
    for run in runs:
        out.append(f"### {run.bench.name}")
        out.append("")
        out.append(f"Bar: {run.bench.bar}.  ")
        if run.code is None:
            out.append(f"Not run: {run.problem}.")
            out.append("")
            continue
        out.append(f"`{run.command}`: {run.seconds:.0f} s, exit code {run.code}.")
        out += ["", "<details><summary>output</summary>", "", "```text",
                run.output.rstrip()[-12000:], "```", "", "</details>", ""]
    if kept:
        out += ["", kept.rstrip()]
    else:
        out += ["", ANALYSIS, "",
                "(Hand-written notes on missed bars go here; this section is kept when the "
                "file is regenerated.)"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter runs and smaller scales")
    ap.add_argument("--only", help="comma-separated benchmark names (default: all)")
    ap.add_argument("--output", type=Path, default=RESULTS, help="where to write (RESULTS.md)")
    ap.add_argument("--quiet", action="store_true", help="do not echo the benchmarks' output")
    args = ap.parse_args(argv)
    benches = discovered()
    wanted = [b for b in benches if not args.only or b.name in args.only.split(",")]
    unknown = set(args.only.split(",")) - {b.name for b in benches} if args.only else set()
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    from bench.common import machine  # imported late: it pulls in the embedded server

    started = datetime.now(UTC)
    machine_before = machine()
    runs = []
    for bench in wanted:
        print(f"== {bench.name}", flush=True)
        run = run_one(bench, args.quick, not args.quiet)
        runs.append(run)
        print(f"== {bench.name}: {run.seconds:.0f} s, "
              f"{len(run.figures)} figures{', ' + run.problem if run.problem else ''}",
              flush=True)
    text = render(runs, args.quick, machine_before, started, _kept_analysis(args.output))
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
