"""The arguments :func:`privrec.cli.main` was called with (set there, cleared when it returns): what reports and
records name as the command that made them. Its own module so that ``main`` reads it without importing the
option helpers (and torch with them) before the command line is parsed."""

INVOCATION: list[str] = []
