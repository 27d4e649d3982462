"""Entry point: builds the one Settings object and hands it to the command groups. A bad
setting, an unreachable database or one without the BF4PS schema ends a command with a one-line
error (exit 2 for configuration, 1 for the database), never a traceback."""

from __future__ import annotations

import re

import click
import psycopg
from pydantic import ValidationError
from pydantic_settings import SettingsError

from bf4ps import __version__
from bf4ps.cli import (
    archive,
    battlelog,
    bf4sw,
    collector,
    db,
    demo,
    flags,
    fleet,
    forecast,
    recon,
    request,
    scheduler,
    simulate,
    web,
)
from bf4ps.cli.common import fail, session_name
from bf4ps.db.compat import IncompatibleSchema
from bf4ps.db.connect import name_sessions
from bf4ps.settings import Settings

# what a query meets on a database that was never migrated (or is behind this version)
SCHEMA_MISSING = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn,
                  psycopg.errors.UndefinedFunction, psycopg.errors.UndefinedObject)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bf4ps")
def cli() -> None:
    """Battlefield 4 Player Stats: collection fleet, scheduler, website."""
    name_sessions(session_name)


for _module in (demo, db, collector, scheduler, web, request, bf4sw, battlelog, simulate,
                recon, fleet, forecast, flags):
    for _command in _module.COMMANDS:
        cli.add_command(_command)
for _command in bf4sw.SIMULATE_COMMANDS:
    simulate.group.add_command(_command)
for _command in archive.BATTLELOG_COMMANDS:
    battlelog.group.add_command(_command)


_SECRET = re.compile(r"password|secret|token|database_url")  # values never echoed to a log


def configuration_problem(exc: ValidationError) -> str:
    lines = ["invalid configuration:"]
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"])
        if not field:  # a rule across settings (the timings): its message names the values
            lines.append(f"  {err['msg'].removeprefix('Value error, ')}")
            continue
        got = "(hidden)" if _SECRET.search(field) else repr(err.get("input"))
        lines.append(f"  BF4PS_{field.upper()} ({field}): {err['msg']} (got {got})")
    return "\n".join(lines)


def which_database(settings: Settings) -> str:
    if settings.database_url:
        return "the database of BF4PS_DATABASE_URL"
    return (f"the embedded PostgreSQL under {settings.data_dir} (BF4PS_DATABASE_URL is unset; "
            "a running `bf4ps demo` keeps its own under that directory's demo/)")


TLS_PROBLEMS = ("certificate verify failed", "does not match host name", "root certificate file")


def tls_hint(message: str) -> str:
    if not any(problem in message for problem in TLS_PROBLEMS):
        return ""
    return (" (with sslmode=verify-full, sslrootcert must name the CA file that signed the "
            "server's certificate, and the URL's host must be a name that certificate lists: "
            "docs/operations.md, TLS to PostgreSQL)")


def main() -> None:
    try:
        settings = Settings()
    except ValidationError as exc:
        fail(configuration_problem(exc), 2)
    except SettingsError as exc:
        fail(f"invalid configuration: {exc}", 2)
    try:
        cli(obj=settings, auto_envvar_prefix=None)
    except IncompatibleSchema as exc:
        fail(f"{which_database(settings)}: {exc}", 2)
    except SCHEMA_MISSING as exc:
        fail(f"{which_database(settings)} has no BF4PS schema, or an older one "
             f"({exc.diag.message_primary}): run `bf4ps db upgrade`")
    except psycopg.OperationalError as exc:
        lines = str(exc).strip().splitlines()
        first = lines[0] if lines else type(exc).__name__
        fail(f"cannot use {which_database(settings)}: {first}{tls_hint(first)}")


if __name__ == "__main__":
    main()
