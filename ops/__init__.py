"""Operator definitions (installed as ``symgraph.ops``).

Importing this package registers every operator with ``symgraph.opdef``: each module is
one family and uses only ``symgraph.opdef`` and NumPy (CuPy arrives as ``xp``). Modules
whose names start with an underscore are helpers, not families.
"""
import importlib
import pkgutil

FAMILIES = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith('_'))

for _m in FAMILIES:
    importlib.import_module('.' + _m, __name__)
