import os
import sys

# the operator harness is imported by the family test modules as ``harness``
sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'ops'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'golden'))

# SYMGRAPH_STRICT_CUPY=<devices>: ``import cupy`` gives the strict CPU stand-in of
# tests/cuda/strict_cupy.py, so the GPU tests (``-m gpu``) run without a GPU
if os.environ.get('SYMGRAPH_STRICT_CUPY'):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'cuda'))
    import strict_cupy
    strict_cupy.install(int(os.environ['SYMGRAPH_STRICT_CUPY']))
