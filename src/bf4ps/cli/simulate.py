"""`bf4ps simulate ...`: local stand-ins for the outside world.

Each simulator is one subcommand of `group` (add another with `@group.command("name")`). The
simulators import their packages lazily, so `bf4ps --help` stays fast.
"""

from __future__ import annotations

import click

from bf4ps.cli.common import listen

_RATE = click.FloatRange(0.0, 1.0)
_SECONDS = click.FloatRange(min=0.0)


@click.group(name="simulate")
def group() -> None:
    """Local simulators of Battlelog and BF4SW."""


@group.command(name="battlelog")
@click.option("--host", default="127.0.0.1", show_default=True, help="Bind address.")
@click.option("--port", default=8401, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--speed",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0.0, min_open=True),
    help="Latency is divided by it; simulated play time runs this much faster.",
)
@click.option(
    "--min-interval",
    default=5.0,
    show_default=True,
    type=_SECONDS,
    help="Minimum spacing of requests per source IP, real seconds (0: off).",
)
@click.option("--window-requests", type=click.IntRange(min=1), help="At most N per IP window.")
@click.option("--window-seconds", default=20.0, show_default=True, type=_SECONDS)
@click.option(
    "--throttle-status",
    default="403",
    show_default=True,
    type=click.Choice(["403", "429", "html", "none"]),
    help="How a violation is answered (html: HTTP 200 page; none: counted only).",
)
@click.option("--penalty", default=60.0, show_default=True, type=_SECONDS, help="Cool-down, s.")
@click.option("--tolerance", default=0.0, show_default=True, type=_SECONDS)
@click.option("--fleet-budget", type=click.IntRange(min=1), help="At most N requests, all IPs.")
@click.option("--fleet-window", default=3600.0, show_default=True, type=_SECONDS)
@click.option("--fault-5xx", default=0.0, show_default=True, type=_RATE)
@click.option("--fault-timeout", default=0.0, show_default=True, type=_RATE)
@click.option("--fault-html", default=0.0, show_default=True, type=_RATE)
@click.option("--fault-error", default=0.0, show_default=True, type=_RATE)
@click.option("--fault-missing-general", default=0.0, show_default=True, type=_RATE)
@click.option("--fault-unknown", default=0.0, show_default=True, type=_RATE)
@click.option("--timeout-hold", default=120.0, show_default=True, type=_SECONDS)
@click.option("--active-fraction", default=0.3, show_default=True, type=_RATE)
@click.option(
    "--search-check-sum",
    default="ignored",
    show_default=True,
    type=click.Choice(["ignored", "required"]),
    help="required: a search without the post-check-sum of a session the start page (GET "
    "/bf4/) opened gets an error envelope.",
)
@click.option("--login-wall", default="none", show_default=True,
              type=click.Choice(["none", "search", "stats", "both"]),
              help="Without a logged-in session (POST /__sim/login) searches answer an empty "
              "list (search) and stats a GATE_REDIRECT error (stats).")
@click.option("--fault-unknown-error", default=0.0, show_default=True, type=_RATE,
              help="Stats answer an error envelope in a wording nobody has seen.")
@click.option("--fault-soft-throttle", default=0.0, show_default=True, type=_RATE,
              help="Stats answer null or a success without its stats.")
@click.option("--session-redirects", default=0, show_default=True, type=click.IntRange(0, 10),
              help="The start page redirects this many times (each hop sets a cookie).")
@click.option("--search-cap", type=click.IntRange(min=1), help="Search returns at most N "
              "personas, unescaped `_` wildcard matches first.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--access-log/--no-access-log", default=False, show_default=True)
def battlelog(access_log: bool, **knobs: object) -> None:
    """Serve a Battlelog simulator (stats, search, soldiers; /__sim/stats, /__sim/config)."""
    from bf4ps.sim.battlelog.config import ConfigError, SimConfig
    from bf4ps.sim.battlelog.server import run

    try:
        config = SimConfig(**knobs)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from exc
    sock = listen(config.host, config.port)
    click.echo(
        f"Battlelog simulator on http://{config.host}:{sock.getsockname()[1]} "
        f"(speed {config.speed}, min interval {config.min_interval} s, "
        f"throttle {config.throttle_status}); "
        "counters at /__sim/stats"
    )
    run(config, access_log=access_log, sockets=[sock])


COMMANDS: list[click.Command] = [group]
