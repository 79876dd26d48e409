"""Operator definitions (installed as ``symgraph.ops``).

Importing this package registers every operator with ``symgraph.opdef``. Each module is
one family; they use only ``symgraph.opdef`` and NumPy (CuPy arrives as ``xp``).
"""
import importlib

_FAMILIES = ('unary', 'binary', 'reduce', 'shape', 'nn', 'loss', 'conv', 'pooling', 'norm',
             'detection')

for _m in _FAMILIES:
    importlib.import_module('.' + _m, __name__)
