"""The demo's terminal progress (rich): coverage per resource, requests per second, budget
use, collector health. With --json it writes to stderr so stdout stays one JSON object."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from bf4ps.demo.figures import Budget, Outcomes, Snapshot, Throttles


class Progress:
    def __init__(self, json_mode: bool) -> None:
        self.console = Console(stderr=json_mode)
        self.live: Live | None = None
        self.prev: tuple[float, int] | None = None

    def say(self, text: str) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
            if not self.console.is_terminal:  # its last frame ends without a line break there
                self.console.line()
        self.console.print(f"[bold]bf4ps demo[/bold] {text}")

    def started(self, url: str, password: str, logs: Path, database: str,
                bf4ps: str, horizon: float) -> None:
        self.say(f"website: [link={url}]{url}[/link]   operator console: {url}ops "
                 f"(user [bold]ops[/bold], password [bold]{password}[/bold])")
        self.console.print(f"  process logs in {logs}; Ctrl-C stops everything",
                           highlight=False, soft_wrap=True)  # a path is never cut
        self.console.print(f"  other commands against this demo (from any shell): "
                           f"BF4PS_DATABASE_URL='{database}' {bf4ps} status",
                           highlight=False, markup=False, soft_wrap=True)
        self.console.print(f"  forecasts are recorded every {horizon:g} s (an hour at this "
                           f"speed), judged by: BF4PS_DATABASE_URL='{database}' {bf4ps} "
                           f"forecast --backtest --horizon {horizon:g}",
                           highlight=False, markup=False, soft_wrap=True)
        self.live = Live(console=self.console, refresh_per_second=2, transient=False)
        self.live.start()

    def update(self, snap: Snapshot, elapsed: float, dead: list[str], happened: Outcomes,
               budget: Budget) -> None:
        if self.live is None:
            return
        total = snap.sim["requests_total"]
        rate = 0.0
        if self.prev is not None and elapsed > self.prev[0]:
            rate = (total - self.prev[1]) / (elapsed - self.prev[0])
        self.prev = (elapsed, total)
        self.live.update(self._table(snap, elapsed, rate, dead,
                                     f"{outcome_text(happened)}\n{budget_text(budget)}"))

    def _table(self, snap: Snapshot, elapsed: float, rate: float, dead: list[str],
               outcome: str) -> Table:
        t = Table(title=f"BF4PS demo — {elapsed:.0f} s, {snap.soldiers} soldiers, "
                        f"{snap.healthy} collectors healthy, {rate:.1f} requests/s, "
                        f"{snap.ready} jobs ready")
        t.add_column("resource")
        for status in ("current", "retry_wait", "unavailable", "due", "never_attempted"):
            t.add_column(status.replace("_", " "), justify="right")
        for resource, counts in snap.coverage.items():
            t.add_row(resource, *(str(counts.get(s, 0)) for s in (
                "current", "retry_wait", "unavailable", "due", "never_attempted")))
        sim = snap.sim
        t.caption = (f"Battlelog requests {sim['requests_total']}, counted in the last minute "
                     f"{snap.counted_recent}; violations seen by the simulator: "
                     f"{sim['violations']['total']}\n{outcome}"
                     + (f"; exited: {', '.join(dead)}" if dead else ""))
        return t


def outcome_text(happened: Outcomes) -> str:
    """'failed attempts 7 (malformed 5, server 2), retries 7, parked 0, throttles 0'."""
    failures = happened.failures
    classes = ", ".join(f"{k} {v}" for k, v in sorted(failures.by_error_class.items()))
    throttles = happened.throttles
    return (f"failed attempts {failures.total}" + (f" ({classes})" if classes else "")
            + f", retries scheduled {happened.retries_scheduled}, parked "
            f"{happened.unavailable}, throttles {throttles.throttled_answers} answers / "
            f"{throttles.egress_cooldowns} egress cool-downs" + _cooldowns(throttles))


def _cooldowns(throttles: Throttles) -> str:
    """'; cool-downs by signal: http_5xx 2, soft_throttle 1' (nothing when there were none)."""
    by = throttles.cooldowns_by_signal
    return ("; cool-downs by signal: " + ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
            if by else "")


def budget_text(budget: Budget) -> str:
    """'budget use 88 % of 252 requests (4 of 5 egresses had work)'."""
    use = budget.use
    return (f"budget use {'n/a' if use is None else f'{100 * use:.0f} %'} of "
            f"{budget.capacity_requests} requests ({len(budget.egresses_with_work)} of "
            f"{budget.egresses} egresses had work)")
