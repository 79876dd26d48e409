"""reduce operators."""
from symgraph.opdef import Operator, register  # noqa: F401
