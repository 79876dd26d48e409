"""Matrix factorizations of MXNet's ``linalg`` family that give several outputs:
``_linalg_gelqf`` (also ``linalg_gelqf``; there is no ``linalg_syevd`` alias in MXNet
1.9.1) and ``_linalg_syevd``. Both work on the last two axes and batch over the rest,
float32 and float64 only (shared rules in ``ops/_linalg_common.py``).

* ``gelqf(A)`` -> ``(Q, L)``: ``A = L Q`` for A (m, n) with m <= n and full rank, L (m, m)
  lower triangular, Q (m, n) with orthonormal rows; LAPACK's signs (those of the QR
  factorization of ``A^T``: the diagonal of L may be negative, as MXNet's example shows).
  Gradient as MXNet's: ``dA = L^-T (dQ + copyLTU(M) Q)``, ``M = L^T dL - dQ Q^T``.
* ``syevd(A)`` -> ``(U, L)``: A symmetric (n, n), the eigenvalues L ascending and the rows
  of U the eigenvectors, ``U A = diag(L) U``; each row's sign is set so that its entry of
  largest magnitude (the first such) is positive (MXNet's ``SyevdEigenVecSigns``). Only
  the lower triangle of A is read. Gradient as MXNet's, symmetric:
  ``dA = U^T (diag(dL) + Y) U``, ``Y_ij = (X_ij - X_ji) / (2 (L_i - L_j))`` for i != j with
  ``X = dU U^T`` -- the gradient of ``syevd((A + A^T) / 2)``; defined only for distinct
  eigenvalues.
"""
from symgraph.opdef import ShapeError, register

from ._linalg_common import _Linalg, _lapack, _matrices, _t


@register
class Gelqf(_Linalg):
    """LQ factorization ``A = L Q`` of (batches of) wide full-rank matrices."""

    name = '_linalg_gelqf'
    aliases = ('linalg_gelqf',)
    needs_outputs = True

    def list_outputs(self):
        return ['output0', 'output1']     # (Q, L); MXNet names them so

    def infer_shape(self, in_shapes):
        s = _matrices(self, in_shapes[0])
        if s is None:
            return [None], [None, None], []
        m, n = s[-2:]
        if m and n and m > n:
            raise ShapeError('%s: input %r %s must have no more rows than columns (x <= y)'
                             % (self.name, 'A', s))
        return [s], [s, s[:-2] + (m, m)], []

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype([a])
        q, r = _lapack(xp, self, 'the input matrix must have full rank', xp.linalg.qr, _t(xp, a))
        return [_t(xp, q).astype(a.dtype, copy=False), _t(xp, r).astype(a.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        q, lo = outputs
        dq, dl = out_grads
        dq = xp.zeros_like(q) if dq is None else dq
        dl = xp.zeros_like(lo) if dl is None else dl
        m = xp.matmul(_t(xp, lo), dl) - xp.matmul(dq, _t(xp, q))
        low = xp.tril(m)
        sym = low + _t(xp, xp.tril(m, -1))                   # copyLTU
        rhs = dq + xp.matmul(sym, q)
        # dA = L^-T rhs
        return [xp.linalg.solve(_t(xp, lo), rhs).astype(q.dtype, copy=False)]


@register
class Syevd(_Linalg):
    """Eigendecomposition ``U A = diag(L) U`` of (batches of) symmetric matrices."""

    name = '_linalg_syevd'
    needs_inputs = False
    needs_outputs = True

    def list_outputs(self):
        return ['output0', 'output1']     # (U, L); MXNet names them so

    def infer_shape(self, in_shapes):
        s = _matrices(self, in_shapes[0], square=True)
        if s is None:
            return [None], [None, None], []
        return [s], [s, s[:-1]], []

    def forward(self, xp, inputs, aux, is_train):
        a = inputs[0]
        self._check_dtype([a])
        w, v = xp.linalg.eigh(a, UPLO='L')
        u = _t(xp, v)
        big = xp.take_along_axis(u, xp.argmax(xp.abs(u), axis=-1)[..., None], axis=-1)
        u = xp.where(big < 0, -u, u)
        return [xp.ascontiguousarray(u).astype(a.dtype, copy=False),
                w.astype(a.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        u, lam = outputs
        du, dl = out_grads
        n = lam.shape[-1]
        y = xp.zeros(u.shape, u.dtype)
        if du is not None:
            x = xp.matmul(du, _t(xp, u))
            diff = lam[..., :, None] - lam[..., None, :]
            eye = xp.eye(n, dtype=bool)
            diff = xp.where(eye, 1, diff)
            y = xp.where(eye, 0, (x - _t(xp, x)) / (2 * diff))
        if dl is not None:
            y = y + dl[..., :, None] * xp.eye(n, dtype=u.dtype)
        return [xp.matmul(xp.matmul(_t(xp, u), y), u).astype(u.dtype, copy=False)]

