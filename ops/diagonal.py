"""Diagonals and triangles: ``diag`` and MXNet's ``linalg`` copies ``_linalg_extractdiag``,
``makediag``, ``extracttrian`` and ``maketrian`` (see ``ops/linalg.py`` for the linalg
family's conventions).

``diag`` (MXNet 1.9.1 semantics): a 1-D input of length n becomes an ``(n + |k|, n + |k|)``
matrix with the input on diagonal ``k``; an input with 2 or more axes gives NumPy's
``diagonal(offset=k, axis1, axis2)`` (the diagonal as the last axis). A diagonal of
length below 0 is an error ("Diagonal does not exist"); length 0 gives shape (0,).
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register

from ._linalg_common import _Linalg, _matrices
from ._util import norm_axis


# ----------------------------------------------------------------------------------
# diagonals and triangles: copies in and out of square matrices
# ----------------------------------------------------------------------------------
def _check_offset(op, n, offset):
    if n and abs(offset) >= n:
        raise ShapeError('%s: offset %d is out of range for %dx%d matrices'
                         % (op.name, offset, n, n))


def _diag_index(xp, m, offset):
    """(rows, cols) of the ``m`` entries of diagonal ``offset``."""
    i = np.arange(m)
    return xp.asarray(i + max(-offset, 0)), xp.asarray(i + max(offset, 0))


def _trian_index(xp, n, offset, lower):
    """(rows, cols) of the triangle of MXNet's ``extracttrian`` in its order.

    ``offset < 0`` (or 0 and ``lower``): the lower triangle below diagonal ``offset``, row
    by row; ``offset > 0`` (or 0 and not ``lower``): the upper triangle above diagonal
    ``offset``, column by column.
    """
    r, c = np.tril_indices(n - abs(offset))
    if offset < 0 or (offset == 0 and lower):
        return xp.asarray(r - offset), xp.asarray(c)
    return xp.asarray(c), xp.asarray(r + offset)


def _trian_side(count):
    """m with ``m (m + 1) / 2 == count``, or None."""
    m = int((np.sqrt(8 * count + 1) - 1) / 2)
    while m * (m + 1) // 2 < count:
        m += 1
    return m if m * (m + 1) // 2 == count else None


def _scatter(xp, values, shape, rows, cols):
    out = xp.zeros(shape, dtype=values.dtype)
    out[..., rows, cols] = values
    return out


class _Offset(_Linalg):
    offset = Param(int, 0, doc='the diagonal: 0 the main one, > 0 above it, < 0 below')
    needs_inputs = False

    # what a subclass says about its entries (a diagonal or a triangle):
    def _index(self, xp, n):
        """(rows, cols) of the entries in an n x n matrix."""
        raise NotImplementedError

    def _count(self, m):
        """How many entries there are when ``m = n - abs(offset)``."""
        raise NotImplementedError

    def _side(self, count):
        """m (``n - abs(offset)``) for ``count`` entries, or None when there is none."""
        raise NotImplementedError


class _Diag:
    """The entries of diagonal ``offset``."""

    def _index(self, xp, n):
        return _diag_index(xp, n - abs(self.offset), self.offset)

    def _count(self, m):
        return m

    def _side(self, count):
        return count


class _Trian:
    """The entries of MXNet's triangle (``_trian_index``)."""

    def _index(self, xp, n):
        return _trian_index(xp, n, self.offset, self.lower)

    def _count(self, m):
        return m * (m + 1) // 2

    def _side(self, count):
        return _trian_side(count)


class _Extract(_Offset):
    """Square matrices -> vectors of their entries."""

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a = _matrices(self, in_shapes[0], square=True)
        if a is None:
            return [None], [None], []
        _check_offset(self, a[-1], self.offset)
        m = a[-1] - abs(self.offset)
        return [a], [a[:-2] + (self._count(m) if a[-1] else 0,)], []

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype(inputs)
        rows, cols = self._index(xp, a.shape[-1])
        return [a[..., rows, cols]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        g = out_grads[0]
        n = self._side(g.shape[-1]) + abs(self.offset)
        rows, cols = self._index(xp, n)
        return [_scatter(xp, g, g.shape[:-1] + (n, n), rows, cols)]


class _Make(_Offset):
    """Vectors -> square matrices holding them as their entries, zero elsewhere."""

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a = in_shapes[0]
        if a is None:
            return [None], [None], []
        a = tuple(a)
        if not a:
            raise ShapeError('%s: input %r must have at least 1 dimension' % (self.name, 'A'))
        if not a[-1]:
            return [a], [a[:-1] + (0, 0)], []
        m = self._side(a[-1])
        if m is None:
            raise ShapeError('%s: the last axis of A %s must have m (m + 1) / 2 entries (a '
                             'triangle of an m x m matrix), %d is not such a number'
                             % (self.name, a, a[-1]))
        n = m + abs(self.offset)
        return [a], [a[:-1] + (n, n)], []

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype(inputs)
        n = self._side(a.shape[-1]) + abs(self.offset)
        rows, cols = self._index(xp, n)
        return [_scatter(xp, a, a.shape[:-1] + (n, n), rows, cols)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        g = out_grads[0]
        rows, cols = self._index(xp, g.shape[-1])
        return [g[..., rows, cols]]


@register
class Extractdiag(_Diag, _Extract):
    """Diagonal ``offset`` of every square matrix, as a vector."""

    name = '_linalg_extractdiag'
    aliases = ('linalg_extractdiag',)


@register
class Makediag(_Diag, _Make):
    """Square matrices with the input vectors on diagonal ``offset``, zero elsewhere."""

    name = '_linalg_makediag'
    aliases = ('linalg_makediag',)


@register
class Extracttrian(_Trian, _Extract):
    """A triangle of every square matrix, as a vector (see ``_trian_index`` for the order):
    with ``offset`` 0 the lower (``lower``) or upper triangle with the diagonal, else the
    triangle beyond diagonal ``offset`` (``lower`` is then ignored, as in MXNet)."""

    name = '_linalg_extracttrian'
    aliases = ('linalg_extracttrian',)
    lower = Param(bool, True, doc='with offset 0: the lower triangle (else the upper)')


@register
class Maketrian(_Trian, _Make):
    """Square matrices holding the input vectors in a triangle, zero elsewhere: the inverse
    of ``extracttrian`` with the same ``offset`` and ``lower``."""

    name = '_linalg_maketrian'
    aliases = ('linalg_maketrian',)
    lower = Param(bool, True, doc='with offset 0: fill the lower triangle (else the upper)')


# --- diag ------------------------------------------------------------------------------
@register
class Diag(Operator):
    """Build a diagonal matrix from 1-D input, or extract a diagonal (see above)."""

    name = 'diag'
    k = Param(int, 0, doc='the diagonal: > 0 above the main one, < 0 below')
    axis1 = Param(int, 0, doc='first axis of the 2-D sub-arrays')
    axis2 = Param(int, 1, doc='second axis of the 2-D sub-arrays')

    def _axes(self, ndim):
        a1 = norm_axis(self.axis1, ndim, 'diag: axis')
        a2 = norm_axis(self.axis2, ndim, 'diag: axis')
        if a1 == a2:
            raise ShapeError('diag: axis1 and axis2 cannot refer to the same axis %d' % a1)
        return a1, a2

    def _diag_len(self, h, w):
        if self.k > 0:
            w -= self.k
        elif self.k < 0:
            h += self.k
        n = min(h, w)
        if n < 0:
            raise ShapeError('diag: diagonal k=%d does not exist for a %dx%d matrix'
                             % (self.k, h, w))
        return n

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) == 0:
            raise ShapeError('diag: data must have at least one dimension')
        if len(s) == 1:
            n = s[0] + abs(self.k) if s[0] > 0 else 0
            return [s], [(n, n)], []
        a1, a2 = self._axes(len(s))
        rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
        if s[a1] <= 0 or s[a2] <= 0:
            return [s], [rest + (0,)], []
        return [s], [rest + (self._diag_len(s[a1], s[a2]),)], []

    def _rows_cols(self, n):
        i = np.arange(n)
        return i + max(-self.k, 0), i + max(self.k, 0)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if x.ndim == 1:
            n = x.shape[0] + abs(self.k)
            out = xp.zeros((n, n), dtype=x.dtype)
            r, c = self._rows_cols(x.shape[0])
            out[xp.asarray(r), xp.asarray(c)] = x
            return [out]
        a1, a2 = self._axes(x.ndim)
        self._diag_len(x.shape[a1], x.shape[a2])
        return [xp.diagonal(x, offset=self.k, axis1=a1, axis2=a2).copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g, x = out_grads[0], inputs[0]
        if x.ndim == 1:
            r, c = self._rows_cols(x.shape[0])
            return [g[xp.asarray(r), xp.asarray(c)]]
        a1, a2 = self._axes(x.ndim)
        # the input's layout with axis1, axis2 moved last, then the diagonal filled in
        moved = xp.moveaxis(xp.zeros(x.shape, dtype=g.dtype), (a1, a2), (-2, -1))
        r, c = self._rows_cols(g.shape[-1])
        moved[..., xp.asarray(r), xp.asarray(c)] = g
        return [xp.moveaxis(moved, (-2, -1), (a1, a2))]
