"""``mx.contrib``: MXNet's contributed modules that symgraph has (``amp``)."""
from . import amp
