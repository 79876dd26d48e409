"""Connectionist temporal classification loss: ``CTCLoss`` (MXNet 1.9.1 semantics).

``CTCLoss(data, label[, data_lengths][, label_lengths])`` takes unnormalised activations
``data`` of shape ``(sequence_length, batch, alphabet_size)`` (a softmax over the last axis
is applied inside) and labels ``(batch, label_sequence_length)``, and returns the negative
log-likelihood of each sequence, shape ``(batch,)``, in the data's dtype. The optional
inputs exist only when ``use_data_lengths`` / ``use_label_lengths`` is set (MXNet's
argument list then is data, label, data_lengths and/or label_lengths).

* ``blank_label='first'``: the blank is class 0 and, without ``label_lengths``, a label
  row ends at its first 0 (the padding value). ``'last'``: the blank is class
  ``alphabet_size - 1`` and a row ends at its first -1.
* Label values and lengths are rounded to integers, halves away from zero (as MXNet
  does), before the padding search. When no sequence of the batch has a label at all,
  MXNet skips the computation: every loss is 0 (and so is the gradient here).
* A sequence that cannot emit its label (label length plus repeated neighbours longer
  than the data length) gets loss 0 and gradient 0, as warp-ctc in MXNet does.
* Time steps at or beyond a sequence's ``data_lengths`` get a zero gradient.
* Like MXNet the operator has a second, hidden output (``output1``): the gradient of the
  loss with respect to ``data`` (softmax minus the normalised alpha*beta occupancy),
  computed in forward; backward multiplies it by the head gradient of each sequence.
  Label and length inputs get zero gradients.

Forward is the alpha recursion in log space, vectorised over the batch and the extended
label positions (a Python loop over time only); the beta recursion runs the same way.
Deliberate differences: lengths larger than the arrays are clipped to the array sizes,
and out-of-range label values are clipped into the alphabet (MXNet reads out of bounds);
shape inference without a label shape returns unknown shapes instead of failing.
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, TypeInferenceError, register

_NEG = -np.inf


def _lse(xp, *terms):
    """Elementwise log(sum(exp(terms))) that is -inf where every term is -inf."""
    m = terms[0]
    for t in terms[1:]:
        m = xp.maximum(m, t)
    safe = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    s = xp.zeros_like(m)
    for t in terms:
        s = s + xp.exp(t - safe)
    with np.errstate(divide='ignore'):
        return xp.where(xp.isfinite(m), safe + xp.log(s), m)


def _round_int(xp, a):
    """MXNet's float-to-int conversion of labels and lengths: round half away from 0."""
    if a.dtype.kind != 'f':
        return a.astype(np.int64)
    a = a.astype(np.float64)
    return (xp.sign(a) * xp.floor(xp.abs(a) + 0.5)).astype(np.int64)


def _shift(xp, a, k):
    """``a[..., s - k]`` along the last axis, -inf where s < k."""
    pad = xp.full(a.shape[:-1] + (k,), _NEG, dtype=a.dtype)
    return xp.concatenate([pad, a[..., :a.shape[-1] - k]], axis=-1)


def _unshift(xp, a, k):
    """``a[..., s + k]`` along the last axis, -inf past the end."""
    pad = xp.full(a.shape[:-1] + (k,), _NEG, dtype=a.dtype)
    return xp.concatenate([a[..., k:], pad], axis=-1)


def ctc_loss_and_grad(xp, data, label, blank_first, data_len=None, label_len=None):
    """(loss (B,), gradient w.r.t. data (T, B, A)) of the CTC loss."""
    T, B, A = data.shape
    L = label.shape[1]
    dt = data.dtype
    x = data - data.max(axis=2, keepdims=True)
    lp = x - xp.log(xp.exp(x).sum(axis=2, keepdims=True))            # (T, B, A)
    lab = _round_int(xp, label)
    blank = 0 if blank_first else A - 1
    if label_len is not None:
        ll = xp.clip(_round_int(xp, label_len), 0, L)
    else:
        pad = 0 if blank_first else -1
        hit = lab == pad
        ll = xp.where(hit.any(axis=1), xp.argmax(hit, axis=1), L).astype(np.int64)
    if data_len is not None:
        tl = xp.clip(_round_int(xp, data_len), 0, T)
    else:
        tl = xp.full((B,), T, dtype=np.int64)
    pos = xp.arange(L)[None, :]
    valid_lab = pos < ll[:, None]
    lab = xp.clip(lab, 0, A - 1)
    repeats = ((lab[:, 1:] == lab[:, :-1]) & valid_lab[:, 1:]).sum(axis=1) if L > 1 \
        else xp.zeros((B,), dtype=np.int64)
    # MXNet skips the whole computation (loss 0) when no sequence has a label
    feasible = (ll + repeats <= tl) & (tl > 0) & (ll.sum() > 0)
    # extended label: blank, l1, blank, l2, ..., blank
    S = 2 * L + 1
    ext = xp.full((B, S), blank, dtype=np.int64)
    ext[:, 1::2] = lab
    sb = 2 * ll + 1                                                   # (B,)
    s_idx = xp.arange(S)[None, :]
    valid = s_idx < sb[:, None]                                       # (B, S)
    skip = xp.zeros((B, S), dtype=bool)
    if S > 3:
        skip[:, 3::2] = lab[:, 1:] != lab[:, :-1]
    skip_next = _unshift(xp, skip.astype(dt), 2) > 0                  # s+2 may skip to s
    bi = xp.arange(B)[:, None]
    emit = lp[:, bi, ext]                                             # (T, B, S)
    emit = xp.where(valid[None], emit, xp.asarray(_NEG, dtype=dt))
    neg = xp.full((B, S), _NEG, dtype=dt)
    alphas = []
    a = xp.where(s_idx < 2, emit[0], neg)
    alphas.append(a)
    for t in range(1, T):
        prev2 = xp.where(skip, _shift(xp, a, 2), neg)
        new = _lse(xp, a, _shift(xp, a, 1), prev2) + emit[t]
        a = xp.where((t < tl)[:, None], new, neg)
        alphas.append(a)
    last = xp.stack(alphas)                                           # (T, B, S)
    a_end = last[xp.clip(tl - 1, 0, T - 1), xp.arange(B)]             # (B, S)
    end = (s_idx == sb[:, None] - 1) | (s_idx == sb[:, None] - 2)
    logp = _end_lse(xp, a_end, end, neg)
    betas = [None] * T
    b = neg
    for t in range(T - 1, -1, -1):
        nxt2 = xp.where(skip_next, _unshift(xp, b, 2), neg)
        rec = _lse(xp, b, _unshift(xp, b, 1), nxt2) + emit[t]
        init = xp.where(end, emit[t], neg)
        tt = (t == tl - 1)[:, None]
        b = xp.where(tt, init, xp.where((t < tl - 1)[:, None], rec, neg))
        betas[t] = b
    beta = xp.stack(betas)
    safe_logp = xp.where(feasible, logp, xp.zeros_like(logp))
    with np.errstate(invalid='ignore'):
        log_occ = last + beta - emit - safe_logp[None, :, None]
    fin = xp.isfinite(log_occ)
    zero = xp.zeros_like(log_occ)
    occ = xp.where(fin, xp.exp(xp.where(fin, log_occ, zero)), zero)  # (T, B, S)
    onehot = (ext[:, :, None] == xp.arange(A)[None, None, :]).astype(dt)  # (B, S, A)
    scat = xp.matmul(occ.transpose(1, 0, 2), onehot).transpose(1, 0, 2)   # (T, B, A)
    grad = xp.exp(lp) - scat
    keep = (xp.arange(T)[:, None] < tl[None, :]) & feasible[None, :]
    grad = xp.where(keep[:, :, None], grad, xp.zeros_like(grad)).astype(dt)
    loss = xp.where(feasible, -logp, xp.zeros_like(logp)).astype(dt)
    return loss, grad


def _end_lse(xp, a_end, end, neg):
    """log(sum over the two final positions) of the last alpha row."""
    first = xp.where(end, a_end, neg)
    top = first.max(axis=1)
    safe = xp.where(xp.isfinite(top), top, xp.zeros_like(top))
    s = xp.exp(first - safe[:, None]).sum(axis=1)
    with np.errstate(divide='ignore'):
        return xp.where(xp.isfinite(top), safe + xp.log(s), top)


@register
class CTCLoss(Operator):
    """CTC negative log-likelihood per sequence; see the module docstring."""

    name = 'CTCLoss'
    aliases = ('ctc_loss', '_contrib_CTCLoss', '_contrib_ctc_loss')
    use_data_lengths = Param(bool, False, doc='take sequence lengths from data_lengths')
    use_label_lengths = Param(bool, False, doc='take label lengths from label_lengths')
    blank_label = Param(str, 'first', doc='blank is class 0 or alphabet_size-1',
                        choices=('first', 'last'))
    needs_inputs = (1, 2, 3)
    needs_outputs = (1,)

    def list_arguments(self):
        args = ['data', 'label']
        if self.use_data_lengths:
            args.append('data_lengths')
        if self.use_label_lengths:
            args.append('label_lengths')
        return args

    def list_outputs(self):
        return ['output0', 'output1']

    def num_visible_outputs(self):
        return 1

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        names = self.list_arguments()
        shapes = [None if s is None else tuple(s) for s in in_shapes[:len(names)]]
        d, lab = shapes[0], shapes[1]
        if d is not None and len(d) != 3:
            raise ShapeError("CTCLoss: argument 'data' must have 3 dimensions "
                             "(sequence_length, batch, alphabet_size), got %s" % (d,))
        if lab is not None and len(lab) != 2:
            raise ShapeError("CTCLoss: argument 'label' must have 2 dimensions "
                             "(batch, label_sequence_length), got %s" % (lab,))
        if d is not None and lab is not None and d[1] and lab[0] and d[1] != lab[0]:
            raise ShapeError("CTCLoss: the batch size of 'label' %s and 'data' %s must be "
                             "the same" % (lab, d))
        batch = (d[1] if d is not None and d[1] else None) or \
            (lab[0] if lab is not None and lab[0] else None)
        for i in range(2, len(names)):
            s = shapes[i]
            if s is None:
                if batch is not None:
                    shapes[i] = (batch,)
                continue
            if len(s) != 1:
                raise ShapeError('CTCLoss: argument %r must be a vector, got shape %s'
                                 % (names[i], s))
            if batch is not None and s[0] and s[0] != batch:
                raise ShapeError("CTCLoss: the batch size of %r %s and 'data' %s must be "
                                 "the same" % (names[i], s, d))
        if d is None:
            return shapes, [(batch,) if batch else None, None], []
        return shapes, [(d[1],), d], []

    def infer_type(self, in_types):
        n = len(self.list_arguments())
        types = list(in_types[:n])
        t = types[0]
        if t is not None and np.dtype(t).kind != 'f':
            raise TypeInferenceError("CTCLoss: argument 'data' must be a float type, got %s"
                                     % np.dtype(t))
        return types, [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        data, label = inputs[0], inputs[1]
        k = 2
        dl = ll = None
        if self.use_data_lengths:
            dl = inputs[k]
            k += 1
        if self.use_label_lengths:
            ll = inputs[k]
        loss, grad = ctc_loss_and_grad(xp, data, label, self.blank_label == 'first', dl, ll)
        return [loss, grad]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        grad = outputs[1]
        res = [None] * len(need)
        if need[0]:
            head = out_grads[0]
            res[0] = grad if head is None else grad * head[None, :, None].astype(grad.dtype)
        for i in range(1, len(need)):
            if need[i]:
                res[i] = xp.zeros_like(inputs[i])
        return res
