"""Normalisation layers (ops/norm_layers.py): GroupNorm.

References are written element by element from MXNet 1.9.1's formulas (checked against
MXNet 1.9.1 when this file was written); they do not call the operators.
"""
import numpy as np
from harness import case_tests, OpCase
from _refs import F16, GN


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


test_forward, test_gradient = case_tests(CASES)
