"""``mx.random``: the seed, and the NDArray samplers of ``mx.nd.random``.

Operators draw from ``xp.random`` (NumPy's global generator, or CuPy's on a GPU).
"""
import numpy as np

__all__ = ['seed', 'uniform', 'normal', 'randn', 'randint', 'exponential', 'gamma',
           'poisson', 'shuffle']


def seed(seed_state, ctx='all'):
    """Seed NumPy's (and, when present, CuPy's) global generators."""
    np.random.seed(seed_state)
    from .context import num_gpus, _cupy
    if num_gpus():
        _cupy().random.seed(seed_state)


def __getattr__(name):
    if name in __all__:
        from .sampling import namespace
        return getattr(namespace('nd'), name)
    raise AttributeError('module symgraph.random has no attribute %r' % name)
