"""Batchify functions for :class:`~.dataloader.DataLoader` (``batchify_fn=``), as GluonNLP's
``gluonnlp.data.batchify`` and GluonCV's ``gluoncv.data.batchify`` provide them (MXNet 2.0
moved them into ``mx.gluon.data.batchify``, naming ``Tuple`` ``Group``).

A batchify function takes the list of samples of one batch and returns the batch:

* :class:`Stack` stacks equal-shaped samples along a new first axis;
* :class:`Pad` pads samples of different lengths along one axis to the longest (optionally
  returning the original lengths);
* :class:`Tuple` / :class:`Group` apply one function per field of tuple samples;
* :class:`List` keeps the samples as a list and :class:`Dict` applies one function per key.

>>> import numpy as np, symgraph as mx
>>> from symgraph.gluon.data import batchify
>>> fn = batchify.Tuple(batchify.Pad(pad_val=-1), batchify.Stack())
>>> x, y = fn([(np.array([1, 2, 3]), 0), (np.array([4]), 1)])
>>> x.asnumpy().tolist(), y.asnumpy().tolist()
([[1, 2, 3], [4, -1, -1]], [0, 1])
"""
import math

import numpy as np

from ... import ndarray as nd
from ...ndarray import NDArray
from ...base import ArgumentError, ArgumentTypeError

__all__ = ['Stack', 'Pad', 'Tuple', 'Group', 'List', 'Dict']


def _as_numpy(sample):
    return sample.asnumpy() if isinstance(sample, NDArray) else np.asarray(sample)


class Stack(object):
    """Stack samples of one shape along a new first axis into an NDArray.

    Parameters
    ----------
    dtype : str or numpy.dtype, optional
        The batch's dtype (default: the samples' own, as NumPy infers it for Python numbers;
        NDArray samples keep theirs).

    >>> import symgraph as mx
    >>> mx.gluon.data.batchify.Stack()([[1, 2], [3, 4]]).asnumpy().tolist()
    [[1, 2], [3, 4]]
    """

    def __init__(self, dtype=None):
        self._dtype = None if dtype is None else np.dtype(dtype)

    def __call__(self, data):
        if not len(data):
            raise ArgumentError('Stack: cannot batchify an empty list of samples')
        if isinstance(data[0], NDArray):
            out = nd.stack(*data)
            return out if self._dtype is None else out.astype(self._dtype, copy=False)
        try:
            out = np.stack([np.asarray(d) for d in data])
        except ValueError as err:
            raise ArgumentError('Stack: the samples must have one shape, got %s (use Pad for '
                                'samples of different lengths)'
                                % sorted({np.shape(d) for d in data})) from err
        return nd.array(out, dtype=self._dtype or out.dtype)


class Pad(object):
    """Pad samples of different lengths along ``axis`` to the longest, then stack them.

    Parameters
    ----------
    axis : int, default 0
        The padded axis of each sample (the samples' other axes must agree).
    pad_val : number, default 0
        The value of the padding.
    ret_length : bool, default False
        Also return the samples' original lengths along ``axis`` (an int32 NDArray), as
        GluonNLP's and GluonCV's ``Pad``.
    dtype : str or numpy.dtype, optional
        The batch's dtype (default: the first sample's).
    round_to : int, optional
        Round the padded length up to a multiple of this (GluonNLP's ``round_to``).

    >>> import symgraph as mx
    >>> x, n = mx.gluon.data.batchify.Pad(ret_length=True)([[1, 2], [3]])
    >>> x.asnumpy().tolist(), n.asnumpy().tolist()
    ([[1, 2], [3, 0]], [2, 1])
    """

    def __init__(self, axis=0, pad_val=0, ret_length=False, dtype=None, round_to=None):
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ArgumentTypeError('Pad: axis must be an int, got %r' % (axis,))
        if round_to is not None and (isinstance(round_to, bool) or
                                     not isinstance(round_to, (int, np.integer)) or
                                     round_to < 1):
            raise ArgumentError('Pad: round_to must be a positive int, got %r' % (round_to,))
        self._axis = int(axis)
        self._pad_val = 0 if pad_val is None else pad_val
        self._ret_length = ret_length
        self._dtype = None if dtype is None else np.dtype(dtype)
        self._round_to = round_to

    def __call__(self, data):
        if not len(data):
            raise ArgumentError('Pad: cannot batchify an empty list of samples')
        arrs = [_as_numpy(d) for d in data]
        ndim = arrs[0].ndim
        if ndim == 0 or any(a.ndim != ndim for a in arrs):
            raise ArgumentError('Pad: the samples must be arrays of one rank >= 1, got ranks '
                                '%s' % sorted({a.ndim for a in arrs}))
        axis = self._axis + ndim if self._axis < 0 else self._axis
        if not 0 <= axis < ndim:
            raise ArgumentError('Pad: axis %d is out of range for samples of rank %d'
                                % (self._axis, ndim))
        lengths = [a.shape[axis] for a in arrs]
        rest = {a.shape[:axis] + a.shape[axis + 1:] for a in arrs}
        if len(rest) > 1:
            raise ArgumentError('Pad: the samples differ in axes other than %d: %s'
                                % (axis, sorted(rest)))
        longest = max(lengths)
        if self._round_to:
            longest = int(math.ceil(longest / self._round_to)) * self._round_to
        dtype = self._dtype or arrs[0].dtype
        shape = list(arrs[0].shape)
        shape[axis] = longest
        out = np.full([len(arrs)] + shape, self._pad_val, dtype=dtype)
        for i, a in enumerate(arrs):
            index = [i] + [slice(None)] * ndim
            index[axis + 1] = slice(0, a.shape[axis])
            out[tuple(index)] = a
        batch = nd.array(out, dtype=dtype)
        if self._ret_length:
            return batch, nd.array(np.asarray(lengths, dtype=np.int32), dtype=np.int32)
        return batch


class Tuple(object):
    """Apply one batchify function per field of tuple (or list) samples; the batch is a
    tuple with one entry per field.

    Parameters
    ----------
    fn : callable or list/tuple of callables
        The functions, one per field; given as ``Tuple(f1, f2, ...)`` or ``Tuple([f1, f2])``.
    """

    def __init__(self, fn, *args):
        fns = list(fn) if isinstance(fn, (list, tuple)) and not args else [fn] + list(args)
        for i, f in enumerate(fns):
            if not callable(f):
                raise ArgumentTypeError('%s: batchify function %d is not callable: %r'
                                        % (type(self).__name__, i, f))
        self._fn = fns

    def __call__(self, data):
        for sample in data:
            if not isinstance(sample, (tuple, list)) or len(sample) != len(self._fn):
                raise ArgumentError('%s: each sample must have %d fields (one per function), '
                                    'got %r' % (type(self).__name__, len(self._fn), sample))
        return tuple(f([sample[i] for sample in data]) for i, f in enumerate(self._fn))


class Group(Tuple):
    """MXNet 2.0's name for :class:`Tuple`."""


class List(object):
    """Keep the samples as a Python list (GluonNLP's ``List``, MXNet 2.0's ``AsList``)."""

    def __call__(self, data):
        return list(data)


class Dict(object):
    """Apply one batchify function per key of dict samples; the batch is a dict.

    Parameters
    ----------
    fn_dict : dict of str to callable
    """

    def __init__(self, fn_dict):
        if not isinstance(fn_dict, dict) or not all(callable(f) for f in fn_dict.values()):
            raise ArgumentTypeError('Dict: fn_dict must be a dict of callables')
        self._fn_dict = dict(fn_dict)

    def __call__(self, data):
        missing = [k for k in self._fn_dict if any(k not in d for d in data)]
        if missing:
            raise ArgumentError('Dict: the samples lack the keys %s' % missing)
        return {k: f([d[k] for d in data]) for k, f in self._fn_dict.items()}
