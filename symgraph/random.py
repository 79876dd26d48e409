"""Random seeds (``mx.random.seed``): operators draw from ``xp.random``."""
import numpy as np

__all__ = ['seed']


def seed(seed_state, ctx='all'):
    """Seed NumPy's (and, when present, CuPy's) global generators."""
    np.random.seed(seed_state)
    from .context import num_gpus, _cupy
    if num_gpus():
        _cupy().random.seed(seed_state)
