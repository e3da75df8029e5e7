"""``privrec rerun RESULTS.json``: run again the command a report recorded, into a new folder."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from privrec.errors import DataFormatError, ParameterError

OUT_FLAGS = ("--out", "-o", "--output")


def recorded_command(results: str | Path) -> list[str]:
    """The arguments (after ``privrec``) of the command recorded in a ``results.json``."""
    path = Path(results)
    if path.is_dir():
        path = path / "results.json"
    try:
        command = json.loads(path.read_text(encoding="utf-8")).get("command")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise DataFormatError(f"{path}: not a privrec results.json ({exc})") from None
    if not isinstance(command, str) or not command.startswith("privrec "):
        raise ParameterError(f"{path} records no privrec command to run again (written by a version before "
                             "reports recorded their command, or by hand)")
    return shlex.split(command)[1:]


def with_output(argv: list[str], out: str) -> list[str]:
    """``argv`` writing to ``out`` instead of its own output folder (the flag replaced, or added as --out)."""
    args, i, replaced = [], 0, False
    while i < len(argv):
        a = argv[i]
        if a in OUT_FLAGS and i + 1 < len(argv):
            args += [a, out]
            i, replaced = i + 2, True
            continue
        if any(a.startswith(f + "=") for f in OUT_FLAGS if f.startswith("--")):
            args.append(a.split("=", 1)[0] + "=" + out)
            replaced = True
        else:
            args.append(a)
        i += 1
    return args if replaced else [*args, "--out", out]


@click.command()
@click.argument("results", type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(),
              help="Where the rerun writes (a new folder: the recorded one is left as it is).")
@click.option("--dry-run", is_flag=True, help="Print the command and stop.")
def rerun(results: str, out: str, dry_run: bool) -> None:
    """Run again the command recorded in RESULTS (a results.json or its folder), writing to --out: the same
    options, seeds and data, so the same numbers."""
    from privrec.cli import cli
    from privrec.cli.invocation import INVOCATION

    argv = with_output(recorded_command(results), out)
    click.echo("privrec " + shlex.join(argv))
    if dry_run:
        return
    saved = INVOCATION[:]
    INVOCATION[:] = argv                 # the new report records the command it actually ran
    try:
        cli.main(args=argv, prog_name="privrec", standalone_mode=False)
    finally:
        INVOCATION[:] = saved
