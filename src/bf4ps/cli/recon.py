"""`bf4ps recon --egress KEY`: reconnaissance from one egress before it joins the fleet.

Exit codes: 0 done (a recommendation printed); 1 recon could not run (no personas, no slot,
the database); 2 bad options. Every request goes through the egress gate and the fleet budget
and is counted in the ledger before it is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, NamedTuple

import click

from bf4ps.battlelog.client import BattlelogClient
from bf4ps.cli.common import echo_json, fail, run_async, settings_of
from bf4ps.db.connect import Conn, connection, resolve_url
from bf4ps.db.queries import all_rows
from bf4ps.domain import Platform
from bf4ps.fleet import conf as fleetconf
from bf4ps.fleet.seed import seed
from bf4ps.recon.ladder import Plan, PlanError, Report
from bf4ps.recon.run import Persona, Recon, ReconError, begin, finish
from bf4ps.recon.steps import reconnoitre
from bf4ps.settings import SendTimings, Settings

PLAN = Plan()  # the ladder's defaults, as the options show them


def _persona(value: str) -> Persona:
    pid, _, platform = value.partition(":")
    try:
        return int(pid), Platform(platform or "pc")
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected PERSONA_ID[:PLATFORM], e.g. "
                                 "1003662931478:pc") from None


@click.command(name="recon")
@click.option("--egress", required=True, help="The egress (rate-limit domain) to measure.")
@click.option("--source-address", default=None, help="Local IP the egress sends from.")
@click.option("--persona", "personas", multiple=True, help="PERSONA_ID[:PLATFORM] to sample "
              "(repeatable); default: --sample known soldiers from the database.")
@click.option("--sample", default=3, show_default=True, type=click.IntRange(1, 50),
              help="Known soldiers to sample when no --persona is given.")
@click.option("--start-interval", default=PLAN.start_interval, show_default=True, type=float,
              help="The ladder's first (conservative) interval, seconds.")
@click.option("--floor", default=PLAN.floor, show_default=True, type=float,
              help="The hard floor: the ladder never paces faster than this (seconds).")
@click.option("--step", default=PLAN.step, show_default=True, type=float,
              help="Each stage's interval is the previous one times this.")
@click.option("--stage-requests", default=PLAN.stage_requests, show_default=True, type=int)
@click.option("--safety", default=PLAN.safety, show_default=True, type=float,
              help="The recommendation is the fastest clean spacing measured times this.")
@click.option("--latency-jump", default=PLAN.latency_jump, show_default=True, type=float,
              help="A stage whose median latency exceeds the survey's by this factor stops.")
@click.option("--backoff-pause", default=PLAN.backoff_pause, show_default=True, type=float,
              help="Seconds to wait after a throttle sign before verifying (a penalty ends, "
              "a rolling window empties).")
@click.option("--verify-requests", default=PLAN.verify_requests, show_default=True, type=int,
              help="Requests of a back-off stage verifying the recommendation (more than a "
              "rolling window's N catches that window).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
@run_async
async def recon(ctx: click.Context, egress: str, source_address: str | None,
                personas: tuple[str, ...], sample: int, start_interval: float, floor: float,
                step: float, stage_requests: int, safety: float, latency_jump: float,
                backoff_pause: float, verify_requests: int, as_json: bool) -> None:
    """Measure every resource's sizes, latency and parse result for sample personas, then find
    the egress's safe pacing with a rate ladder; stored, printed as a table (or --json)."""
    settings = settings_of(ctx)
    try:
        plan = Plan(start_interval, floor, step, stage_requests, safety, latency_jump,
                    backoff_pause, verify_requests=verify_requests)
    except PlanError as exc:
        fail(str(exc), 2)
    wanted = [_persona(p) for p in personas]
    async with connection(await resolve_url(settings)) as conn:
        try:
            report = asdict(await _run(conn, settings, egress, source_address, plan, wanted,
                                       sample))
        except ReconError as exc:
            fail(str(exc))
    if as_json:
        echo_json(report)
    else:
        click.echo(render(report))


class _Persona(NamedTuple):
    persona_id: int
    platform: str


async def _run(conn: Conn, settings: Settings, egress: str, source: str | None, plan: Plan,
               personas: list[Persona], sample: int) -> Report:
    if not personas:
        personas = [(r.persona_id, Platform(r.platform))
                    for r in await all_rows(conn, _Persona, "recon_personas", {"n": sample})]
    if not personas:
        raise ReconError("no known soldiers to sample: name some with --persona")
    me, run_id = await begin(conn, settings.data_dir, egress, source, plan, personas)
    await seed(conn, settings, me)  # a new egress's gate, from this host's settings
    gate = await fleetconf.gate(conn, egress)  # seeded just now when it was missing
    assert gate is not None
    interval = gate.min_interval_seconds  # the fleet's pacing, put back afterwards
    async with BattlelogClient(settings.battlelog_base_url, settings.battlelog_user_agent,
                               settings.battlelog_timeout_seconds, source,
                               connect_lead=settings.battlelog_connect_lead_seconds,
                               answer_timeout=settings.battlelog_answer_timeout_seconds
                               ) as client:
        job = Recon(conn, me, SendTimings.from_settings(settings), client, plan, run_id)
        try:
            report = await reconnoitre(job, personas)
        finally:
            await job.pace(interval)  # the fleet's pacing back
        await finish(conn, job, report)
    return report


def _num(value: Any, fmt: str = "{:.3f}") -> str:
    return "–" if value is None else fmt.format(value)


def render(report: Mapping[str, Any]) -> str:
    """The report's JSON as the table the command prints without --json."""
    lines = [f"recon run {report['run_id']} from egress {report['egress']}: "
             f"{report['requests']} requests, all through the gate and the ledger", "",
             f"{'resource':9} {'ok':>5} {'wire p50':>10} {'decoded p50':>12} "
             f"{'lat p50':>8} {'lat p95':>8}  failures"]
    for resource, f in report["survey"].items():
        lines.append(f"{resource:9} {f['ok']:>2}/{f['requests']:<2} "
                     f"{_num(f['wire_bytes_p50'], '{:.0f}'):>10} "
                     f"{_num(f['decoded_bytes_p50'], '{:.0f}'):>12} "
                     f"{_num(f['latency_p50']):>8} {_num(f['latency_p95']):>8}  "
                     f"{f['failures'] or ''}")
    lines += ["", f"{'stage':>5} {'interval':>9} {'target':>7} {'spacing':>8} {'ok':>5} "
                  f"{'lat p50':>8}  sign"]
    rows = [*report["ladder"], *({**r, "stage": f"b{r['stage']}"} for r in report["backoff"])]
    for row in rows:
        lines.append(f"{row['stage']!s:>5} {row['interval_seconds']:>9.3f} "
                     f"{row['target_spacing']:>7.3f} {_num(row['spacing_p50']):>8} "
                     f"{row['ok']:>2}/{row['requests']:<2} "
                     f"{_num(row['latency_p50']):>8}  {row['sign'] or 'clean'}")
    short = [f"stage {row['stage']} {row['pace_note']}" for row in rows if row["pace_note"]]
    lines += ["", f"stopped by: {report['stopped_by']}", *short,
              "threshold (fastest clean spacing measured on the wire): "
              f"{_num(report['threshold_interval_seconds'])} s",
              f"recommended pacing: BF4PS_EGRESS_MIN_INTERVAL_SECONDS="
              f"{report['recommended_interval_seconds']} (safety factor "
              f"{report['safety_factor']}, {'verified' if report['verified'] else 'NOT verified'}"
              " after backing off)"]
    return "\n".join(lines)


COMMANDS = [recon]
