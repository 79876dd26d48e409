"""Random seeds (``mx.random.seed``): operators draw from ``xp.random``."""
import numpy as np

__all__ = ['seed']


def seed(seed_state, ctx='all'):
    """Seed NumPy's (and, when present, CuPy's) global generators."""
    np.random.seed(seed_state)
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            cupy.random.seed(seed_state)
    except Exception:
        pass
