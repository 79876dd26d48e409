"""MXNet's fused attention products of interleaved projections (BERT / transformer exports):
``_contrib_interleaved_matmul_selfatt_qk``, ``_contrib_interleaved_matmul_selfatt_valatt``,
``_contrib_interleaved_matmul_encdec_qk`` and ``_contrib_interleaved_matmul_encdec_valatt``.

Layouts, as MXNet 1.9.1 (src/operator/contrib/transformer.cc): sequences are time-major.
``queries_keys_values`` is (seq, batch, heads * 3 * head_dim) with the query, key and value
of each head interleaved, i.e. viewed as (seq, batch, heads, 3, head_dim); ``keys_values``
is (seq, batch, heads * 2 * head_dim) viewed as (seq, batch, heads, 2, head_dim); plain
``queries`` are (seq, batch, heads * head_dim). The ``*_qk`` operators give the scores
(batch * heads, q_seq, k_seq) of ``queries / sqrt(head_dim)`` against the keys; the
``*_valatt`` operators apply ``attention`` (batch * heads, q_seq, k_seq) to the values and
give (q_seq, batch, heads * head_dim).
"""
import math

from symgraph.base import MXNetError
from symgraph.opdef import Operator, Param, ShapeError, register, same_type


def _heads(op, name, shape, parts):
    """(seq, batch, head_dim) of an interleaved projection of ``parts`` per head."""
    if len(shape) != 3:
        raise ShapeError('%s: argument %r must be 3-D (seq_length, batch, projections), '
                         'got %s' % (op.name, name, tuple(shape)))
    if shape[2] % (op.heads * parts):
        raise ShapeError('%s: the last dimension %d of argument %r %s must be divisible by '
                         'heads * %d = %d' % (op.name, shape[2], name, tuple(shape), parts,
                                              op.heads * parts))
    return shape[0], shape[1], shape[2] // (op.heads * parts)


def _split(x, heads, parts):
    """(seq, batch, heads, parts, head_dim) view of an interleaved projection."""
    s, b, e = x.shape
    return x.reshape(s, b, heads, parts, e // (heads * parts))


def _scale(x, head_dim):
    return x.dtype.type(1.0 / math.sqrt(head_dim))


def _scores(xp, q, k, heads):
    """q (sq, b, h, d) against k (sk, b, h, d): (b * h, sq, sk)."""
    out = xp.einsum('ibhd,jbhd->bhij', q, k)
    return out.reshape((-1,) + out.shape[2:])


def _apply(xp, att, v, heads):
    """attention (b * h, sq, sk) to values v (sk, b, h, d): (sq, b, h * d)."""
    sk, b, h, d = v.shape
    a = att.reshape(b, h, att.shape[1], sk)
    out = xp.einsum('bhij,jbhd->ibhd', a, v)
    return out.reshape(out.shape[0], b, h * d)


class _Interleaved(Operator):
    heads = Param(int, doc='number of attention heads')

    def check(self):
        if self.heads <= 0:
            raise MXNetError('%s: heads must be positive, got %d' % (self.name, self.heads))

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t] * len(in_types), [t], []


@register
class SelfAttQK(_Interleaved):
    """Self-attention scores from interleaved queries, keys and values."""

    name = '_contrib_interleaved_matmul_selfatt_qk'

    def list_arguments(self):
        return ['queries_keys_values']

    def infer_shape(self, in_shapes):
        x = in_shapes[0]
        if x is None:
            return [None], [None], []
        s, b, _ = _heads(self, 'queries_keys_values', x, 3)
        return [tuple(x)], [(b * self.heads, s, s)], []

    def forward(self, xp, inputs, aux, is_train):
        qkv = _split(inputs[0], self.heads, 3)
        q = qkv[:, :, :, 0] * _scale(inputs[0], qkv.shape[-1])
        return [_scores(xp, q, qkv[:, :, :, 1], self.heads)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        qkv = _split(x, self.heads, 3)
        s, b, h, _, d = qkv.shape
        g = out_grads[0].reshape(b, h, s, s)
        sc = _scale(x, d)
        dx = xp.zeros_like(qkv)
        dx[:, :, :, 0] = xp.einsum('bhij,jbhd->ibhd', g, qkv[:, :, :, 1]) * sc
        dx[:, :, :, 1] = xp.einsum('bhij,ibhd->jbhd', g, qkv[:, :, :, 0]) * sc
        return [dx.reshape(x.shape)]


@register
class SelfAttValAtt(_Interleaved):
    """Self-attention output: attention applied to the interleaved values."""

    name = '_contrib_interleaved_matmul_selfatt_valatt'

    def list_arguments(self):
        return ['queries_keys_values', 'attention']

    def infer_shape(self, in_shapes):
        x, att = in_shapes
        if x is None:
            return [x, att], [None], []
        s, b, d = _heads(self, 'queries_keys_values', x, 3)
        want = (b * self.heads, s, s)
        if att is not None and tuple(att) != want:
            raise ShapeError('%s: argument %r has shape %s, queries_keys_values %s needs %s'
                             % (self.name, 'attention', tuple(att), tuple(x), want))
        return [tuple(x), want], [(s, b, self.heads * d)], []

    def forward(self, xp, inputs, aux, is_train):
        qkv = _split(inputs[0], self.heads, 3)
        return [_apply(xp, inputs[1], qkv[:, :, :, 2], self.heads)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, att = inputs
        qkv = _split(x, self.heads, 3)
        s, b, h, _, d = qkv.shape
        g = out_grads[0].reshape(s, b, h, d)
        a = att.reshape(b, h, s, s)
        dx = datt = None
        if need[0]:
            dx = xp.zeros_like(qkv)
            dx[:, :, :, 2] = xp.einsum('bhij,ibhd->jbhd', a, g)
            dx = dx.reshape(x.shape)
        if need[1]:
            datt = xp.einsum('ibhd,jbhd->bhij', g, qkv[:, :, :, 2]).reshape(att.shape)
        return [dx, datt]


@register
class EncDecQK(_Interleaved):
    """Encoder-decoder attention scores: queries against interleaved keys and values."""

    name = '_contrib_interleaved_matmul_encdec_qk'

    def list_arguments(self):
        return ['queries', 'keys_values']

    def infer_shape(self, in_shapes):
        q, kv = in_shapes
        if q is None or kv is None:
            return [q, kv], [None], []
        sq, b, d = _heads(self, 'queries', q, 1)
        sk, bk, dk = _heads(self, 'keys_values', kv, 2)
        if (bk, dk) != (b, d):
            raise ShapeError('%s: queries %s and keys_values %s differ in batch or head size'
                             % (self.name, tuple(q), tuple(kv)))
        return [tuple(q), tuple(kv)], [(b * self.heads, sq, sk)], []

    def forward(self, xp, inputs, aux, is_train):
        q = _split(inputs[0], self.heads, 1)[:, :, :, 0]
        kv = _split(inputs[1], self.heads, 2)
        return [_scores(xp, q * _scale(inputs[0], q.shape[-1]), kv[:, :, :, 0], self.heads)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        q = _split(inputs[0], self.heads, 1)[:, :, :, 0]
        kv = _split(inputs[1], self.heads, 2)
        sq, b, h, d = q.shape
        sk = kv.shape[0]
        g = out_grads[0].reshape(b, h, sq, sk)
        sc = _scale(inputs[0], d)
        dq = dkv = None
        if need[0]:
            dq = (xp.einsum('bhij,jbhd->ibhd', g, kv[:, :, :, 0]) * sc).reshape(inputs[0].shape)
        if need[1]:
            dkv = xp.zeros_like(kv)
            dkv[:, :, :, 0] = xp.einsum('bhij,ibhd->jbhd', g, q) * sc
            dkv = dkv.reshape(inputs[1].shape)
        return [dq, dkv]


@register
class EncDecValAtt(_Interleaved):
    """Encoder-decoder attention output: attention applied to the interleaved values."""

    name = '_contrib_interleaved_matmul_encdec_valatt'

    def list_arguments(self):
        return ['keys_values', 'attention']

    def infer_shape(self, in_shapes):
        kv, att = in_shapes
        if kv is None or att is None:
            return [kv, att], [None], []
        sk, b, d = _heads(self, 'keys_values', kv, 2)
        if len(att) != 3 or att[0] != b * self.heads or att[2] != sk:
            raise ShapeError('%s: argument %r has shape %s, keys_values %s needs (%d, q_seq, '
                             '%d)' % (self.name, 'attention', tuple(att), tuple(kv),
                                      b * self.heads, sk))
        return [tuple(kv), tuple(att)], [(att[1], b, self.heads * d)], []

    def forward(self, xp, inputs, aux, is_train):
        kv = _split(inputs[0], self.heads, 2)
        return [_apply(xp, inputs[1], kv[:, :, :, 1], self.heads)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        kvx, att = inputs
        kv = _split(kvx, self.heads, 2)
        sk, b, h, _, d = kv.shape
        sq = att.shape[1]
        g = out_grads[0].reshape(sq, b, h, d)
        a = att.reshape(b, h, sq, sk)
        dkv = datt = None
        if need[0]:
            dkv = xp.zeros_like(kv)
            dkv[:, :, :, 1] = xp.einsum('bhij,ibhd->jbhd', a, g)
            dkv = dkv.reshape(kvx.shape)
        if need[1]:
            datt = xp.einsum('ibhd,jbhd->bhij', g, kv[:, :, :, 1]).reshape(att.shape)
        return [dkv, datt]

