"""Entry point: builds the one Settings object and hands it to the command groups."""

from __future__ import annotations

import click

from bf4ps import __version__
from bf4ps.cli import battlelog, bf4sw, collector, db, demo, request, scheduler, simulate, web
from bf4ps.settings import Settings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bf4ps")
def cli() -> None:
    """Battlefield 4 Player Stats: collection fleet, scheduler, website."""


for _module in (demo, db, collector, scheduler, web, request, bf4sw, battlelog, simulate):
    for _command in _module.COMMANDS:
        cli.add_command(_command)
for _command in bf4sw.SIMULATE_COMMANDS:
    simulate.group.add_command(_command)


def main() -> None:
    settings = Settings()
    cli(obj=settings, auto_envvar_prefix=None)


if __name__ == "__main__":
    main()
