"""Error types. Every message names the problem *and* the fix.

The CLI turns any :class:`PrivrecError` into one line on stderr and a non-zero exit code.
"""

from __future__ import annotations


class PrivrecError(Exception):
    """Base class for errors a user can act on (bad input, missing data, bad parameters)."""


class ParameterError(PrivrecError, ValueError):
    """An argument is outside its valid range (e.g. epsilon <= 0)."""


class DataFormatError(PrivrecError, ValueError):
    """An input file or table is malformed (header, types, NaNs, missing columns)."""


class EmptyDataError(DataFormatError):
    """Input (or the result of a filter such as k-core) has no rows left."""


class UnknownIdError(PrivrecError, KeyError):
    """A raw user or item id is not in the dataset's id map."""

    def __str__(self) -> str:  # KeyError would otherwise print the repr with quotes
        return str(self.args[0]) if self.args else ""


class DatasetError(PrivrecError):
    """A dataset name is unknown, or fetching/verifying its files failed."""


class CheckpointError(PrivrecError):
    """A saved model cannot be read or does not match the code."""


class BudgetError(PrivrecError):
    """A call would take a model's certified privacy loss past the budget the user set."""


class ReleaseError(PrivrecError):
    """A release folder is missing, uncertified, tampered with, or being written by another process."""


class TrainingError(PrivrecError):
    """Training diverged (a non-finite loss or score); the message names the setting to change."""
