"""Array-with-scalar operators (ops/scalar.py; MXNet 1.9.1 semantics)."""
import numpy as np

from harness import case_tests, check_fast_forward, OpCase, parametrize_cases


def pos(rng, shapes, dtype):
    return [rng.uniform(0.5, 2, s) for s in shapes]


def away0(rng, shapes, dtype):
    return [np.sign(rng.uniform(-1, 1, s) + 1e-9) * rng.uniform(0.3, 1.5, s) for s in shapes]


def ints(rng, shapes, dtype):
    return [rng.randint(-7, 8, s).astype(np.int32) for s in shapes]


def zero_grads(inputs, outputs, out_grads):
    return [np.zeros_like(x) for x in inputs]


# --- array with scalar ------------------------------------------------------------------------
SCALAR = [  # name, scalar, reference, input maker
    ('_plus_scalar', 2, lambda x: x + 2, None),
    ('_PlusScalar', '-1.5', lambda x: x - 1.5, None),
    ('_minus_scalar', 0.25, lambda x: x - 0.25, None),
    ('_rminus_scalar', 3, lambda x: 3 - x, None),
    ('_mul_scalar', -1.0, lambda x: -x, None),
    ('_mul_scalar', 2.5, lambda x: x * 2.5, None),
    ('_div_scalar', 4, lambda x: x / 4, None),
    ('_rdiv_scalar', 2, lambda x: 2 / x, away0),
    ('_mod_scalar', 0.7, lambda x: np.mod(x, 0.7),
     lambda r, s, d: [0.7 * (np.floor(r.uniform(-3, 3, s[0])) + r.uniform(0.1, 0.9, s[0]))]),
    ('_mod_scalar', -2, lambda x: np.mod(x, -2),
     lambda r, s, d: [2 * (np.floor(r.uniform(-3, 3, s[0])) + r.uniform(0.1, 0.9, s[0]))]),
    ('_rmod_scalar', 3.5, lambda x: np.mod(3.5, x),
     lambda r, s, d: [3.5 / (r.choice([-3, -1, 1, 2], s[0]) + r.uniform(0.1, 0.9, s[0]))]),
    ('_power_scalar', 2, lambda x: x ** 2, None),
    ('_power_scalar', 3, lambda x: x ** 3, None),
    ('_power_scalar', 0.5, np.sqrt, pos),
    ('_rpower_scalar', 2, lambda x: 2 ** x, None),
    ('_rpower_scalar', 0.5, lambda x: 0.5 ** x, None),
    ('_maximum_scalar', 0.1, lambda x: np.maximum(x, 0.1), None),
    ('_minimum_scalar', -0.2, lambda x: np.minimum(x, -0.2), None),
    ('_hypot_scalar', 0.5, lambda x: np.hypot(x, 0.5), None),
]
CASES = []
for _name, _s, _f, _make in SCALAR:
    CASES.append(OpCase(_name, {'scalar': _s}, shapes=[(3, 5)], ref=_f, inputs=_make))
CASES.append(OpCase('_plus_scalar', {'scalar': 1, 'is_int': 'True'}, shapes=[(2, 3, 4)],
                    ref=lambda x: x + 1))
for _name, _f in [('_equal_scalar', np.equal), ('_not_equal_scalar', np.not_equal),
                  ('_greater_scalar', np.greater), ('_greater_equal_scalar', np.greater_equal),
                  ('_lesser_scalar', np.less), ('_lesser_equal_scalar', np.less_equal),
                  ('_logical_and_scalar', np.logical_and),
                  ('_logical_or_scalar', np.logical_or),
                  ('_logical_xor_scalar', np.logical_xor)]:
    CASES.append(OpCase(_name, {'scalar': 1}, shapes=[(4, 5)],
                        ref=lambda x, f=_f: f(x, 1).astype(x.dtype), grad_ref=zero_grads,
                        inputs=lambda r, s, d: [np.round(r.uniform(-2, 2, s[0]))]))
CASES += [
    OpCase('_logical_and_scalar', {'scalar': 0}, shapes=[(2, 3)], grad_ref=zero_grads,
           ref=lambda x: np.zeros_like(x)),
    # ties: the gradient passes where x >= scalar (max) and x <= scalar (min)
    OpCase('_maximum_scalar', {'scalar': 0}, shapes=[(4,)], grad=(0,),
           inputs=lambda r, s, d: [np.array([-1.0, 0.0, 0.0, 2.0])],
           ref=lambda x: np.maximum(x, 0), grad_ref=lambda i, o, g: [g[0] * (i[0] >= 0)]),
    OpCase('_minimum_scalar', {'scalar': 0}, shapes=[(4,)], grad=(0,),
           inputs=lambda r, s, d: [np.array([-1.0, 0.0, 0.0, 2.0])],
           ref=lambda x: np.minimum(x, 0), grad_ref=lambda i, o, g: [g[0] * (i[0] <= 0)]),
    # integer arrays keep their dtype, and the scalar is cast to it first (MXNet: an int32
    # array plus 2.5 is the array plus 2; more in tests/golden/test_int_scalar.py)
    OpCase('_plus_scalar', {'scalar': 2.5}, shapes=[(3, 4)], dtypes=('int32',), inputs=ints,
           ref=lambda x: (x + 2).astype(np.int32)),
    OpCase('_mul_scalar', {'scalar': -1.5}, shapes=[(3, 4)], dtypes=('int32',), inputs=ints,
           ref=lambda x: (x * -1).astype(np.int32)),
    OpCase('_div_scalar', {'scalar': 2}, shapes=[(3, 4)], dtypes=('int32',), inputs=ints,
           ref=lambda x: np.trunc(x / 2).astype(np.int32)),
    OpCase('_greater_scalar', {'scalar': 0}, shapes=[(5,)], dtypes=('int32',), inputs=ints,
           ref=lambda x: (x > 0).astype(np.int32)),
]


test_forward, test_gradient = case_tests(CASES)


@parametrize_cases(CASES)
def test_fast_forward_matches_forward(case):
    if not check_fast_forward(case):
        assert case.make_op().name in ('broadcast_to', 'broadcast_axis', 'broadcast_like')


@parametrize_cases(CASES)
def test_unknown_shapes_do_not_crash(case):
    op = case.make_op()
    op.infer_shape([None] * len(op.list_arguments()))
    op.infer_type([None] * len(op.list_arguments()))
