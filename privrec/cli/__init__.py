"""The ``privrec`` command. Errors print one line and exit non-zero (traceback with --debug)."""

from __future__ import annotations

import sys

import click

from privrec import __version__
from privrec.errors import PrivrecError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="privrec")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """privrec: privacy-preserving recommendation on real data, with honest guarantees."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _register() -> None:
    from privrec.cli import datasets, demo, models, privacy, reproduce, results

    cli.add_command(datasets.datasets)
    cli.add_command(models.train)
    cli.add_command(models.evaluate)
    cli.add_command(models.recommend)
    cli.add_command(demo.demo)
    cli.add_command(reproduce.reproduce)
    cli.add_command(privacy.publish)
    cli.add_command(privacy.guarantee)
    cli.add_command(privacy.audit)
    cli.add_command(results.results)


_register()


def _process_setup() -> dict:
    """Process-wide settings belong to the entry point, not the library: a headless plot backend,
    glibc malloc tuned for large tensor churn (see privrec.utils.perf), and SIGTERM/SIGHUP handled
    like Ctrl-C so atomic writers clean their temporary files on the way out."""
    import os
    import signal

    from privrec.utils.perf import tune_cpu_allocator

    os.environ.setdefault("MPLBACKEND", "Agg")
    tune_cpu_allocator()

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            try:
                previous[sig] = signal.signal(sig, interrupt)
            except (ValueError, OSError):      # not the main thread (e.g. inside a test runner's worker)
                pass
    return previous


def _os_error(exc: OSError) -> str:
    """A file-system failure in words that name what the user typed: privrec's hidden helpers (a
    release's ``.NAME.lock``, an atomic writer's ``.NAME.*.tmp``) are reported as the folder or file
    they stand for."""
    from pathlib import Path

    name = exc.filename
    if name is None:
        return f"{exc.strerror or exc}; check the paths you gave and their permissions"
    path = Path(str(name))
    shown = path
    if path.name.startswith(".") and (path.name.endswith(".lock") or ".tmp" in path.name):
        shown = path.parent / path.name[1:].split(".lock")[0].split(".tmp")[0].rstrip(".")
    what = {PermissionError: "no permission to write or read", FileNotFoundError: "no such folder or file",
            FileExistsError: "a file is in the way of", NotADirectoryError: "a file is in the way of",
            IsADirectoryError: "a folder is in the way of"}.get(type(exc), exc.strerror or "cannot access")
    return (f"{what} {shown} ({exc.strerror}); choose an output in a folder that exists and you can write, "
            "or fix the input path")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from privrec.cli.options import INVOCATION

    INVOCATION[:] = argv                          # what reports and records name as the command that made them
    debug = "--debug" in argv
    previous = _process_setup()
    try:
        cli.main(args=argv, prog_name="privrec", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except PrivrecError as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    except OSError as exc:
        if debug:
            raise
        click.echo(f"error: {_os_error(exc)}", err=True)
        return 2
    except Exception as exc:
        if debug:
            raise
        click.echo(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
        return 1
    finally:
        import signal

        INVOCATION.clear()                        # a later in-process call (click directly) must not inherit it
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
