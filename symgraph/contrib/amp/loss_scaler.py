"""The dynamic loss scaler of AMP for Gluon (MXNet's ``contrib/amp/loss_scaler.py``).

Float16 gradients of small values underflow to 0; scaling the loss by a large factor
before backward keeps them representable, and the optimizer divides it out again
(``rescale_grad``). The factor adapts: it starts at 2**16; when the gradients of a step hold
an inf or a NaN the step is skipped and the factor halved; after 2000 steps in a row
without overflow it doubles (up to 2**24).

MXNet applies a new factor one step late (its ``has_overflow`` first takes the factor it
decided at the previous check, so the step right after an overflow still scales by the
old one and usually overflows again); here a halving or doubling is used from the next
``scale_loss`` on (docs/differences.md).
"""
import logging

from ... import ndarray

__all__ = ['LossScaler']

_LOG = logging.getLogger(__name__)

#: how many arrays one ``multi_all_finite`` call checks (MXNet's chunk)
_CHUNK = 200


class LossScaler(object):
    """Dynamic loss scaling.

    Parameters
    ----------
    init_scale : float, default 2**16
        The first factor.
    scale_seq_len : int, default 2000
        Steps without overflow after which the factor doubles.
    max_scale : float, default 2**24
        The largest factor.

    Attributes
    ----------
    loss_scale : float
        The current factor.
    """

    def __init__(self, init_scale=2. ** 16, scale_seq_len=2000, max_scale=2. ** 24):
        self._loss_scale = float(init_scale)
        self._max_loss_scale = float(max_scale)
        self._scale_seq_len = int(scale_seq_len)
        self._unskipped = 0

    @property
    def loss_scale(self):
        """The current factor."""
        return self._loss_scale

    @staticmethod
    def all_finite(arrays):
        """Whether every element of the NDArrays (on any contexts) is finite."""
        by_ctx = {}
        for a in arrays:
            by_ctx.setdefault(a.context, []).append(a)
        for ctx, group in by_ctx.items():
            flag = ndarray.ones((1,), ctx=ctx)
            for start in range(0, len(group), _CHUNK):
                chunk = group[start:start + _CHUNK]
                ndarray.multi_all_finite(*chunk, num_arrays=len(chunk), init_output=False,
                                         out=flag)
            if not bool(flag.asscalar()):
                return False
        return True

    def has_overflow(self, params):
        """Whether the gradients of ``params`` (Gluon Parameters, every context) hold an
        inf or a NaN; updates the factor (halved on overflow, doubled after
        ``scale_seq_len`` clean steps)."""
        grads = [g for p in params if p._grad is not None for g in p._grad]
        overflow = bool(grads) and not self.all_finite(grads)
        if overflow:
            self._loss_scale /= 2.
            self._unskipped = 0
            _LOG.info('AMP: decreasing loss scale to %f', self._loss_scale)
        else:
            self._unskipped += 1
            if self._unskipped == self._scale_seq_len:
                self._unskipped = 0
                self._loss_scale = min(self._max_loss_scale, self._loss_scale * 2.)
                _LOG.info('AMP: increasing loss scale to %f', self._loss_scale)
        return overflow
