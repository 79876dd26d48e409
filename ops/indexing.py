"""Index-driven operators: ``take``, ``batch_take``, ``Embedding``, ``one_hot``, ``where``,
``_ravel_multi_index``, ``_unravel_index``, ``_contrib_index_array`` and
``_contrib_boolean_mask``.
The n-d gathers and scatters are in :mod:`symgraph.ops.gather_scatter`.

Indices arrive as floating-point arrays (MXNet's default dtype) and are truncated toward
zero, as MXNet's integer cast does. Gathers scatter their gradient back with accumulation
over repeated indices (:func:`scatter_add`); index inputs get a zero gradient, as in MXNet.

``batch_take(a, indices)``: ``out[i] = a.reshape(-1, K)[i, clip(indices[i], 0, K - 1)]``
with K = a.shape[-1]; the indices must be int32 (MXNet refuses float ones); no gradient
(as in MXNet). Deliberate difference: on data of more than two dimensions it takes from
the rows of ``a.reshape(-1, K)`` (MXNet reads past the data there).
"""
import numpy as np

from symgraph.base import ArgumentError, ParameterError
from symgraph.opdef import (Operator, Param, ShapeError, TypeInferenceError, register,
                            shape_known, unify_shape)

from ._util import norm_axis, scatter_add


def _as_index(xp, idx):
    return idx if idx.dtype.kind in 'iu' else idx.astype(np.int64)


@register
class Take(Operator):
    """Gather slices of ``a`` along ``axis`` at ``indices``."""

    name = 'take'
    axis = Param(int, 0, doc='the axis of `a` to index')
    mode = Param(str, 'clip', doc='out-of-range indices: clip, wrap or raise',
                 choices=('clip', 'raise', 'wrap'))

    def list_arguments(self):
        return ['a', 'indices']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a, idx = in_shapes[:2]
        if a is None or idx is None:
            return [a, idx], [None], []
        ax = norm_axis(self.axis, len(a))
        return [a, idx], [tuple(a[:ax]) + tuple(idx) + tuple(a[ax + 1:])], []

    def infer_type(self, in_types):
        return [in_types[0], in_types[1]], [in_types[0]], []

    def _index(self, xp, idx, n):
        i = _as_index(xp, idx)
        if self.mode == 'clip':
            return xp.clip(i, 0, n - 1)
        if self.mode == 'wrap':
            return xp.mod(i, n)
        if bool(((i < 0) | (i >= n)).any()):
            raise ArgumentError('take: index out of range for axis of length %d (mode=raise)'
                                % n)
        return i

    def forward(self, xp, inputs, aux, is_train):
        a, idx = inputs
        ax = norm_axis(self.axis, a.ndim)
        return [xp.take(a, self._index(xp, idx, a.shape[ax]), axis=ax)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        a, idx = inputs
        grads = [None, xp.zeros_like(idx) if need[1] else None]
        if need[0]:
            ax = norm_axis(self.axis, a.ndim)
            i = self._index(xp, idx, a.shape[ax]).reshape(-1)
            # bring the indexed axis first so that one scatter covers every index
            g = out_grads[0].reshape(a.shape[:ax] + (i.size,) + a.shape[ax + 1:])
            g = xp.moveaxis(g, ax, 0)
            ga = xp.zeros((a.shape[ax],) + a.shape[:ax] + a.shape[ax + 1:], dtype=g.dtype)
            scatter_add(xp, ga, i, g)
            grads[0] = xp.ascontiguousarray(xp.moveaxis(ga, 0, ax))
        return grads


@register
class Embedding(Operator):
    """Look up rows of ``weight`` (input_dim, output_dim) at integer-valued ``data``."""

    name = 'Embedding'
    input_dim = Param(int, doc='vocabulary size')
    output_dim = Param(int, doc='embedding size')
    dtype = Param('dtype', np.dtype('float32'), doc='dtype of weight and output')
    sparse_grad = Param(bool, False, doc='row-sparse gradient (computed dense here)')

    def list_arguments(self):
        return ['data', 'weight']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, w = in_shapes[:2]
        want = (self.input_dim, self.output_dim)
        try:
            w = unify_shape(w, want)
        except ShapeError:
            raise ShapeError('Embedding: argument %r has shape %s but (input_dim, output_dim) '
                             '= %s' % ('weight', tuple(w), want)) from None
        out = None if d is None else tuple(d) + (self.output_dim,)
        return [d, w], [out], []

    def infer_type(self, in_types):
        # a given weight's type wins over dtype, as in MXNet (a model cast to float16 keeps
        # dtype='float32' on its Embedding nodes)
        t = np.dtype(in_types[1]) if in_types[1] is not None else np.dtype(self.dtype)
        return [in_types[0], t], [t], []

    def forward(self, xp, inputs, aux, is_train):
        d, w = inputs
        # MXNet clips out-of-range indices to the table
        i = xp.clip(_as_index(xp, d), 0, self.input_dim - 1)
        return [xp.take(w, i, axis=0)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        d, w = inputs
        grads = [xp.zeros_like(d) if need[0] else None, None]
        if need[1]:
            i = xp.clip(_as_index(xp, d), 0, self.input_dim - 1).reshape(-1)
            gw = xp.zeros(w.shape, dtype=out_grads[0].dtype)
            grads[1] = scatter_add(xp, gw, i, out_grads[0].reshape(-1, self.output_dim))
        return grads


@register
class OneHot(Operator):
    """``out[..., k] = on_value if indices[...] == k else off_value`` (k < depth)."""

    name = 'one_hot'
    depth = Param(int, doc='length of the one-hot axis', minimum=0)
    on_value = Param(float, 1.0, doc='value at the index')
    off_value = Param(float, 0.0, doc='value elsewhere')
    dtype = Param('dtype', np.dtype('float32'), doc='dtype of the output')
    no_grad = True

    def list_arguments(self):
        return ['indices']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        return [d], [None if d is None else tuple(d) + (self.depth,)], []

    def infer_type(self, in_types):
        return [in_types[0]], [np.dtype(self.dtype)], []

    def forward(self, xp, inputs, aux, is_train):
        i = _as_index(xp, inputs[0])
        # out-of-range indices (negative too) match no position: a row of off_value
        hit = i[..., None] == xp.arange(self.depth)
        dt = np.dtype(self.dtype)
        # C's cast of the values (-1 in uint8 is 255), as MXNet
        on, off = (np.array(v, np.float64).astype(np.int64).astype(dt) if dt.kind in 'iub'
                   else dt.type(v) for v in (self.on_value, self.off_value))
        return [xp.where(hit, on, off).astype(dt)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


@register
class Where(Operator):
    """``x`` where ``condition`` is non-zero, else ``y``.

    ``condition`` has the shape of ``x`` or is 1-D over the first axis of ``x``.
    """

    name = 'where'

    def list_arguments(self):
        return ['condition', 'x', 'y']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        c, x, y = in_shapes[:3]
        if c is None or 0 in c:
            # MXNet's WhereOpShape infers nothing until the condition's shape is known
            return [c, x, y], [None], []
        try:
            s = unify_shape(x, y)
        except ShapeError:
            raise ShapeError('where: %r has shape %s but %r has %s'
                             % ('x', tuple(x), 'y', tuple(y))) from None
        if c is not None and s is not None:
            if len(c) == 1 and len(s) > 1:
                if c[0] and s[0] and c[0] != s[0]:
                    raise ShapeError('where: 1-D %r has length %d but %r has shape %s'
                                     % ('condition', c[0], 'x', s))
            else:
                try:
                    s = unify_shape(s, c)
                except ShapeError:
                    raise ShapeError('where: %r has shape %s but %r has %s'
                                     % ('condition', tuple(c), 'x', s)) from None
                c = s
        return [c, s, s], [s], []

    def infer_type(self, in_types):
        c, x, y = in_types[:3]
        if x is not None and y is not None and np.dtype(x) != np.dtype(y):
            raise TypeInferenceError('where: %r has type %s but %r has %s'
                                     % ('x', np.dtype(x).name, 'y', np.dtype(y).name))
        t = x if x is not None else y
        return [c, t, t], [t], []

    def _mask(self, xp, c, x):
        m = c != 0
        if m.ndim != x.ndim:
            m = m.reshape(m.shape + (1,) * (x.ndim - m.ndim))
        return m

    def forward(self, xp, inputs, aux, is_train):
        c, x, y = inputs
        return [xp.where(self._mask(xp, c, x), x, y)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        c, x, _ = inputs
        g = out_grads[0]
        m = self._mask(xp, c, x)
        zero = xp.zeros((), dtype=g.dtype)
        return [xp.zeros_like(c) if need[0] else None,
                xp.where(m, g, zero) if need[1] else None,
                xp.where(m, zero, g) if need[2] else None]


@register
class BatchTake(Operator):
    """``out[i] = a[i, indices[i]]`` over the rows of ``a.reshape(-1, a.shape[-1])``."""

    name = 'batch_take'
    no_grad = True

    def list_arguments(self):
        return ['a', 'indices']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a, i = in_shapes[:2]
        if a is not None and len(a) < 2:
            raise ShapeError('batch_take: argument %r has shape %s; it needs at least 2 '
                             'dimensions' % ('a', tuple(a)))
        if shape_known(a) and shape_known(i):
            rows = int(np.prod(a[:-1]))
            if int(np.prod(i)) != rows:
                raise ShapeError('batch_take: argument %r has shape %s (%d elements) but a %s '
                                 'has %d rows of %d' % ('indices', tuple(i), int(np.prod(i)),
                                                        tuple(a), rows, a[-1]))
        return [a, i], [None if i is None else tuple(i)], []

    def infer_type(self, in_types):
        t = in_types[1]
        if t is not None and np.dtype(t) != np.int32:
            raise TypeInferenceError('batch_take: argument %r has type %s but must be int32 '
                                     '(as in MXNet)' % ('indices', np.dtype(t).name))
        return [in_types[0], np.dtype(np.int32)], [in_types[0]], []

    def forward(self, xp, inputs, aux, is_train):
        a, indices = inputs
        k = a.shape[-1]
        rows = a.reshape(-1, k)
        i = xp.clip(indices.reshape(-1).astype(np.int64), 0, k - 1)
        return [rows[xp.arange(rows.shape[0]), i].reshape(indices.shape)]


def _trunc_div(a, b):
    """C integer division (toward zero) of int64 arrays."""
    q = a // b
    return q + ((q < 0) & (q * b != a))


class _Ravel(Operator):
    """Shared parts of ``_ravel_multi_index`` / ``_unravel_index``: a ``shape`` parameter,
    indices computed in int64 (float input truncates), a zero gradient (MXNet's
    ``MakeZeroGradNodes``)."""

    shape = Param('shape', None, doc='shape of the array the flat indices address')

    def check(self):
        if not self.shape:
            raise ParameterError('%s: parameter shape must be given (a tuple of ints)'
                                 % self.name)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


@register
class RavelMultiIndex(_Ravel):
    """Flat indices of the multi-indices in the rows of ``data`` (``ravel_multi_index``).

    As MXNet 1.9.1: data is (len(shape), N); ``r = int(r * shape[j] + data[j])`` for each
    row j, the sum computed in data's dtype and truncated at every step (2.5, 3.9 with
    shape (7, 6) give 15), no bounds check (negative and too large entries go into the sum),
    the result in data's dtype; ``shape[0]`` is not used (``-1`` is accepted).
    """

    name = '_ravel_multi_index'
    aliases = ('ravel_multi_index',)

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        d = tuple(d)
        if len(d) != 2:
            raise ShapeError('_ravel_multi_index: input %r must be two-dimensional (one row '
                             'per dimension of shape), got %s' % ('data', d))
        if d[0] and d[0] != len(self.shape):
            raise ShapeError('_ravel_multi_index: data %s must have %d rows, one per entry of '
                             'shape=%s' % (d, len(self.shape), tuple(self.shape)))
        return [d], [d[1:]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        ret = xp.zeros(x.shape[1:], np.int64)
        for j, n in enumerate(self.shape):
            if x.dtype.kind == 'f':     # MXNet: index_t ret = ret * shape[j] + x (in DType)
                ret = xp.trunc(ret.astype(x.dtype) * x.dtype.type(n) + x[j]).astype(np.int64)
            else:
                ret = ret * int(n) + x[j].astype(np.int64)
        return [ret.astype(x.dtype)]


@register
class UnravelIndex(_Ravel):
    """Multi-indices of the flat indices ``data`` into an array of ``shape``
    (``unravel_index``): one row per dimension, output shape ``(len(shape),) + data.shape``.

    As MXNet 1.9.1: data truncated to integers; each row but the first is the C remainder
    (negative for negative data), the first row is what remains (no wrap, so indices past
    the end give a first entry >= shape[0]). Deliberate difference: data of more than one
    dimension is refused (MXNet's result there is its first input values, not indices).
    """

    name = '_unravel_index'
    aliases = ('unravel_index',)

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        if len(d) != 1:
            # MXNet 1.9.1 infers (len(shape), d[0]) and fills it with data's first values
            raise ShapeError('_unravel_index: input %r must be one-dimensional, got %s'
                             % ('data', tuple(d)))
        return [tuple(d)], [(len(self.shape),) + tuple(d)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        idx = _as_index(xp, x)
        rows = [None] * len(self.shape)
        for j in range(len(self.shape) - 1, 0, -1):
            q = _trunc_div(idx, int(self.shape[j]))
            rows[j] = idx - q * int(self.shape[j])
            idx = q
        rows[0] = idx
        return [xp.stack(rows).astype(x.dtype)]


@register
class IndexArray(Operator):
    """The index of every element: ``out[i..., k] = i[axes[k]]`` (``contrib.index_array``).

    As MXNet 1.9.1: int64, shape ``data.shape + (len(axes),)`` (all axes when ``axes`` is
    None, negative axes counted from the end); data only gives the shape and gets a zero
    gradient.
    """

    name = '_contrib_index_array'
    axes = Param('shape', None, doc='the axes whose indices are given (None: all)')
    needs_inputs = True

    def _axes(self, ndim):
        if self.axes is None:
            return list(range(ndim))
        return [norm_axis(a, ndim, 'index_array: axes entry') for a in self.axes]

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        return [tuple(d)], [tuple(d) + (len(self._axes(len(d))),)], []

    def infer_type(self, in_types):
        return [in_types[0]], [np.dtype(np.int64)], []

    def forward(self, xp, inputs, aux, is_train):
        shape = inputs[0].shape
        axes = self._axes(len(shape))
        if not axes:        # a 0-d input (NumPy-shape semantics): shape (0,)
            return [xp.zeros(tuple(shape) + (0,), dtype=np.int64)]
        grids = xp.indices(shape, dtype=np.int64)
        return [xp.stack([grids[a] for a in axes], axis=-1)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


@register
class BooleanMask(Operator):
    """The rows of ``data`` whose ``index`` entry is nonzero (``contrib.boolean_mask``).

    As MXNet 1.9.1: ``axis`` must be 0; the output's length depends on the values, so its
    shape is known only when the operator runs: ``mx.nd`` calls work, a symbol graph cannot
    infer it (MXNet's dynamic shapes; here binding says so). The data gradient scatters the
    head gradient back to the kept rows; index gets a zero gradient.
    """

    name = '_contrib_boolean_mask'
    axis = Param(int, 0, doc='the axis to mask (only 0 is supported, as in MXNet)')

    def check(self):
        if self.axis != 0:
            raise ParameterError('_contrib_boolean_mask: axis=%d is not supported (MXNet 1.9.1: '
                                 '"Not supported yet"); only axis=0' % self.axis)

    def list_arguments(self):
        return ['data', 'index']

    def infer_shape(self, in_shapes):
        d, i = in_shapes
        if i is not None and len(i) != 1:
            raise ShapeError('_contrib_boolean_mask: input %r must be 1-D, got %s'
                             % ('index', tuple(i)))
        if d is not None and i is not None and d[0] and i[0] and d[0] != i[0]:
            raise ShapeError('_contrib_boolean_mask: index %s must have the length of axis 0 '
                             'of data %s' % (tuple(i), tuple(d)))
        return [d, i], [None], []

    def infer_type(self, in_types):
        return list(in_types), [in_types[0]], []

    def forward(self, xp, inputs, aux, is_train):
        data, index = inputs
        return [data[index != 0]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, index = inputs
        gd = None
        if need[0]:
            gd = xp.zeros(data.shape, out_grads[0].dtype)
            gd[index != 0] = out_grads[0]
        return [gd, xp.zeros_like(index) if need[1] else None]
