"""``mx.random``: the seed, and the NDArray samplers of ``mx.nd.random``.

Operators draw from ``opdef.random_state(xp)``: NumPy's global generator, or CuPy's
on a GPU (one per device), or in a data-parallel step a generator per device seeded
from the global one.
"""
import numpy as np

from . import ndarray as _nd
from .context import Context, num_gpus, _cupy
from .namespaces import NAMES
from .base import ArgumentError

__all__ = ['seed', 'uniform', 'normal', 'randn', 'randint', 'exponential', 'gamma',
           'poisson', 'negative_binomial', 'generalized_negative_binomial', 'multinomial',
           'shuffle']


def seed(seed_state, ctx='all'):
    """Seed the generators operators draw from.

    Parameters
    ----------
    seed_state : int
        Any int (a Python int, bool, ``np.int32`` or ``np.int64``, as MXNet's
        ``integer_types``); MXNet passes it on as a C int, so seeds equal modulo 2**32 seed
        alike (``-1``, ``2**32 - 1``).
    ctx : Context or 'all'
        ``'all'`` (MXNet's default): NumPy's global generator and CuPy's on
        every GPU; a CPU context: NumPy's only; ``mx.gpu(i)``: GPU i's only.
    """
    if not isinstance(seed_state, (int, np.int32, np.int64)):
        raise ArgumentError('seed_state must be int')
    seed_state = int(seed_state) & 0xFFFFFFFF
    if isinstance(ctx, str):
        if ctx != 'all':
            raise ArgumentError("ctx must be a Context or 'all', got %r" % (ctx,))
        np.random.seed(seed_state)
        gpus = range(num_gpus())
    elif Context(ctx).is_gpu:
        gpus = [Context(ctx).device_id]
    else:
        np.random.seed(seed_state)
        gpus = []
    if gpus:
        cupy = _cupy()
        for i in gpus:
            # cupy.random.seed seeds the current device's generator only
            with cupy.cuda.Device(i):
                cupy.random.seed(seed_state)


uniform, normal, randn, randint, exponential, gamma, poisson, negative_binomial, \
    generalized_negative_binomial, multinomial, shuffle = \
    (getattr(_nd.random, _name) for _name in NAMES)
