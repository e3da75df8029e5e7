"""``--user-field`` and its siblings: which column of your own file holds each role (light: no torch)."""

from __future__ import annotations

import click


def field_options(f):
    """``--user-field``, ``--item-field``, ``--rating-field``, ``--time-field``: your file's column for each role
    (where its header spells it in none of the recognised ways); read by :func:`fields_of`."""
    for role, example in (("time", "ts_ms"), ("rating", "stars"), ("item", "product"), ("user", "customer")):
        f = click.option(f"--{role}-field", f"{role}_field", default=None, metavar="COLUMN",
                         help=f"Your file's {role} column (e.g. {example}), where its header names it otherwise "
                              "than privrec recognises.")(f)
    return f


def fields_of(**kw) -> dict[str, str] | None:
    """``{"user": COLUMN, ...}`` from the ``--ROLE-field`` options given (None when none is)."""
    out = {k.removesuffix("_field"): v for k, v in kw.items() if v}
    return out or None
