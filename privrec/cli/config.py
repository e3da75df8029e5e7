"""``--config FILE`` for ``train`` and every ``reproduce``: option values from a TOML or YAML file, the command
line overriding it (click's ``default_map``), and ``privrec rerun``'s reading of a recorded command.

A file holds the command's own options by name (``max-len``, ``max_len`` or ``--max-len``; a flag pair by its
positive name, ``resume: false``; a repeatable option as a list; an argument such as train's MODEL by its name).
What the file sets goes through the same parsing and validation as a flag; an unknown key is refused with the
valid names, so a typo cannot be silently ignored.
"""

from __future__ import annotations

from pathlib import Path

import click

from privrec.errors import DataFormatError, ParameterError


def read_config(path: str | Path) -> dict:
    """The mapping in a ``.toml``, ``.yaml`` or ``.yml`` file."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{path}: cannot read the config file ({exc})") from None
    try:
        if suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            raise ParameterError(f"{path}: a config file is .toml, .yaml or .yml, not {suffix or 'extension-less'}")
    except ParameterError:
        raise
    except Exception as exc:          # tomllib.TOMLDecodeError, yaml.YAMLError
        raise DataFormatError(f"{path}: not a valid {suffix.lstrip('.').upper()} file ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise DataFormatError(f"{path}: a config file holds option names and values (a mapping), not a "
                              f"{type(data).__name__}")
    return data


def _names(param: click.Parameter) -> set[str]:
    out = {param.name, param.name.replace("_", "-")}
    for opt in getattr(param, "opts", []):
        out.add(opt.lstrip("-"))
    return out


def defaults_from(command: click.Command, data: dict, where: str) -> dict:
    """``data``'s keys mapped to ``command``'s parameter names (refusing unknown keys and ``--config`` itself)."""
    by_name = {}
    for p in command.params:
        if p.name and p.name != "config" and p.expose_value:
            for n in _names(p):
                by_name[n] = p.name
    out, unknown = {}, []
    for key, value in data.items():
        name = by_name.get(str(key).lstrip("-"))
        if name is None:
            unknown.append(str(key))
        else:
            out[name] = list(value) if isinstance(value, (list, tuple)) else value
    if unknown:
        valid = sorted({p.name.replace("_", "-") for p in command.params if p.name and p.name != "config"})
        raise click.BadParameter(f"{where}: unknown option(s) {', '.join(unknown)}; this command's are "
                                 f"{', '.join(valid)}", param_hint="--config")
    return out


def _load(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    try:
        data = read_config(value)
    except (ParameterError, DataFormatError) as exc:
        raise click.BadParameter(str(exc), param_hint="--config") from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults_from(ctx.command, data, value)}


def config_option(f):
    """The ``--config FILE`` option (eager: read before the others, so the file gives their defaults)."""
    return click.option("--config", type=click.Path(exists=True, dir_okay=False), default=None, is_eager=True,
                        expose_value=False, callback=_load,
                        help="A TOML or YAML file of this command's options (e.g. 'epochs = 20' or 'epochs: 20'); "
                             "options given on the command line override it.")(f)
