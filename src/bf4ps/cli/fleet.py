"""`bf4ps gate list|set` and `bf4ps budget show|set|remove`: the fleet's pacing and budget,
kept in the database (the one source of truth; collectors' environments only seed them)."""

from __future__ import annotations

from typing import Any

import click

from bf4ps.cli.common import database, echo_json, echo_listing, json_async, run_async
from bf4ps.fleet import conf as fleetconf
from bf4ps.fleet.conf import Budget, FleetConfError, GateChange, ListedGate


@click.group(name="gate")
def gate_group() -> None:
    """Egress rate gates: pacing per egress (shared by every collector on it)."""


def _window(g: ListedGate) -> str:
    if g.window_requests is None:
        return "no window"
    return f"at most {g.window_requests} per {g.window_seconds:g} s"


def describe_gate(g: ListedGate) -> str:
    cool = ""
    if g.cooling_down:
        cool = f"  cooling down until {g.cooldown_until:%H:%M:%S} UTC"
    if g.throttle_streak:
        cool += f"  throttled x{g.throttle_streak}"
    names = ", ".join(g.collectors or []) or "no collectors"
    return (f"{g.egress_key:24} every {g.min_interval_seconds:g} s, {_window(g)}{cool}  "
            f"[{names}; set by {g.updated_by or 'unknown'} "
            f"{g.updated_at:%Y-%m-%d %H:%M:%S} UTC]")


@gate_group.command(name="list")
@json_async
async def gate_list(ctx: click.Context, as_json: bool) -> None:
    """Every egress gate: pacing, window, cool-down, its collectors, who set it."""
    async with database(ctx) as conn:
        rows = await fleetconf.gates(conn)
    echo_listing(rows, as_json, describe_gate,
                 "no egress gates (a collector's first start makes its egress's)")


@gate_group.command(name="set")
@click.argument("egress")
@click.option("--interval", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Minimum spacing of the egress's requests, seconds.")
@click.option("--window-requests", type=click.IntRange(min=1), default=None,
              help="At most N requests per window (a second limit).")
@click.option("--window-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="That window's length (default 60 s).")
@click.option("--no-window", is_flag=True, help="Remove the per-window limit.")
@click.option("--cooldown", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Cool the egress down for S seconds from now (nothing is sent).")
@click.option("--end-cooldown", is_flag=True,
              help="End a cool-down now and reset the throttle streak.")
@click.option("--create", is_flag=True, help="Make the gate of a new egress (needs --interval).")
@click.option("--reason", default=None, help="Recorded with the change.")
@click.pass_context
@run_async
async def gate_set(ctx: click.Context, egress: str, interval: float | None,
                   window_requests: int | None, window_seconds: float | None, no_window: bool,
                   cooldown: float | None, end_cooldown: bool, create: bool,
                   reason: str | None) -> None:
    """Change EGRESS's gate; recorded (who, old -> new) and applied by every collector on it
    at its next slot."""
    if no_window and (window_requests is not None or window_seconds is not None):
        raise click.UsageError("--no-window cannot be given with --window-requests/-seconds")
    if cooldown is not None and end_cooldown:
        raise click.UsageError("--cooldown and --end-cooldown contradict each other")
    change = GateChange(interval, window_requests, window_seconds, no_window, cooldown,
                        end_cooldown)
    if change == GateChange() and not create:
        raise click.UsageError("nothing to change: give --interval, --window-requests, "
                               "--no-window, --cooldown or --end-cooldown")
    async with database(ctx) as conn:
        try:
            await fleetconf.set_gate(conn, egress, change, reason=reason,
                                     create=create)
        except FleetConfError as exc:
            raise click.ClickException(str(exc)) from None
        row = next(g for g in await fleetconf.gates(conn) if g.egress_key == egress)
    click.echo(describe_gate(row))


@click.group(name="budget")
def budget_group() -> None:
    """The fleet budget: N physical requests per rolling window, and its class shares."""


def _parse_shares(values: tuple[str, ...]) -> dict[str, float]:
    shares: dict[str, float] = {}
    for value in values:
        cls, sep, raw = value.partition("=")
        try:
            shares[cls.strip()] = float(raw)
        except ValueError:
            sep = ""
        if not sep:
            raise click.BadParameter(f"{value!r}: use CLASS=FRACTION, e.g. active=0.75",
                                     param_hint="--share")
    return shares


def render_budget(b: Budget) -> list[str]:
    if b.requests is None:
        head = "no fleet budget" + (" (removed)" if b.configured_at else " (never configured)")
    else:
        head = (f"fleet budget: {b.requests} requests per {b.window_seconds:g} s "
                f"({b.used} used in the current window)")
    lines = [head]
    if b.updated_by:
        lines.append(f"  set by {b.updated_by} {b.updated_at:%Y-%m-%d %H:%M:%S} UTC")
    lines.append("  shares: " + ", ".join(
        f"{cls} {'cap' if cls == 'active' else 'floor'} {f:g}" for cls, f in b.shares.items()))
    for c in b.changes:
        lines.append(f"  {c.changed_at:%Y-%m-%d %H:%M:%S} UTC  {c.setting}: "
                     f"{change_text(c.old_value, c.new_value)} by {c.changed_by}"
                     + (f" ({c.reason})" if c.reason else ""))
    return lines


def change_text(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """What changed, key by key: `requests 100 -> none, window_seconds 600 -> 3600`."""
    old, new = old or {}, new or {}

    def word(value: Any) -> str:
        return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    return ", ".join(f"{k} {word(old.get(k))} -> {word(new.get(k))}"
                     for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k))


async def _show(ctx: click.Context, as_json: bool, **change: Any) -> None:
    async with database(ctx) as conn:
        try:
            if change:
                b = await fleetconf.set_budget(conn, **change)
            else:
                b = await fleetconf.show_budget(conn)
        except FleetConfError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(b)
        return
    for line in render_budget(b):
        click.echo(line)


@budget_group.command(name="show")
@json_async
async def budget_show(ctx: click.Context, as_json: bool) -> None:
    """The fleet budget, its use, its class shares and its latest changes."""
    await _show(ctx, as_json)


@budget_group.command(name="set")
@click.argument("requests", type=click.IntRange(min=1), required=False)
@click.option("--window", "window_seconds", type=click.FloatRange(min=0, min_open=True),
              default=None, help="The rolling window, seconds.")
@click.option("--share", "shares", multiple=True, metavar="CLASS=F",
              help="A class's share: active=F (its cap), interactive|bootstrap|retry=F (their "
                   "floors, reserved while they have work). Repeatable.")
@click.option("--reason", default=None, help="Recorded with the change.")
@json_async
async def budget_set(ctx: click.Context, requests: int | None, window_seconds: float | None,
                     shares: tuple[str, ...], reason: str | None, as_json: bool) -> None:
    """Set the fleet budget to REQUESTS per --window, and/or its --share(s); recorded."""
    if requests is None and window_seconds is None and not shares:
        raise click.UsageError("nothing to change: give REQUESTS, --window or --share")
    await _show(ctx, as_json, requests=requests, window_seconds=window_seconds,
                shares=_parse_shares(shares), reason=reason)


@budget_group.command(name="remove")
@click.option("--reason", default=None, help="Recorded with the change.")
@json_async
async def budget_remove(ctx: click.Context, reason: str | None, as_json: bool) -> None:
    """No fleet budget (only the egress gates pace); no collector's environment restores it."""
    await _show(ctx, as_json, requests=None, window_seconds=None, shares={}, reason=reason,
                remove=True)


COMMANDS: list[click.Command] = [gate_group, budget_group]
