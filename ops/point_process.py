"""Point-process likelihoods: ``_contrib_hawkesll`` (``mx.nd.contrib.hawkesll``), the
log-likelihood of marked self-exciting Hawkes processes, as MXNet 1.9.1's
src/operator/contrib/hawkes_ll-inl.h.

``hawkesll(lda, alpha, beta, state, lags, marks, valid_length, max_time)``: ``lda`` (N, K)
background intensities, ``alpha`` and ``beta`` (K,) branching ratios and decay rates,
``state`` (N, K) the memory ``s_k(0)`` carried over from earlier observations, ``lags`` (N, T)
inter-arrival times, ``marks`` (N, T) int32 process ids in [0, K), ``valid_length`` (N,) how
many leading points of each row are events (a fractional length counts as its ceiling, as
MXNet's ``j < valid_length`` loop), ``max_time`` (N,) the end of each observation interval.
Outputs: ``output`` (N,) the log-likelihood of each row, and ``out_state`` (N, K) the memory
``s_k(max_time)``. Each point of mark ``c`` at time ``t`` adds
``log(lda_c + alpha_c beta_c s_c e^(-beta_c d)) - lda_c d - alpha_c s_c (1 - e^(-beta_c d))``
(``d`` the time since the previous point of that mark, or since 0) and sets
``s_c = 1 + s_c e^(-beta_c d)``; the compensator up to ``max_time`` closes every mark.

The forward runs vectorised over the batch with one Python step per column; the backward is
the reverse-mode derivative of that recursion (per-step values kept from a forward replay).

Deliberate differences from MXNet 1.9.1 (its backward is incomplete):

* the gradient includes the head gradient of ``out_state`` (MXNet ignores it);
* ``state``, ``lags`` and ``max_time`` get their true gradients (MXNet leaves ``state``'s
  unwritten, zeros in its autograd, and fails its bind with "Check failed: req[kIATimes] ==
  kNullOp" when a gradient of ``lags``, ``marks``, ``valid_length`` or ``max_time`` is
  requested); ``valid_length`` and ``marks`` get zero gradients (piecewise constant);
* float64 data are computed in float64 (MXNet calls ``expf``/``logf``: float32 precision);
* a mark outside [0, K) or a valid length above T among the counted points is an error
  naming the argument (MXNet reads outside the arrays).
"""
import numpy as np

from symgraph.base import ParameterError
from symgraph.opdef import Operator, ShapeError, TypeInferenceError, register

_ARGS = ('lda', 'alpha', 'beta', 'state', 'lags', 'marks', 'valid_length', 'max_time')
_NDIM = (2, 1, 1, 2, 2, 2, 1, 1)


def _counts(xp, valid_length, T, name):
    """Points per row: ceil(valid_length), at least 0; above T is an error."""
    n = xp.maximum(xp.ceil(valid_length), 0).astype(np.int64)
    if n.size and bool((n > T).any()):
        i = int(xp.argmax(n > T))
        raise ParameterError('%s: valid_length must be at most the number of columns of '
                             'lags/marks (%d), got %s in row %d'
                             % (name, T, float(valid_length[i]), i))
    return n


def _steps(xp, inputs, name):
    """Replay the forward recursion over the counted points: (log-likelihood without the
    closing compensator, state and last time per (row, mark), per-point values)."""
    mu, alpha, beta, state, lags, marks, vlen, max_time = inputs
    N, K = mu.shape
    T = lags.shape[1]
    count = _counts(xp, vlen, T, name)
    active_marks = xp.where(xp.arange(T)[None, :] < count[:, None], marks, 0)
    bad = (active_marks < 0) | (active_marks >= K)
    if active_marks.size and bool(bad.any()):
        r, c = divmod(int(xp.argmax(bad.reshape(-1))), T)
        raise ParameterError('%s: marks must lie in [0, %d) (K = lda.shape[1]) at the counted '
                             'points, got %d at (%d, %d)' % (name, K, int(marks[r, c]), r, c))
    rows = xp.arange(N)
    s = state.copy()
    last = xp.zeros_like(mu)
    t = xp.zeros(N, dtype=mu.dtype)
    ll = xp.zeros(N, dtype=mu.dtype)
    saved = []
    for j in range(int(count.max()) if N else 0):
        act = j < count
        c = active_marks[:, j].astype(np.int64)
        t = t + xp.where(act, lags[:, j], 0)
        d = t - last[rows, c]
        b, a, m, sc = beta[c], alpha[c], mu[rows, c], s[rows, c]
        ed = xp.exp(-b * d)
        lda = m + a * b * sc * ed
        with np.errstate(divide='ignore', invalid='ignore'):
            term = xp.log(lda) - (m * d + a * sc * (1 - ed))
        ll = ll + xp.where(act, term, 0)
        s[rows, c] = xp.where(act, 1 + sc * ed, sc)
        last[rows, c] = xp.where(act, t, last[rows, c])
        saved.append((act, c, d, ed, lda, sc))
    return ll, s, last, saved


@register
class HawkesLL(Operator):
    """Log-likelihood of marked Hawkes processes (``mx.nd.contrib.hawkesll``)."""

    name = '_contrib_hawkesll'
    needs_inputs = True

    def list_arguments(self):
        return list(_ARGS)

    def list_outputs(self):
        return ['output', 'out_state']

    def infer_shape(self, in_shapes):
        shapes = [None if s is None else tuple(s) for s in in_shapes[:8]]
        for k, s, nd in zip(_ARGS, shapes, _NDIM):
            if s is not None and len(s) != nd:
                raise ShapeError('%s: argument %r must be %d-D, got shape %s'
                                 % (self.name, k, nd, s))
        mu, alpha, beta, state, lags, marks, vlen, mt = shapes
        N = next((s[0] for s in (lags, mu, state, marks, vlen, mt) if s is not None), None)
        K = next((s[-1] for s in (mu, alpha, beta, state) if s is not None), None)
        T = next((s[1] for s in (lags, marks) if s is not None), None)
        want = {'lda': (N, K), 'alpha': (K,), 'beta': (K,), 'state': (N, K), 'lags': (N, T),
                'marks': (N, T), 'valid_length': (N,), 'max_time': (N,)}
        out_in = []
        for k, s in zip(_ARGS, shapes):
            w = want[k]
            if s is not None and s != w:
                raise ShapeError('%s: argument %r has shape %s but the other inputs need %s '
                                 '(lda (N, K), alpha and beta (K,), state (N, K), lags and '
                                 'marks (N, T), valid_length and max_time (N,))'
                                 % (self.name, k, s, tuple('?' if v is None else v
                                                           for v in w)))
            out_in.append(w if None not in w else s)
        outs = [(N,) if N is not None else None, (N, K) if None not in (N, K) else None]
        return out_in, outs, []

    def infer_type(self, in_types):
        names = self.list_arguments()
        t = next((np.dtype(x) for i, x in enumerate(in_types[:8]) if x is not None and i != 5),
                 None)
        for i, x in enumerate(in_types[:8]):
            if x is None:
                continue
            if i == 5:
                if np.dtype(x) != np.int32:
                    raise TypeInferenceError('%s: argument %r must be int32, got %s'
                                             % (self.name, 'marks', np.dtype(x).name))
            elif np.dtype(x) != t:
                raise TypeInferenceError('%s: argument %r has type %s but %s was expected '
                                         '(every input but marks has lda\'s type)'
                                         % (self.name, names[i], np.dtype(x).name, t.name))
        ins = [t] * 8
        ins[5] = np.dtype(np.int32)
        return ins, [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        mu, alpha, beta = inputs[:3]
        max_time = inputs[7]
        ll, s, last, _ = _steps(xp, inputs, self.name)
        d = max_time[:, None] - last
        ed = xp.exp(-beta[None, :] * d)
        ll = ll - (mu * d + alpha[None, :] * s * (1 - ed)).sum(axis=1)
        return [ll.astype(mu.dtype, copy=False), (ed * s).astype(mu.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        mu, alpha, beta, state, lags, marks, vlen, max_time = inputs
        N, K = mu.shape
        dt = mu.dtype
        gL = out_grads[0] if out_grads[0] is not None else xp.zeros(N, dtype=dt)
        gSo = out_grads[1] if out_grads[1] is not None else xp.zeros((N, K), dtype=dt)
        _, S, last, saved = _steps(xp, inputs, self.name)
        a, b = alpha[None, :], beta[None, :]
        # the closing compensator and out_state = E * S
        D = max_time[:, None] - last
        E = xp.exp(-b * D)
        g = gL[:, None]
        gE = g * a * S + gSo * S
        gS = -g * a * (1 - E) + gSo * E                 # adjoint of each mark's state
        gD = -g * mu + gE * (-b * E)
        gmu = -g * D
        galpha = -g * S * (1 - E)
        gbeta = gE * (-D * E)
        gmax = gD.sum(axis=1)
        glast = -gD                                     # adjoint of each mark's last time
        glags = xp.zeros_like(lags)
        with np.errstate(divide='ignore', invalid='ignore'):
            _reverse(xp, saved, gL, (mu, alpha, beta), (gS, glast, gmu, galpha, gbeta, glags))
        grads = [gmu, galpha.sum(axis=0), gbeta.sum(axis=0), gS, glags,
                 xp.zeros_like(marks), xp.zeros_like(vlen), gmax]
        return [g_.astype(x.dtype, copy=False) if n else None
                for g_, x, n in zip(grads, inputs, need)]


def _reverse(xp, saved, gL, params, adj):
    """The reverse sweep over the points of :func:`_steps`: updates the adjoints ``adj``
    (state, last time, lda, alpha, beta per (row, mark), and lags) in place."""
    mu, alpha, beta = params
    gS, glast, gmu, galpha, gbeta, glags = adj
    N = mu.shape[0]
    rows = xp.arange(N)
    z = xp.zeros(N, dtype=mu.dtype)
    gt = z                                           # adjoint of the running time
    for j in range(len(saved) - 1, -1, -1):
        act, c, d, ed, lda, sc = saved[j]
        gs_new, gl_new = gS[rows, c], glast[rows, c]  # adjoints of the values after point j
        m, al, be = mu[rows, c], alpha[c], beta[c]
        g = xp.where(act, gL, z)
        glda = g / lda
        ged = gs_new * sc + g * al * sc + glda * al * be * sc
        gd = -g * m - ged * be * ed
        gsc = gs_new * ed - g * al * (1 - ed) + glda * al * be * ed
        gt = gt + xp.where(act, gd + gl_new, z)
        glags[:, j] = xp.where(act, gt, z)
        gS[rows, c] = xp.where(act, gsc, gs_new)
        glast[rows, c] = xp.where(act, -gd, gl_new)
        gmu[rows, c] += xp.where(act, glda - g * d, z)
        galpha[rows, c] += xp.where(act, glda * be * sc * ed - g * sc * (1 - ed), z)
        gbeta[rows, c] += xp.where(act, glda * al * sc * ed - ged * d * ed, z)
