"""Linear algebra on (batches of) matrices: MXNet's ``linalg`` family (``mx.sym.linalg.gemm2``
is ``_linalg_gemm2``, also registered as ``linalg_gemm2``).

Every operator works on the last two axes and batches over the leading ones, as MXNet does
(``gemm`` and ``gemm2`` take the row axis from ``axis``); all inputs share one type, float32
or float64 (MXNet accepts others in type inference and fails in the forward; here inference
rejects them). Operators whose result depends on one triangle of ``A`` read only that
triangle: ``trmm``, ``trsm``, ``potrf`` and ``potri`` (``lower``, default True).

Gradients are MXNet 1.9.1's: those of ``trmm``, ``trsm`` and ``potri`` are zero outside the
triangle read; ``potrf``'s is MXNet's symmetric one, ``0.5 L^-T copyLTU(L^T dL) L^-1``
(``copyLTU`` mirrors the lower triangle to the upper), i.e. the gradient of
``potrf((A + A^T) / 2)``, not of the lower triangle alone. ``slogdet`` gives no gradient
through its sign. ``det``, ``slogdet`` and ``sumlogdiag`` of a single matrix have shape (1,),
as in MXNet.

Differences: an indefinite matrix (``potrf``) or a singular one (``inverse``, ``potri``,
``trsm``) is an MXNetError on the CPU, where MXNet's ``trsm`` gives inf; CuPy does not check
(NaN or inf). Non-square input to ``potrf``, ``potri`` and ``sumlogdiag`` is a shape error
here; MXNet's shape inference accepts it and its forward fails.
"""
import numpy as np

from symgraph.opdef import Param, ShapeError, register, unify_shape

from ._linalg_common import (_SINGULAR, _SINGULAR_TRI, _Linalg, _SameShape, _batch_of, _dim,
                             _lapack, _matrices, _t, _tri)
from symgraph.base import ArgumentError


# ----------------------------------------------------------------------------------
# products: gemm, gemm2, syrk, trmm, trsm
# ----------------------------------------------------------------------------------
class _GemmBase(_Linalg):
    transpose_a = Param(bool, False, doc='use the transpose of A')
    transpose_b = Param(bool, False, doc='use the transpose of B')
    alpha = Param(float, 1.0, doc='scale of the product')

    def _axis(self, ndim):
        ax = self.axis + ndim if self.axis < 0 else self.axis
        if not 0 <= ax < ndim - 1:
            raise ShapeError('%s: invalid row axis %d for inputs of %d dimensions (the row '
                             'axis must come before the last, column axis)'
                             % (self.name, self.axis, ndim))
        return ax

    def _product_shape(self, a, b):
        """Shape of ``op(A) op(B)`` with rows on ``axis`` and columns on the last axis."""
        if a is None or b is None:
            return None
        a, b = tuple(a), tuple(b)
        if len(a) < 2 or len(a) != len(b):
            raise ShapeError('%s: A %s and B %s must have the same number of dimensions, at '
                             'least 2' % (self.name, a, b))
        nd = len(a)
        ax = self._axis(nd)
        out = [0] * nd
        for i in range(nd - 1):
            if i != ax:
                out[i] = _dim(a[i], b[i], '%s: A %s and B %s must have the same shape except '
                              'on the row and column axes' % (self.name, a, b)
                              + ' (%d vs %d)')
        last = nd - 1
        rows, ka = (a[last], a[ax]) if self.transpose_a else (a[ax], a[last])
        kb, cols = (b[last], b[ax]) if self.transpose_b else (b[ax], b[last])
        _dim(ka, kb, '%s: A %s and B %s do not fit (transpose_a=%s, transpose_b=%s)'
             % (self.name, a, b, self.transpose_a, self.transpose_b) + ': %d vs %d')
        out[ax], out[last] = rows, cols
        return tuple(out)

    def _moved(self, xp, x, ax):
        """Rows to axis -2 (the matrices of the batch on the last two axes)."""
        return x if ax == x.ndim - 2 else xp.moveaxis(x, ax, -2)

    def _back(self, xp, x, ax):
        return xp.ascontiguousarray(x if ax == x.ndim - 2 else xp.moveaxis(x, -2, ax))

    def _ops(self, xp, a, b, ax):
        a, b = self._moved(xp, a, ax), self._moved(xp, b, ax)
        return (_t(xp, a) if self.transpose_a else a), (_t(xp, b) if self.transpose_b else b)

    def _product(self, xp, a, b):
        ax = self._axis(a.ndim)
        oa, ob = self._ops(xp, a, b, ax)
        out = xp.matmul(oa, ob)
        return out * self.alpha if self.alpha != 1.0 else out, ax

    def _product_grads(self, xp, g, a, b, need, ax):
        """Gradients of ``alpha op(A) op(B)`` for A and B given the head ``g``."""
        oa, ob = self._ops(xp, a, b, ax)
        g = self._moved(xp, g, ax)
        if self.alpha != 1.0:
            g = g * self.alpha
        ga = gb = None
        if need[0]:
            d = xp.matmul(g, _t(xp, ob))
            ga = self._back(xp, _t(xp, d) if self.transpose_a else d, ax)
        if need[1]:
            d = xp.matmul(_t(xp, oa), g)
            gb = self._back(xp, _t(xp, d) if self.transpose_b else d, ax)
        return ga, gb


@register
class Gemm(_GemmBase):
    """``alpha * op(A) op(B) + beta * C`` per matrix, ``op`` the optional transpose.

    The matrices are formed by the row axis ``axis`` (default -2) and the last axis; all
    other axes are batch axes and must agree. C has the shape of the output.
    """

    name = '_linalg_gemm'
    aliases = ('linalg_gemm',)
    beta = Param(float, 1.0, doc='scale of C')
    axis = Param(int, -2, doc='the axis of the matrix rows')
    needs_inputs = (0, 1)

    def list_arguments(self):
        return ['A', 'B', 'C']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a, b, c = in_shapes[:3]
        out = self._product_shape(a, b)
        if out_shapes and out_shapes[0] is not None:
            out = unify_shape(out, out_shapes[0], '%s: output shape' % self.name)
        if c is not None and out is not None and len(c) != len(out):
            raise ShapeError('%s: C has shape %s, expected %s (the shape of the output)'
                             % (self.name, tuple(c), out))
        try:
            out = unify_shape(out, c)
        except ShapeError:
            raise ShapeError('%s: C has shape %s, expected %s (the shape of the output)'
                             % (self.name, tuple(c), out)) from None
        return [a, b, out], [out], []

    def forward(self, xp, inputs, aux, is_train):
        a, b, c = inputs
        self._check_dtype(inputs)
        out, ax = self._product(xp, a, b)
        out = self._back(xp, out, ax)
        return [out + (c * self.beta if self.beta != 1.0 else c)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        a, b = inputs[:2]
        g = out_grads[0]
        ga = gb = gc = None
        if need[0] or need[1]:
            ga, gb = self._product_grads(xp, g, a, b, need, self._axis(g.ndim))
        if need[2]:
            gc = g * self.beta if self.beta != 1.0 else g.copy()
        return [ga, gb, gc]


@register
class Gemm2(_GemmBase):
    """``alpha * op(A) op(B)`` per matrix (``gemm`` without C)."""

    name = '_linalg_gemm2'
    aliases = ('linalg_gemm2',)
    axis = Param(int, -2, doc='the axis of the matrix rows')

    def list_arguments(self):
        return ['A', 'B']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a, b = in_shapes[:2]
        return [a, b], [self._product_shape(a, b)], []

    def forward(self, xp, inputs, aux, is_train):
        self._check_dtype(inputs)
        out, ax = self._product(xp, *inputs)
        return [self._back(xp, out, ax)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        return list(self._product_grads(xp, g, inputs[0], inputs[1], need,
                                        self._axis(g.ndim)))


@register
class Syrk(_Linalg):
    """``alpha * A A^T``, or ``alpha * A^T A`` with ``transpose``, per matrix."""

    name = '_linalg_syrk'
    aliases = ('linalg_syrk',)
    transpose = Param(bool, False, doc='compute A^T A instead of A A^T')
    alpha = Param(float, 1.0, doc='scale of the product')

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a = _matrices(self, in_shapes[0])
        if a is None:
            return [None], [None], []
        n = a[-1] if self.transpose else a[-2]
        return [a], [a[:-2] + (n, n)], []

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype(inputs)
        out = xp.matmul(_t(xp, a), a) if self.transpose else xp.matmul(a, _t(xp, a))
        return [out * self.alpha if self.alpha != 1.0 else out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        a, g = inputs[0], out_grads[0]
        gs = g + _t(xp, g)
        if self.alpha != 1.0:
            gs = gs * self.alpha
        return [xp.matmul(a, gs) if self.transpose else xp.matmul(gs, a)]


class _Triangular(_Linalg):
    """``trmm`` / ``trsm``: A triangular (only the ``lower`` or upper triangle is read)."""

    transpose = Param(bool, False, doc='use the transpose of the triangular matrix')
    rightside = Param(bool, False, doc='multiply / solve from the right')
    lower = Param(bool, True, doc='A is lower triangular (else upper)')
    alpha = Param(float, 1.0, doc='scale of the result')

    def list_arguments(self):
        return ['A', 'B']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a = _matrices(self, in_shapes[0], square=True)
        b = _matrices(self, in_shapes[1], 'B')
        if out_shapes and out_shapes[0] is not None:
            b = _matrices(self, unify_shape(b, out_shapes[0], '%s: B and output shapes'
                                            % self.name), 'B')
        if a is None or b is None:
            return [a, b], [b], []
        if len(a) != len(b):
            raise ShapeError('%s: A %s and B %s must have the same number of dimensions'
                             % (self.name, a, b))
        msg = '%s: A %s and B %s must have the same batch dimensions' % (self.name, a, b)
        batch = tuple(_dim(x, y, msg + ' (%d vs %d)') for x, y in zip(a[:-2], b[:-2]))
        k = -1 if self.rightside else -2
        n = _dim(a[-1], b[k], '%s: B %s does not fit the %s matrix A %s (rightside=%s)'
                 % (self.name, b, 'x'.join(map(str, a[-2:])), a, self.rightside)
                 + ': %d vs %d')
        a = batch + (n, n)
        b = batch + ((b[-2], n) if self.rightside else (n, b[-1]))
        return [a, b], [b], []

    def _op_a(self, xp, a):
        tri = _tri(xp, a, self.lower)
        return _t(xp, tri) if self.transpose else tri

    def _grad_a(self, xp, d_op):
        """The gradient of A from that of ``op(A)``: zero outside the triangle read."""
        return xp.ascontiguousarray(_tri(xp, _t(xp, d_op) if self.transpose else d_op,
                                         self.lower))


@register
class Trmm(_Triangular):
    """``alpha * op(A) B``, or ``alpha * B op(A)`` with ``rightside``, A triangular."""

    name = '_linalg_trmm'
    aliases = ('linalg_trmm',)

    def forward(self, xp, inputs, aux, is_train):
        a, b = inputs
        self._check_dtype(inputs)
        oa = self._op_a(xp, a)
        out = xp.matmul(b, oa) if self.rightside else xp.matmul(oa, b)
        return [out * self.alpha if self.alpha != 1.0 else out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        a, b = inputs
        g = out_grads[0]
        if self.alpha != 1.0:
            g = g * self.alpha
        oa = self._op_a(xp, a)
        ga = gb = None
        if self.rightside:
            if need[0]:
                ga = self._grad_a(xp, xp.matmul(_t(xp, b), g))
            if need[1]:
                gb = xp.matmul(g, _t(xp, oa))
        else:
            if need[0]:
                ga = self._grad_a(xp, xp.matmul(g, _t(xp, b)))
            if need[1]:
                gb = xp.matmul(_t(xp, oa), g)
        return [ga, gb]


@register
class Trsm(_Triangular):
    """The solution X of ``op(A) X = alpha B``, or of ``X op(A) = alpha B`` with
    ``rightside``, A triangular."""

    name = '_linalg_trsm'
    aliases = ('linalg_trsm',)
    needs_outputs = True

    def forward(self, xp, inputs, aux, is_train):
        a, b = inputs
        self._check_dtype(inputs)
        oa = self._op_a(xp, a)
        rhs = b * self.alpha if self.alpha != 1.0 else b
        if self.rightside:      # X op(A) = R  <=>  op(A)^T X^T = R^T
            x = _lapack(xp, self, _SINGULAR_TRI, xp.linalg.solve, _t(xp, oa), _t(xp, rhs))
            x = _t(xp, x)
        else:
            x = _lapack(xp, self, _SINGULAR_TRI, xp.linalg.solve, oa, rhs)
        return [xp.ascontiguousarray(x)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        a, g, x = inputs[0], out_grads[0], outputs[0]
        oa = self._op_a(xp, a)
        if self.rightside:      # H = G op(A)^-T; dB = alpha H, d op(A) = -X^T H
            h = _t(xp, _lapack(xp, self, _SINGULAR_TRI, xp.linalg.solve, oa, _t(xp, g)))
            d_op = -xp.matmul(_t(xp, x), h)
        else:                   # H = op(A)^-T G; dB = alpha H, d op(A) = -H X^T
            h = _lapack(xp, self, _SINGULAR_TRI, xp.linalg.solve, _t(xp, oa), g)
            d_op = -xp.matmul(h, _t(xp, x))
        ga = self._grad_a(xp, d_op) if need[0] else None
        gb = None
        if need[1]:
            gb = xp.ascontiguousarray(h * self.alpha if self.alpha != 1.0 else h)
        return [ga, gb]


# ----------------------------------------------------------------------------------
# factorisations and functions of square matrices
# ----------------------------------------------------------------------------------
class _UpperByTranspose(_SameShape):
    """``lower=False``: the upper triangle holds the matrix; computed as the lower case of
    the transposed input, with every array of ``forward``/``backward`` transposed back."""

    lower = Param(bool, True, doc='the lower (True) or upper (False) triangle is used')
    keyword_only_params = ('lower',)     # MXNet 1.9.1 has no such parameter

    def forward(self, xp, inputs, aux, is_train):
        if self.lower:
            return self._forward(xp, inputs)
        out = self._forward(xp, [_t(xp, inputs[0])])
        return [xp.ascontiguousarray(_t(xp, out[0]))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        if self.lower:
            return self._backward(xp, out_grads[0], inputs, outputs)
        tr = [None if a is None else _t(xp, a) for a in inputs]
        g = self._backward(xp, _t(xp, out_grads[0]), tr, [_t(xp, outputs[0])])[0]
        return [xp.ascontiguousarray(_t(xp, g))]


@register
class Potrf(_UpperByTranspose):
    """The lower Cholesky factor L (``A = L L^T``) of a symmetric positive definite A, or
    with ``lower=False`` the upper one U (``A = U^T U``).

    Only that triangle of A is read, as LAPACK's potrf; the gradient is MXNet's
    symmetric one (see the module docstring).
    """

    name = '_linalg_potrf'
    aliases = ('linalg_potrf',)
    needs_inputs = False
    needs_outputs = True

    def _forward(self, xp, inputs):
        a = inputs[0]
        self._check_dtype(inputs)
        sym = xp.tril(a) + _t(xp, xp.tril(a, -1))
        try:
            low = xp.linalg.cholesky(sym)
        except (np.linalg.LinAlgError, xp.linalg.LinAlgError):
            raise ArgumentError('%s failed: the input matrix is not symmetric positive definite'
                                % self.name) from None
        return [xp.ascontiguousarray(xp.tril(low))]

    def _backward(self, xp, g, inputs, outputs):
        low = outputs[0]
        p = xp.matmul(_t(xp, low), g)
        p = xp.tril(p) + _t(xp, xp.tril(p, -1))          # copyLTU(L^T dL)
        lt = _t(xp, low)
        x = _lapack(xp, self, _SINGULAR_TRI, xp.linalg.solve, lt, p)           # L^-T P
        x = _lapack(xp, self, _SINGULAR_TRI, xp.linalg.solve, lt, _t(xp, x))   # (X L^-1)^T
        return [xp.ascontiguousarray(_t(xp, x) * 0.5)]


@register
class Potri(_UpperByTranspose):
    """``(L L^T)^-1`` from a lower triangular L (the Cholesky factor of ``potrf``): the
    inverse of the matrix L factors. Only the lower triangle of the input is read (the
    upper one, U, and ``(U^T U)^-1`` with ``lower=False``)."""

    name = '_linalg_potri'
    aliases = ('linalg_potri',)
    needs_outputs = True

    def _forward(self, xp, inputs):
        self._check_dtype(inputs)
        inv = _lapack(xp, self, _SINGULAR_TRI, xp.linalg.inv, xp.tril(inputs[0]))
        return [xp.matmul(_t(xp, inv), inv)]

    def _backward(self, xp, g, inputs, outputs):
        out = outputs[0]
        # dL = -tril(out (G + G^T) out L), with out L = L^-T
        d = xp.matmul(xp.matmul(out, g + _t(xp, g)), xp.matmul(out, xp.tril(inputs[0])))
        return [-xp.tril(d)]


@register
class Inverse(_SameShape):
    """The inverse of every square matrix."""

    name = '_linalg_inverse'
    aliases = ('linalg_inverse',)
    needs_inputs = False
    needs_outputs = True

    def forward(self, xp, inputs, aux, is_train):
        self._check_dtype(inputs)
        return [_lapack(xp, self, _SINGULAR, xp.linalg.inv, inputs[0])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        bt = _t(xp, outputs[0])
        return [xp.ascontiguousarray(-xp.matmul(xp.matmul(bt, out_grads[0]), bt))]


class _PerMatrix(_Linalg):
    """One number per square matrix: shape ``A.shape[:-2]``, (1,) for a single matrix."""

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a = _matrices(self, in_shapes[0], square=True)
        out = None if a is None else _batch_of(a)
        return [a], [out] * self.output_count(), []

    @staticmethod
    def _per_matrix(g, a):
        """A per-matrix gradient ``g`` broadcastable against the matrices of ``a``."""
        return g.reshape(a.shape[:-2] + (1, 1))


@register
class Det(_PerMatrix):
    """The determinant of every square matrix."""

    name = '_linalg_det'
    aliases = ('linalg_det',)
    needs_outputs = True

    def list_outputs(self):
        return ['output0']      # MXNet's name (its LU and pivots are hidden outputs)

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype(inputs)
        return [xp.ascontiguousarray(xp.linalg.det(a).reshape(_batch_of(a.shape)))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        a = inputs[0]
        inv = _lapack(xp, self, _SINGULAR + ': no gradient', xp.linalg.inv, a)
        scale = self._per_matrix(out_grads[0] * outputs[0], a)
        return [xp.ascontiguousarray(scale * _t(xp, inv))]


@register
class Slogdet(_PerMatrix):
    """The sign and the natural log of the absolute value of every determinant."""

    name = '_linalg_slogdet'
    aliases = ('linalg_slogdet',)

    def list_outputs(self):
        return ['output0', 'output1']

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype(inputs)
        sign, logdet = xp.linalg.slogdet(a)
        shape = _batch_of(a.shape)
        return [xp.ascontiguousarray(sign.reshape(shape)),
                xp.ascontiguousarray(logdet.reshape(shape))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        a, g = inputs[0], out_grads[1]
        if g is None:
            return [xp.zeros_like(a)]
        inv = _lapack(xp, self, _SINGULAR + ': no gradient', xp.linalg.inv, a)
        return [xp.ascontiguousarray(self._per_matrix(g, a) * _t(xp, inv))]


@register
class Sumlogdiag(_PerMatrix):
    """The sum of the natural logs of the diagonal of every square matrix."""

    name = '_linalg_sumlogdiag'
    aliases = ('linalg_sumlogdiag',)

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype(inputs)
        diag = xp.diagonal(a, axis1=-2, axis2=-1)
        return [xp.log(diag).sum(axis=-1).reshape(_batch_of(a.shape))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        a = inputs[0]
        n = a.shape[-1]
        g = out_grads[0].reshape(a.shape[:-2] + (1,))
        ga = xp.zeros_like(a)
        idx = xp.arange(n)
        ga[..., idx, idx] = g / xp.diagonal(a, axis1=-2, axis2=-1)
        return [ga]
