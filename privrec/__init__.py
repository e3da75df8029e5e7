"""privrec: privacy-preserving recommendation with honestly-accounted mechanisms.

Layers (one folder each): ``data`` (datasets, preprocessing, splits) ->
``privacy`` (mechanisms, guarantees, accounting) -> ``models`` -> ``training`` ->
``evaluation`` -> ``experiments`` (reproduction pipelines) and ``cli``.
"""

__version__ = "0.1.0"

from privrec.errors import PrivrecError

__all__ = ["PrivrecError", "__version__"]
