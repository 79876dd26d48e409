"""More index-driven operators of MXNet 1.9.1: ``gather_nd``, ``scatter_nd``, ``batch_take``,
``choose_element_0index`` (an alias of ``pick``), ``fill_element_0index``, ``khatri_rao``,
``_contrib_index_copy``, ``_contrib_div_sqrt_dim``, ``_contrib_arange_like`` and
``_contrib_AdaptiveAvgPooling2D`` (``mx.sym.contrib.<name>`` reaches the ``_contrib_`` ones).

Semantics (MXNet's, checked against 1.9.1 on the CPU):

* ``gather_nd(data, indices)``: indices (M, Y...) address the first M axes of data; the output
  is Y... + data.shape[M:]. A float index x must lie in [-n, n - 1] (else an error, as MXNet's
  CPU check, which compares the float: 1.5 fails for n = 2); negative ones get n added, then
  the value is truncated (-0.5 reads row n - 1). The gradient adds the head gradient back
  into the gathered places (repeated places accumulate).
* ``scatter_nd(data, indices, shape)``: zeros of ``shape`` with ``out[indices] = data``
  (data.shape == Y... + shape[M:]); repeated places keep the last write (MXNet's CPU order).
  The data gradient is gather_nd of the head gradient.
* ``batch_take(a, indices)``: ``out[i] = a.reshape(-1, K)[i, clip(indices[i], 0, K - 1)]``
  with K = a.shape[-1]; the indices must be int32 (MXNet refuses float ones).
* ``fill_element_0index(lhs, mhs, rhs)``: lhs (n, k) with ``out[i, rhs[i]] = mhs[i]``.
* ``khatri_rao(arg0, ...)``: the column-wise Kronecker product of (M_k, N) matrices.
* ``_contrib_index_copy(old_tensor, index_vector, new_tensor)``: old with rows
  ``index_vector`` replaced by new's rows (the last write wins); old gets the head gradient
  outside the copied rows, new gets the copied rows of it.
* ``_contrib_div_sqrt_dim``: ``data / DType(sqrt(data.shape[-1]))`` (integers divide with
  truncation by the truncated root, as MXNet does).
* ``_contrib_arange_like``: ``start + (i // repeat) * step`` in data's dtype (start and step
  cast to it first; for float16 MXNet truncates both to integers), shaped like data, or 1-D
  along ``axis``; zero gradient.
* ``_contrib_AdaptiveAvgPooling2D``: NCHW averages over bins [floor(i*H/oh), ceil((i+1)*H/oh));
  ``output_size`` () gives 1x1, (s,) gives sxs, (h, w) gives hxw (and, as in MXNet, any
  other length gives 1x1).

Index inputs (float as in MXNet graphs, or integer) are truncated toward zero and get a zero
gradient. ``batch_take``, ``fill_element_0index`` and ``khatri_rao`` have no gradient in
MXNet and none here.

Deliberate differences: where MXNet reads or writes outside the arrays (negative or too large
indices of scatter_nd, index_copy and fill_element_0index) this raises an error naming the
operator; gather_nd's backward wraps negative indices as its forward does (MXNet's backward
does not and writes out of bounds); batch_take on data of more than two dimensions takes from
the rows of ``a.reshape(-1, K)`` (MXNet reads past the data there); khatri_rao and
AdaptiveAvgPooling2D require 2-D and 4-D inputs in shape inference and float inputs in type
inference (MXNet accepts more there and fails at run time); scatter_nd's backward accepts
every index its forward accepts (MXNet's applies gather_nd's float check there: 3.9 fails for
n = 4); ``mx.sym.fill_element_0index`` composes (MXNet 1.9.1's fails: "Not enough argument").
"""
import math

import numpy as np

from symgraph.base import MXNetError
from symgraph.opdef import (Operator, Param, ShapeError, TypeInferenceError, register,
                            same_type, shape_known, unify_shape)

from .indexing import scatter_add


def _linear(xp, i, dims):
    """Row numbers in the flattened ``dims`` of integer indices ``i`` (M, Y...)."""
    strides = [int(np.prod(dims[k + 1:], dtype=np.int64)) for k in range(len(dims))]
    s = xp.asarray(np.array(strides, dtype=np.int64)).reshape((len(dims),) + (1,) * (i.ndim - 1))
    return (i * s).sum(axis=0)


def _rows(xp, idx, n, op, arg, limit=None):
    """Truncated integer indices, each in [0, n) (else an error naming the operator)."""
    i = idx.astype(np.int64)
    bad = (i < 0) | (i >= n)
    if bool(bad.any()):
        raise MXNetError('%s: %r holds %g, out of range %s' % (
            op, arg, float(idx[bad][0]), limit or '[0, %d)' % n))
    return i


def _nd_shapes(op, idx, lead):
    """Check ``indices`` (M, Y...) against the ``lead`` axes; return M."""
    if len(idx) < 2:
        raise ShapeError('%s: argument %r has shape %s; it needs at least 2 dimensions '
                         '(M, Y...)' % (op, 'indices', tuple(idx)))
    if lead is not None and idx[0] > len(lead):
        raise ShapeError('%s: argument %r has shape %s: %d indices exceed the %d dimensions '
                         'of %s' % (op, 'indices', tuple(idx), idx[0], len(lead), tuple(lead)))
    return idx[0]


class _IndexOp(Operator):
    """Operators whose last-but-data inputs are indices: output type is the data's."""

    def infer_type(self, in_types):
        return list(in_types), [in_types[0]], []


@register
class GatherND(_IndexOp):
    """``out[y...] = data[indices[0, y...], ..., indices[M-1, y...]]``."""

    name = 'gather_nd'

    def list_arguments(self):
        return ['data', 'indices']

    def infer_shape(self, in_shapes, out_shapes=None):
        d, i = in_shapes[:2]
        if i is None:
            return [d, i], [None], []
        m = _nd_shapes(self.name, i, d)
        return [d, i], [None if d is None else tuple(i[1:]) + tuple(d[m:])], []

    def _index(self, xp, data, indices):
        m = indices.shape[0]
        x = indices if indices.dtype.kind == 'f' else indices.astype(np.int64)
        n = xp.asarray(np.array(data.shape[:m], dtype=x.dtype)).reshape(
            (m,) + (1,) * (x.ndim - 1))
        bad = (x > n - 1) | (x < -n)
        if bool(bad.any()):
            k = int(xp.argmax(bad.reshape(m, -1).any(axis=1)))
            raise MXNetError('gather_nd: index %g is out of bounds for axis %d with size %d'
                             % (float(x[k][bad[k]][0]), k, data.shape[k]))
        i = xp.where(x < 0, x + n, x).astype(np.int64)
        return m, _linear(xp, i, data.shape[:m])

    def forward(self, xp, inputs, aux, is_train):
        data, indices = inputs
        m, lin = self._index(xp, data, indices)
        rows = data.reshape((-1,) + data.shape[m:])
        return [rows[lin]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, indices = inputs
        gd = None
        if need[0]:
            m, lin = self._index(xp, data, indices)
            gd = xp.zeros((int(np.prod(data.shape[:m], dtype=np.int64)),) + data.shape[m:],
                          dtype=out_grads[0].dtype)
            scatter_add(xp, gd, lin.reshape(-1),
                        out_grads[0].reshape((lin.size,) + data.shape[m:]))
            gd = gd.reshape(data.shape)
        return [gd, xp.zeros_like(indices) if need[1] else None]


@register
class ScatterND(_IndexOp):
    """Zeros of ``shape`` with ``out[indices[0, y...], ...] = data[y...]``."""

    name = 'scatter_nd'
    shape = Param('shape', doc='shape of the output')

    def list_arguments(self):
        return ['data', 'indices']

    def infer_shape(self, in_shapes, out_shapes=None):
        d, i = in_shapes[:2]
        out = tuple(self.shape)
        if i is not None:
            m = _nd_shapes(self.name, i, out)
            want = tuple(i[1:]) + out[m:]
            try:
                d = unify_shape(d, want)
            except ShapeError:
                raise ShapeError('scatter_nd: argument %r has shape %s but indices %s and '
                                 'shape=%s need %s' % ('data', tuple(d), tuple(i), out,
                                                       want)) from None
        return [d, i], [out], []

    def _index(self, xp, indices):
        m = indices.shape[0]
        dims = tuple(self.shape[:m])
        n = xp.asarray(np.array(dims, dtype=np.int64)).reshape((m,) + (1,) * (indices.ndim - 1))
        i = _rows(xp, indices, n, self.name, 'indices', 'shape=%s' % (tuple(self.shape),))
        return m, _linear(xp, i, dims)

    def forward(self, xp, inputs, aux, is_train):
        data, indices = inputs
        m, lin = self._index(xp, indices)
        rest = tuple(self.shape[m:])
        out = xp.zeros((int(np.prod(self.shape[:m], dtype=np.int64)),) + rest,
                       dtype=data.dtype)
        out[lin.reshape(-1)] = data.reshape((-1,) + rest)
        return [out.reshape(self.shape)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, indices = inputs
        gd = None
        if need[0]:
            m, lin = self._index(xp, indices)
            g = out_grads[0].reshape((-1,) + tuple(self.shape[m:]))
            gd = g[lin].reshape(data.shape)
        return [gd, xp.zeros_like(indices) if need[1] else None]


@register
class BatchTake(Operator):
    """``out[i] = a[i, indices[i]]`` over the rows of ``a.reshape(-1, a.shape[-1])``."""

    name = 'batch_take'
    no_grad = True

    def list_arguments(self):
        return ['a', 'indices']

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


@register
class FillElement0Index(Operator):
    """``out = lhs`` with ``out[i, rhs[i]] = mhs[i]`` (lhs 2-D, mhs and rhs 1-D)."""

    name = 'fill_element_0index'
    no_grad = True

    def list_arguments(self):
        return ['lhs', 'mhs', 'rhs']

    def infer_shape(self, in_shapes, out_shapes=None):
        lhs, mhs, rhs = in_shapes[:3]
        for k, s, nd in (('lhs', lhs, 2), ('mhs', mhs, 1), ('rhs', rhs, 1)):
            if s is not None and len(s) != nd:
                raise ShapeError('fill_element_0index: argument %r has shape %s but must be '
                                 '%d-D (lhs 2-D, mhs and rhs 1-D)' % (k, tuple(s), nd))
        n = None
        for k, s in (('lhs', lhs), ('mhs', mhs), ('rhs', rhs)):
            if s is not None:
                try:
                    n = unify_shape(n, s[:1])
                except ShapeError:
                    raise ShapeError('fill_element_0index: argument %r has %d rows but the '
                                     'other inputs %d' % (k, s[0], n[0])) from None
        mhs = mhs if n is None else n
        rhs = rhs if n is None else n
        return [lhs, mhs, rhs], [lhs], []

    def infer_type(self, in_types):
        t = same_type(self, in_types[:2])
        return [t, t, in_types[2]], [t], []

    def forward(self, xp, inputs, aux, is_train):
        lhs, mhs, rhs = inputs
        i = _rows(xp, rhs, lhs.shape[1], self.name, 'rhs')
        hit = xp.arange(lhs.shape[1])[None, :] == i[:, None]
        return [xp.where(hit, mhs[:, None], lhs)]


@register
class IndexCopy(_IndexOp):
    """``old_tensor`` with rows ``index_vector`` replaced by the rows of ``new_tensor``."""

    name = '_contrib_index_copy'

    def list_arguments(self):
        return ['old_tensor', 'index_vector', 'new_tensor']

    def infer_shape(self, in_shapes, out_shapes=None):
        old, idx, new = in_shapes[:3]
        if out_shapes and out_shapes[0] is not None:
            old = unify_shape(old, out_shapes[0])
        if idx is not None and len(idx) != 1:
            raise ShapeError('_contrib_index_copy: argument %r has shape %s but must be 1-D'
                             % ('index_vector', tuple(idx)))
        if old is not None and new is not None:
            try:
                ok = len(old) == len(new) and unify_shape(old[1:], new[1:]) is not None
            except ShapeError:
                ok = False
            if not ok:
                raise ShapeError('_contrib_index_copy: argument %r has shape %s but %r %s '
                                 'needs (k,) + %s' % ('new_tensor', tuple(new), 'old_tensor',
                                                      tuple(old), tuple(old[1:])))
        if idx and new and idx[0] and new[0] and idx[0] != new[0]:
            raise ShapeError('_contrib_index_copy: argument %r has %d entries but %r has %d '
                             'rows' % ('index_vector', idx[0], 'new_tensor', new[0]))
        return [old, idx, new], [old], []

    def forward(self, xp, inputs, aux, is_train):
        old, idx, new = inputs
        i = _rows(xp, idx, old.shape[0], self.name, 'index_vector')
        out = old.copy()
        out[i] = new.astype(old.dtype, copy=False)
        return [out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        old, idx, new = inputs
        g = out_grads[0]
        i = _rows(xp, idx, old.shape[0], self.name, 'index_vector')
        g_old = None
        if need[0]:
            g_old = g.copy()
            g_old[i] = 0
        return [g_old, xp.zeros_like(idx) if need[1] else None,
                g[i].astype(new.dtype, copy=False) if need[2] else None]


@register
class KhatriRao(Operator):
    """Column-wise Kronecker product of ``num_args`` matrices (M_k, N) -> (prod M_k, N)."""

    name = 'khatri_rao'
    key_var_num_args = 'num_args'
    num_args = Param(int, doc='Number of input matrices.')
    no_grad = True

    def check(self):
        if self.num_args < 1:
            raise MXNetError('khatri_rao needs num_args >= 1, got %d' % self.num_args)

    def list_arguments(self):
        return ['arg%d' % i for i in range(self.num_args)]

    def infer_shape(self, in_shapes, out_shapes=None):
        shapes = list(in_shapes[:self.num_args])
        cols = None
        for k, s in enumerate(shapes):
            if s is None:
                continue
            if len(s) != 2:
                raise ShapeError('khatri_rao: argument %r has shape %s but must be a matrix'
                                 % ('arg%d' % k, tuple(s)))
            try:
                cols = unify_shape(cols, s[1:])
            except ShapeError:
                raise ShapeError('khatri_rao: argument %r has %d columns but the other '
                                 'inputs %d' % ('arg%d' % k, s[1], cols[0])) from None
        if any(s is None for s in shapes):
            return shapes, [None], []
        return shapes, [(int(np.prod([s[0] for s in shapes])), cols[0])], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        if t is not None and t not in (np.float32, np.float64):
            raise TypeInferenceError('khatri_rao: inputs have type %s; MXNet implements '
                                     'float32 and float64' % t.name)
        return [t] * self.num_args, [t], []

    def forward(self, xp, inputs, aux, is_train):
        out = inputs[0]
        for x in inputs[1:]:            # one step per input matrix
            out = (out[:, None, :] * x[None, :, :]).reshape(-1, x.shape[1])
        return [out.copy() if out is inputs[0] else out]


@register
class DivSqrtDim(Operator):
    """``data / sqrt(data.shape[-1])``."""

    name = '_contrib_div_sqrt_dim'
    needs_inputs = False

    @staticmethod
    def _root(dt, n):
        return dt.type(math.sqrt(n))

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        r = self._root(x.dtype, x.shape[-1])
        if x.dtype.kind in 'iu':         # C integer division: truncation toward zero
            return [xp.trunc(x / r).astype(x.dtype)]
        return [x / r]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        return [g / self._root(g.dtype, g.shape[-1])]


@register
class ArangeLike(Operator):
    """``start + (i // repeat) * step`` shaped like ``data`` (or 1-D along ``axis``)."""

    name = '_contrib_arange_like'
    start = Param(float, 0.0, doc='Start of interval.')
    step = Param(float, 1.0, doc='Spacing between values.')
    repeat = Param(int, 1, doc='The repeating time of all elements.')
    ctx = Param(str, '', doc='Context of output (ignored: the graph has one context).')
    axis = Param(int, None, doc='Arange elements along this axis (default: all of data).')
    no_grad = True

    def check(self):
        if self.repeat < 1:
            raise MXNetError('_contrib_arange_like: repeat must be positive, got %d'
                             % self.repeat)

    def _out_shape(self, d):
        if self.axis is None:
            return tuple(d)
        ax = self.axis + len(d) if self.axis < 0 else self.axis
        if not 0 <= ax < len(d):
            raise ShapeError('_contrib_arange_like: axis=%d is out of range for argument %r '
                             'of shape %s' % (self.axis, 'data', tuple(d)))
        return (d[ax],)

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        return [d], [None if d is None else self._out_shape(d)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = x.dtype
        start, step = self.start, self.step
        if dt == np.float16:            # MXNet 1.9.1 truncates them for float16 (only)
            start, step = math.trunc(start), math.trunc(step)
        shape = self._out_shape(x.shape)
        k = (xp.arange(int(np.prod(shape)), dtype=np.int64) // self.repeat).astype(dt)
        return [(dt.type(start) + k * dt.type(step)).astype(dt).reshape(shape)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


def _bins(xp, n_in, n_out, dtype):
    """(n_out, n_in) averaging matrix over [floor(o*n_in/n_out), ceil((o+1)*n_in/n_out))."""
    o = xp.arange(n_out)
    start = (o * n_in) // n_out
    end = ((o + 1) * n_in + n_out - 1) // n_out
    r = xp.arange(n_in)[None, :]
    hit = (r >= start[:, None]) & (r < end[:, None])
    return hit.astype(dtype) / (end - start)[:, None].astype(dtype)


@register
class AdaptiveAvgPooling2D(Operator):
    """NCHW average pooling to ``output_size`` over adaptive bins."""

    name = '_contrib_AdaptiveAvgPooling2D'
    output_size = Param('shape', (), doc='int (square) or (height, width); () gives 1x1')

    def _size(self):
        s = tuple(self.output_size or ())
        return (s[0], s[0]) if len(s) == 1 else (s if len(s) == 2 else (1, 1))

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        if d is None:
            return [d], [None], []
        if len(d) != 4:
            raise ShapeError('_contrib_AdaptiveAvgPooling2D: argument %r has shape %s but '
                             'must be 4-D (N, C, H, W)' % ('data', tuple(d)))
        return [d], [tuple(d[:2]) + self._size()], []

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != 'f':
            raise TypeInferenceError('_contrib_AdaptiveAvgPooling2D: argument %r has type %s; '
                                     'only floating point types are supported'
                                     % ('data', np.dtype(t).name))
        return [t], [t], []

    def _mats(self, xp, x):
        oh, ow = self._size()
        return _bins(xp, x.shape[2], oh, x.dtype), _bins(xp, x.shape[3], ow, x.dtype)

    def forward(self, xp, inputs, aux, is_train):
        bh, bw = self._mats(xp, inputs[0])
        return [xp.matmul(xp.matmul(bh, inputs[0]), bw.T)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        bh, bw = self._mats(xp, inputs[0])
        return [xp.matmul(xp.matmul(bh.T, out_grads[0]), bw)]
