"""N-d gathers and scatters of MXNet 1.9.1: ``gather_nd``, ``scatter_nd``, ``_scatter_set_nd``,
``_contrib_count_sketch``, ``fill_element_0index`` and ``_contrib_index_copy``
(``mx.sym.contrib.index_copy``).
``choose_element_0index`` is an alias of ``pick`` (:mod:`symgraph.ops.reduce`).

Semantics (MXNet's, checked against 1.9.1 on the CPU):

* ``gather_nd(data, indices)``: indices (M, Y...) address the first M axes of data; the output
  is Y... + data.shape[M:]. A float index x must lie in [-n, n - 1] (else an error, as MXNet's
  CPU check, which compares the float: 1.5 fails for n = 2); negative ones get n added, then
  the value is truncated (-0.5 reads row n - 1). The gradient adds the head gradient back
  into the gathered places (repeated places accumulate).
* ``scatter_nd(data, indices, shape)``: zeros of ``shape`` with ``out[indices] = data``
  (data.shape == Y... + shape[M:]); repeated places keep the last write (MXNet's CPU order).
  The data gradient is gather_nd of the head gradient.
* ``_scatter_set_nd(lhs, rhs, indices, shape)``: lhs with ``out[indices] = rhs`` (what
  ``NDArray.__setitem__`` runs); MXNet registers no gradient and runs it only in place
  (``out=lhs``): here it also runs out of place (a copy of lhs) and has no gradient either.
* ``fill_element_0index(lhs, mhs, rhs)``: lhs (n, k) with ``out[i, rhs[i]] = mhs[i]``; no
  gradient (as in MXNet).
* ``_contrib_index_copy(old_tensor, index_vector, new_tensor)``: old with rows
  ``index_vector`` replaced by new's rows (the last write wins); old gets the head gradient
  outside the copied rows, new gets the copied rows of it.

Index inputs (float as in MXNet graphs, or integer) are truncated toward zero and get a zero
gradient.

Deliberate differences: where MXNet reads or writes outside the arrays (negative or too large
indices of scatter_nd, index_copy and fill_element_0index) this raises an error naming the
operator; gather_nd's backward wraps negative indices as its forward does (MXNet's backward
does not and writes out of bounds); scatter_nd's backward accepts every index its forward
accepts (MXNet's applies gather_nd's float check there: 3.9 fails for n = 4);
``mx.sym.fill_element_0index`` composes (MXNet 1.9.1's fails: "Not enough argument").
"""
import numpy as np

from symgraph.base import ArgumentError
from symgraph.opdef import Operator, Param, ShapeError, register, same_type, unify_shape

from ._util import scatter_add


class IndexOutOfBoundsError(ArgumentError, IndexError):
    """An index outside its axis: an ``IndexError`` (as NumPy's, and the one MXNet raises
    when the result is read) that is also the ``ValueError`` ArgumentError is."""


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
        raise ArgumentError('%s: %r holds %g, out of range %s' % (
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

    infer_shape_uses_outputs = True

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
            raise IndexOutOfBoundsError(
                'gather_nd: index %g is out of bounds for axis %d with size %d'
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

    infer_shape_uses_outputs = True

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
class FillElement0Index(Operator):
    """``out = lhs`` with ``out[i, rhs[i]] = mhs[i]`` (lhs 2-D, mhs and rhs 1-D)."""

    name = 'fill_element_0index'
    no_grad = True

    def list_arguments(self):
        return ['lhs', 'mhs', 'rhs']

    infer_shape_uses_outputs = True

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

    infer_shape_uses_outputs = True

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
class ScatterSetND(_IndexOp):
    """``lhs`` with ``out[indices[0, y...], ..., indices[M-1, y...]] = rhs[y...]``."""

    name = '_scatter_set_nd'
    shape = Param('shape', doc='shape of lhs and of the output')
    needs_inputs = False
    inplace = ((0, 0),)

    def list_arguments(self):
        return ['lhs', 'rhs', 'indices']

    def infer_shape(self, in_shapes):
        lhs, rhs, i = in_shapes[:3]
        out = tuple(self.shape)
        try:
            lhs = unify_shape(lhs, out)
        except ShapeError:
            raise ShapeError('_scatter_set_nd: argument %r has shape %s but shape=%s'
                             % ('lhs', tuple(lhs), out)) from None
        if i is not None:
            m = _nd_shapes(self.name, i, out)
            want = tuple(i[1:]) + out[m:]
            try:
                rhs = unify_shape(rhs, want)
            except ShapeError:
                raise ShapeError('_scatter_set_nd: argument %r has shape %s but indices %s '
                                 'and shape=%s need %s' % ('rhs', tuple(rhs), tuple(i), out,
                                                           want)) from None
        return [lhs, rhs, i], [out], []

    def infer_type(self, in_types):
        t = same_type(self, in_types[:2])
        return [t, t, in_types[2]], [t], []

    def forward(self, xp, inputs, aux, is_train):
        lhs, rhs, indices = inputs
        m = indices.shape[0]
        dims = tuple(self.shape[:m])
        n = xp.asarray(np.array(dims, dtype=np.int64)).reshape((m,) + (1,) * (indices.ndim - 1))
        i = _rows(xp, indices, n, self.name, 'indices', 'shape=%s' % (tuple(self.shape),))
        rest = tuple(self.shape[m:])
        out = lhs.reshape((-1,) + rest).copy()
        out[_linear(xp, i, dims).reshape(-1)] = rhs.reshape((-1,) + rest)
        return [out.reshape(self.shape)]


@register
class CountSketch(Operator):
    """``out[n, h[j]] += s[j] * data[n, j]`` (``contrib.count_sketch``; GPU-only in MXNet).

    data (N, in_dim), h (1, in_dim) hash buckets in [0, out_dim), s (1, in_dim) signs;
    output (N, out_dim). The data gradient is ``s[j] * dy[n, h[j]]``; h and s get none.
    ``processing_batch_size`` is accepted and does not change results.
    """

    name = '_contrib_count_sketch'
    out_dim = Param(int, doc='number of hash buckets')
    processing_batch_size = Param(int, 32, doc='ignored (MXNet: rows per GPU launch)')
    needs_outputs = False

    def list_arguments(self):
        return ['data', 'h', 's']

    def infer_shape(self, in_shapes):
        d, h, s = in_shapes
        if d is not None and len(d) != 2:
            raise ShapeError('_contrib_count_sketch: input %r must be (N, in_dim), got %s'
                             % ('data', tuple(d)))
        want = None if d is None else (1, d[1])
        for name, v in (('h', h), ('s', s)):
            if v is not None and want is not None and tuple(v) != want:
                raise ShapeError('_contrib_count_sketch: input %r must be %s, got %s'
                                 % (name, want, tuple(v)))
        out = None if d is None else (d[0], self.out_dim)
        return [d, want or h, want or s], [out], []

    def infer_type(self, in_types):
        t = in_types[0]
        return [t, in_types[1] or t, in_types[2] or t], [t], []

    def _buckets(self, xp, h):
        b = h.reshape(-1).astype(np.int64)
        if bool(((b < 0) | (b >= self.out_dim)).any()):
            raise ArgumentError('_contrib_count_sketch: %r holds buckets outside [0, out_dim=%d)'
                                % ('h', self.out_dim))
        return b

    def forward(self, xp, inputs, aux, is_train):
        data, h, s = inputs
        b = self._buckets(xp, h)
        out = xp.zeros((data.shape[0], self.out_dim), data.dtype)
        scatter_add(xp, out, (slice(None), b), data * s.reshape(1, -1).astype(data.dtype))
        return [out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, h, s = inputs
        gd = None
        if need[0]:
            gd = out_grads[0][:, self._buckets(xp, h)] * s.reshape(1, -1).astype(data.dtype)
        return [gd, xp.zeros_like(h) if need[1] else None, xp.zeros_like(s) if need[2] else None]
