"""symgraph: an MXNet 1.x compatible symbolic graph engine on NumPy and CuPy."""
from . import base
from .base import MXNetError, SymgraphError
from . import opdef

from . import ops  # noqa: E402  (registers the operators; must come last)

__version__ = '0.1.0'
