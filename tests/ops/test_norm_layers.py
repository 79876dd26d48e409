"""Normalisation layers (ops/norm_layers.py): GroupNorm, LayerNorm, InstanceNorm, L2Normalization
and LRN.

References are written element by element from MXNet 1.9.1's formulas (checked against
MXNet 1.9.1 when this file was written); they do not call the operators.
"""
import numpy as np

from _refs import F16, GN, F32, numeric_grad_of_first_output
from harness import case_tests, OpCase


def _group_norm_ref(num_groups=1, eps=1e-5, output_mean_var=False):
    def f(x, gamma, beta):
        n, c = x.shape[:2]
        per = c // num_groups
        out = np.empty_like(x)
        mean = np.empty((n, num_groups))
        std = np.empty((n, num_groups))
        for i in range(n):
            for g in range(num_groups):
                block = x[i, g * per:(g + 1) * per]
                mean[i, g] = block.mean()
                std[i, g] = np.sqrt(block.var() + eps)
                out[i, g * per:(g + 1) * per] = \
                    (block - mean[i, g]) / std[i, g] * gamma[g] + beta[g]
        return [out, mean, std] if output_mean_var else out
    return f


def _first_output_grad(ref, n_args, eps=1e-6):
    """Central differences of sum(dy * ref(...)[0]): MXNet gives the extra visible outputs
    (mean, std) no gradient."""
    def grad_ref(inputs, outputs, out_grads):
        res = []
        for i in range(n_args):
            g = np.zeros_like(inputs[i])
            for k in range(g.size):
                for sgn in (1, -1):
                    args = [a.copy() for a in inputs]
                    args[i].reshape(-1)[k] += sgn * eps
                    g.reshape(-1)[k] += sgn * float((ref(*args)[0] * out_grads[0]).sum()) \
                        / (2 * eps)
            res.append(g)
        return res
    return grad_ref


def _gn_inputs(rng, shapes, dtype):
    return [rng.uniform(-1, 1, shapes[0]), rng.uniform(0.5, 1.5, shapes[1]),
            rng.uniform(-1, 1, shapes[2])]


CASES = [
    OpCase(GN, {}, [(2, 4, 3), (1,), (1,)], inputs=_gn_inputs, ref=_group_norm_ref()),
    OpCase(GN, dict(num_groups=2), [(2, 4, 3), (2,), (2,)], inputs=_gn_inputs,
           ref=_group_norm_ref(2), dtypes=F16),
    OpCase(GN, dict(num_groups=3, eps=1e-3, output_mean_var=True), [(2, 6, 2, 2), (3,), (3,)],
           inputs=_gn_inputs, ref=_group_norm_ref(3, 1e-3, True),
           grad_ref=_first_output_grad(_group_norm_ref(3, 1e-3, True), 3)),
    OpCase(GN, dict(num_groups=4), [(3, 4, 5), (4,), (4,)], inputs=_gn_inputs,
           ref=_group_norm_ref(4)),
]


def _norm_inputs(rng, shapes, dtype):
    return [rng.uniform(-1, 1, shapes[0]) * 2 + 0.3] + [rng.uniform(0.5, 1.5, s)
                                                        for s in shapes[1:]]


def ln_ref(axis=-1, eps=1e-5, output_mean_var=False):
    def ref(x, g, b):
        x = np.ascontiguousarray(np.moveaxis(x.astype(np.float64), axis, -1))
        out = np.empty_like(x)
        flat, fo = x.reshape(-1, x.shape[-1]), out.reshape(-1, x.shape[-1])
        means, stds = np.empty(len(flat)), np.empty(len(flat))
        for i, row in enumerate(flat):
            means[i] = row.sum() / row.size
            stds[i] = np.sqrt(((row - means[i]) ** 2).sum() / row.size + F32(eps))
            fo[i] = (row - means[i]) / stds[i] * g + b
        keep = x.shape[:-1] + (1,)
        res = [np.moveaxis(out, -1, axis), np.moveaxis(means.reshape(keep), -1, axis),
               np.moveaxis(stds.reshape(keep), -1, axis)]
        return res if output_mean_var else res[0]
    return ref


def _ln_case(data, axis=-1, **attrs):
    kw = dict(attrs, axis=axis) if axis != -1 else dict(attrs)
    c = data[axis]
    ref = ln_ref(axis=axis, **attrs)
    gref = numeric_grad_of_first_output(ref, 3) if attrs.get('output_mean_var') else None
    return OpCase('LayerNorm', kw, shapes=[data, (c,), (c,)], ref=ref, inputs=_norm_inputs,
                  grad_ref=gref, rtol=1e-4, atol=1e-5)


LN_CASES = [
    _ln_case((3, 5)),
    _ln_case((2, 3, 4), axis=1),
    _ln_case((2, 3, 4), axis=0, eps=1e-3),
    _ln_case((4, 2, 3), axis=2, output_mean_var=True),
]


def in_ref(eps=1e-3):
    def ref(x, g, b):
        out = np.empty(x.shape)
        for n in range(x.shape[0]):
            for c in range(x.shape[1]):
                v = x[n, c].astype(np.float64)
                m = v.sum() / v.size
                var = ((v - m) ** 2).sum() / v.size
                out[n, c] = (v - m) / np.sqrt(var + F32(eps)) * g[c] + b[c]
        return out
    return ref


IN_CASES = [
    OpCase('InstanceNorm', {}, shapes=[(2, 3, 5), (3,), (3,)], ref=in_ref(),
           inputs=_norm_inputs, rtol=1e-4, atol=1e-5),
    OpCase('InstanceNorm', {'eps': 0.01}, shapes=[(3, 2, 4, 3), (2,), (2,)],
           ref=in_ref(0.01), inputs=_norm_inputs, rtol=1e-4, atol=1e-5),
]


def l2_ref(mode='instance', eps=1e-10):
    def ref(x):
        x = x.astype(np.float64)
        out = np.empty_like(x)
        if mode == 'instance':
            for n in range(x.shape[0]):
                out[n] = x[n] / np.sqrt((x[n] ** 2).sum() + F32(eps))
        elif mode == 'channel':
            for n in range(x.shape[0]):
                for idx in np.ndindex(*x.shape[2:]):
                    v = x[(n, slice(None)) + idx]
                    out[(n, slice(None)) + idx] = v / np.sqrt((v ** 2).sum() + F32(eps))
        else:
            for n in range(x.shape[0]):
                for c in range(x.shape[1]):
                    out[n, c] = x[n, c] / np.sqrt((x[n, c] ** 2).sum() + F32(eps))
        return out
    return ref


L2_CASES = [
    OpCase('L2Normalization', {}, shapes=[(3, 4)], ref=l2_ref()),
    OpCase('L2Normalization', {}, shapes=[(2, 3, 4)], ref=l2_ref()),
    OpCase('L2Normalization', {'mode': 'channel'}, shapes=[(2, 3, 4)], ref=l2_ref('channel')),
    OpCase('L2Normalization', {'mode': 'channel', 'eps': 0.1}, shapes=[(2, 3, 2, 3)],
           ref=l2_ref('channel', 0.1)),
    OpCase('L2Normalization', {'mode': 'spatial'}, shapes=[(2, 3, 2, 3)],
           ref=l2_ref('spatial')),
    OpCase('L2Normalization', {'mode': 'spatial'}, shapes=[(3, 2, 5)], ref=l2_ref('spatial')),
]


def lrn_ref(nsize, alpha=1e-4, beta=0.75, knorm=2.0):
    def ref(x):
        x = x.astype(np.float64)
        out = np.empty_like(x)
        C = x.shape[1]
        for c in range(C):
            lo, hi = max(0, c - nsize // 2), min(C, c + nsize // 2 + 1)
            s = (x[:, lo:hi] ** 2).sum(axis=1)
            out[:, c] = x[:, c] / (F32(knorm) + F32(alpha) / nsize * s) ** F32(beta)
        return out
    return ref


LRN_CASES = [
    OpCase('LRN', {'nsize': 3}, shapes=[(2, 5, 3, 4)], ref=lrn_ref(3)),
    OpCase('LRN', {'nsize': 5, 'alpha': 0.5, 'beta': 0.6, 'knorm': 1.5},
           shapes=[(1, 7, 2, 3)], ref=lrn_ref(5, 0.5, 0.6, 1.5)),
    OpCase('LRN', {'nsize': 1, 'alpha': 0.3}, shapes=[(2, 3, 1, 2)], ref=lrn_ref(1, 0.3)),
    OpCase('LRN', {'nsize': 7, 'alpha': 0.3}, shapes=[(2, 7, 2, 2)], ref=lrn_ref(7, 0.3)),
]


test_forward, test_gradient = case_tests(CASES + LN_CASES + IN_CASES + L2_CASES + LRN_CASES)
