"""The ``compilescope`` command group, which every command module registers on, and
``--version``."""

from __future__ import annotations

import click

from .. import __version__


def _version_message() -> str:
    """``compilescope X (torch Y, python Z)``, from package metadata: torch is not imported."""
    import platform
    from importlib import metadata

    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "not installed"
    return f"compilescope {__version__} (torch {torch}, python {platform.python_version()})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_message())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="print compilescope's version (and torch's and python's) and exit.")
def cli() -> None:
    """Measure what torch.compile costs and gains on your workload across input shapes."""
