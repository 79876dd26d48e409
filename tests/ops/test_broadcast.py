"""broadcast_to, broadcast_axis and broadcast_like (ops/broadcast.py; MXNet 1.9.1 semantics)."""
import numpy as np
import pytest

from harness import case_tests, check_fast_forward, OpCase, parametrize_cases
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


# --- broadcasting one array to a shape ------------------------------------------------------
CASES = [
    OpCase('broadcast_to', {'shape': (2, 3, 4)}, shapes=[(1, 3, 1)],
           ref=lambda x: np.broadcast_to(x, (2, 3, 4))),
    OpCase('broadcast_to', {'shape': '(4, 0)'}, shapes=[(1, 5)],
           ref=lambda x: np.broadcast_to(x, (4, 5))),
    OpCase('broadcast_to', {'shape': (3, 2)}, shapes=[(3, 2)], ref=lambda x: x),
    OpCase('broadcast_axis', {'axis': (0, 2), 'size': (2, 4)}, shapes=[(1, 3, 1)],
           ref=lambda x: np.broadcast_to(x, (2, 3, 4))),
    OpCase('broadcast_axes', {'axis': 1, 'size': 5}, shapes=[(2, 1)],
           ref=lambda x: np.broadcast_to(x, (2, 5))),
    OpCase('broadcast_axis', {'axis': -1, 'size': 3}, shapes=[(4, 1)],
           ref=lambda x: np.broadcast_to(x, (4, 3))),
    OpCase('broadcast_like', shapes=[(1, 3), (2, 3)], grad=(0,),
           ref=lambda a, b: np.broadcast_to(a, b.shape)),
    OpCase('broadcast_like', {'lhs_axes': (0, 2), 'rhs_axes': (1, 0)},
           shapes=[(1, 3, 1), (5, 6)], ref=lambda a, b: np.broadcast_to(a, (6, 3, 5))),
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


@pytest.mark.parametrize('name, kwargs, shapes, match', [
    ('broadcast_to', {'shape': (2, 3)}, [(3,)], 'number of dimensions'),
    ('broadcast_to', {'shape': (4, 3)}, [(2, 3)], r'\(2, 3\).*\(4, 3\)'),
    ('broadcast_axis', {'axis': 0, 'size': 4}, [(2, 3)], 'size 1'),
    ('broadcast_axis', {'axis': 2, 'size': 4}, [(2, 3)], 'out of range'),
    ('broadcast_like', {}, [(2, 3), (2, 3, 4)], 'ndim'),
    ('broadcast_like', {}, [(2, 3), (4, 3)], r'\(2, 3\).*\(4, 3\)'),
])
def test_broadcast_to_errors(name, kwargs, shapes, match):
    with pytest.raises(ShapeError, match=match):
        get_op(name)(**kwargs).infer_shape(shapes)


def test_broadcast_to_partial():
    assert get_op('broadcast_to')(shape=(4, 0)).infer_shape([(1, 3)])[1] == [(4, 3)]
    assert get_op('broadcast_to')(shape=(4, 3)).infer_shape([None])[1] == [None]


def test_broadcast_axis_parameter_lengths():
    with pytest.raises(MXNetError, match='differ in length'):
        get_op('broadcast_axis')(axis=(0, 1), size=(2,))
