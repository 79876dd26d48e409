"""Fused operators the inference passes make (``symgraph.graph.passes``): a producer
(Convolution, FullyConnected) followed by the post-ops its consumers offered
(the ``post_op`` rows of ``ops/_cpu_rules.py``).

Leading ``'affine'`` post-ops (BatchNorm with its running statistics) are folded into the
producer's weights and bias: ``W' = W * scale`` per output channel, ``b' = b * scale +
shift``, computed in float64 and rounded once. The folded arrays are cached per bind (the
operator's Step, made by :meth:`bind`) together with copies of the arrays they came from; every
forward compares those copies with the current arguments and folds again when one
changed (the user assigned new weights or statistics), so a stale fold is never used. The
comparison reads each parameter once per forward, a small fraction of the producer's own
work (it reads the weights too). Each new fold gets a fresh token, which tells oneDNN's
cached primitive to reorder its private copy of the weights again (see
``symgraph.backend.onednn``); while the token stands, the weights are not reordered.

The other post-ops (``'sum'`` of a residual, ``'eltwise'``) run as oneDNN post-ops where
the producer has them, else through the consumers' own forward: the result is the unfused
graph's to float32 rounding either way.
"""
import itertools

import numpy as np

from symgraph.base import NotSupportedError
from symgraph.opdef import Operator, Snapshot, Step

__all__ = ['FusedOperator']

# one token per fold, unique in the process: primitives are shared by executors
_tokens = itertools.count(1)


class FusedOperator(Operator):
    """``base`` followed by ``post_ops``; subclasses compute (:meth:`compute`).

    Not registered: made by a ``fuse_post_ops`` rule (``ops/_cpu_rules.py``) for one
    inference plan. Its inputs are the base's inputs, then each post-op's ``inputs``.
    """

    name = '_fused'
    needs_outputs = False
    no_grad = True
    #: the result may go straight into the storage plan's buffer (``out=``)
    writes_into = True

    def __init__(self, base, post_ops):
        super().__init__()
        n = sum(1 for _ in itertools.takewhile(lambda p: p.kind == 'affine', post_ops))
        self._fix(base=base, post_ops=tuple(post_ops), n_affine=n)

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return '%s(%s + %s)' % (self.name, self.base.name,
                                ' + '.join('%s:%s' % (p.kind, p.op.name)
                                           for p in self.post_ops))

    def describe(self):
        """'Convolution + BatchNorm(folded) + elemwise_add(sum) + Activation(relu)'."""
        parts = [self.base.name]
        for k, p in enumerate(self.post_ops):
            what = 'folded' if k < self.n_affine else p.kind
            if p.kind == 'eltwise':
                what = p.params['alg']
            parts.append('%s(%s)' % (p.op.name, what))
        return ' + '.join(parts)

    def _n_base(self):
        return len(self.base.list_arguments())

    def list_arguments(self):
        names = list(self.base.list_arguments())
        for k, p in enumerate(self.post_ops):
            inner = p.op.list_arguments() + p.op.list_auxiliary_states()
            names += ['%s%d_%s' % (p.kind, k, inner[i]) for i in p.inputs]
        return names

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shapes):
        n = self._n_base()
        _, out, _ = self.base.infer_shape(list(in_shapes[:n]))
        return list(in_shapes), [out[0]], []

    def infer_type(self, in_types):
        return list(in_types), [in_types[0]], []

    def bind(self, ctx, in_shapes, in_dtypes):
        """A Step holding the bind's fold cache: {'sources': a Snapshot of the arrays folded,
        'folded': (w, b), 'token': int, 'primitives': this layer's oneDNN primitives (with
        its reordered weights), 'memo': the backend's record of its last call}."""
        return Step(self, ctx, {'sources': None, 'folded': None, 'token': None,
                                'primitives': {}, 'memo': {}})

    def split(self, inputs):
        """(base inputs, [inputs of each post-op])."""
        n = self._n_base()
        base, rest, per = list(inputs[:n]), list(inputs[n:]), []
        for p in self.post_ops:
            per.append(rest[:len(p.inputs)])
            rest = rest[len(p.inputs):]
        return base, per

    def folded(self, xp, weight, bias, per, state, channel_shape):
        """(W', b', token): the weights and bias with the leading affine post-ops folded in,
        from the cache while no source array changed. ``bias`` may be None (zero);
        ``channel_shape`` reshapes a per-channel vector to broadcast against W."""
        sources = [weight] + ([] if bias is None else [bias])
        for arrays in per[:self.n_affine]:
            sources += arrays
        cache = state if state is not None else {'sources': None}
        old = cache['sources']
        if old is not None and old.same(sources):
            w, b = cache['folded']
            return w, b, cache['token']
        dtype = weight.dtype
        w = weight.astype(np.float64)
        b = xp.zeros(weight.shape[0]) if bias is None else bias.astype(np.float64)
        for p, arrays in zip(self.post_ops[:self.n_affine], per):
            # (BatchNorm with fix_gamma writes 1 into gamma here, as its forward does)
            scale, shift = p.params['affine'](xp, arrays)
            scale = scale.astype(np.float64)
            w = w * scale.reshape(channel_shape)
            b = b * scale + shift.astype(np.float64)
        w = xp.ascontiguousarray(w.astype(dtype))
        b = b.astype(dtype)
        token = next(_tokens)
        if state is not None:
            # the sources are copied after the fold: a fix_gamma write is part of them
            state['sources'] = Snapshot(xp, sources)
            state['folded'] = (w, b)
            state['token'] = token
        return w, b, token

    def apply_rest(self, xp, y, per, start, dest=None):
        """The post-ops from index ``start`` on, through the consumers' own forward, on
        ``y`` (an array of the caller's own, changed in place); the last one writes into
        ``dest`` (the storage plan's buffer, possibly the residual's own) where it can."""
        rest = list(zip(self.post_ops[start:], per[start:]))
        for k, (p, arrays) in enumerate(rest):
            into = dest if k == len(rest) - 1 and dest is not None \
                and dest.shape == y.shape and dest.dtype == y.dtype else None
            if p.kind == 'sum':
                y = xp.add(y, arrays[0], out=y if into is None else into)
            elif into is not None and p.op.writes_into:
                y = p.op.forward(xp, [y] + list(arrays), [], False, out=[into])[0]
            else:
                y = p.op.forward(xp, [y] + list(arrays), [], False)[0]
        return y

    def forward(self, xp, inputs, aux, is_train, state=None, out=None):
        base, per = self.split(inputs)
        return [self.compute(xp, base, per, state, out[0] if out else None)]

    def compute(self, xp, base, per, state, dest=None):
        """The fused output from the base's inputs and the post-ops' inputs (each
        subclass computes it), into ``dest`` where it can (an executor's buffer, laid out
        as :attr:`out_layout` says; returning another array is correct too)."""
        raise NotSupportedError('%s has no compute' % type(self).__name__)

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None):
        raise NotSupportedError('%s exists only in inference plans (no gradient)' % self.name)


def eltwise_post_ops(post_ops):
    """The oneDNN post-op list for ``post_ops`` (only 'sum' and 'eltwise' kinds)."""
    out = []
    for p in post_ops:
        if p.kind == 'sum':
            out.append(('sum',))
        else:
            out.append(('eltwise', p.params['alg'], float(p.params.get('alpha', 0.0))))
    return tuple(out)
