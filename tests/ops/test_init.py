"""Operators without inputs (``_zeros``, ``_ones``, ``_full``, ``_arange``, ``_eye``,
``_linspace``): values, shapes, dtypes and MXNet's parameter handling; golden values and
JSON from MXNet 1.9.1 are in tests/golden."""
import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, parametrize_cases, check_forward
from symgraph.base import MXNetError

CASES = [
    OpCase('_zeros', dict(shape=(2, 3)), shapes=[], ref=lambda: np.zeros((2, 3)), grad=()),
    OpCase('_ones', dict(shape=(4,), dtype='int32'), shapes=[], dtypes=('int32',),
           ref=lambda: np.ones(4, np.int32), grad=()),
    OpCase('_full', dict(shape=(2, 2), value=2.5), shapes=[],
           ref=lambda: np.full((2, 2), 2.5), grad=()),
    OpCase('_arange', dict(start=2, stop=11, step=3, repeat=2), shapes=[],
           ref=lambda: np.repeat(np.arange(2.0, 11, 3), 2), grad=()),
    OpCase('_arange', dict(start=4), shapes=[], ref=lambda: np.arange(4.0), grad=()),
    OpCase('_arange', dict(start=1, stop=0, step=-0.25), shapes=[],
           ref=lambda: np.arange(1, 0, -0.25), grad=()),
    OpCase('_eye', dict(N=3, M=4, k=1), shapes=[], ref=lambda: np.eye(3, 4, 1), grad=()),
    OpCase('_eye', dict(N=3, k=-1), shapes=[], ref=lambda: np.eye(3, 3, -1), grad=()),
    OpCase('_linspace', dict(start=0, stop=1, num=5), shapes=[],
           ref=lambda: np.linspace(0, 1, 5), grad=()),
    OpCase('_linspace', dict(start=0, stop=1, num=4, endpoint=False), shapes=[],
           ref=lambda: np.linspace(0, 1, 4, endpoint=False), grad=()),
]


@parametrize_cases(CASES)
def test_forward(case):
    check_forward(case)


def test_symbol_functions_write_mxnets_attributes():
    assert mx.sym.zeros((2, 3)).list_attr() == {'shape': '(2, 3)', 'dtype': 'float32'}
    assert mx.sym.ones((2,), dtype='int32').infer_type() == ([], [np.int32], [])
    assert mx.sym.arange(0, 5).list_attr() == {
        'start': '0', 'stop': '5', 'step': '1.0', 'repeat': '1', 'infer_range': 'False',
        'dtype': 'float32'}
    assert mx.sym.full((2,), 5).list_arguments() == []
    assert mx.sym.arange(0, 5).infer_shape() == ([], [(5,)], [])


def test_graphs_mixing_made_arrays_and_inputs():
    x = mx.sym.var('x')
    net = x * mx.sym.arange(1, 4) + mx.sym.ones((3,))
    exe = net.simple_bind(mx.cpu(), x=(3,))
    out = exe.forward(is_train=True, x=np.array([1.0, 2.0, 3.0]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [2, 5, 10])
    exe.backward([mx.nd.ones((3,))])
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), [1, 2, 3])
    np.testing.assert_array_equal(mx.sym.eye(2).eval()[0].asnumpy(), np.eye(2))


def test_bad_parameters_are_refused():
    with pytest.raises(MXNetError, match='infer_range'):
        mx.sym.arange(0, infer_range=True)
    with pytest.raises(MXNetError, match='step'):
        mx.sym.arange(0, 5, 0)
