import os
import sys

# `python -m pytest` puts the checkout itself on sys.path, where ops/ and cuda/ would import
# as top-level packages: cuda/ shadows the `cuda` namespace package CuPy imports (`import
# cupy` then fails with "No module named 'cuda.pathfinder'" and every GPU test skips), and
# `import ops` makes a second copy of every operator module, registered over the first, so
# that monkeypatches of symgraph.ops.* miss. Both are installed as symgraph.ops/.cuda only.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]
for _name in ('ops', 'cuda'):
    _mod = sys.modules.get(_name)
    if _mod is not None and os.path.dirname(os.path.abspath(
            getattr(_mod, '__file__', None) or os.curdir)) == os.path.join(_ROOT, _name):
        del sys.modules[_name]

# the operator harness is imported by the family test modules as ``harness``
sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'ops'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'golden'))

# SYMGRAPH_STRICT_CUPY=<devices>: ``import cupy`` gives the strict CPU stand-in of
# tests/cuda/strict_cupy.py, so the GPU tests (``-m gpu``) run without a GPU
if os.environ.get('SYMGRAPH_STRICT_CUPY'):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'cuda'))
    import strict_cupy
    strict_cupy.install(int(os.environ['SYMGRAPH_STRICT_CUPY']))

# property-based tests (the loader fuzz tests): 'ci' by default, about a minute in all;
# ``--hypothesis-profile=long`` for a long run (the command is in README). No example
# database: runs leave nothing in the checkout.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile('ci', max_examples=150, deadline=5000, database=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile('long', max_examples=3000, deadline=20000, database=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile('ci')
