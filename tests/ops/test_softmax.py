"""Softmax-family operators (ops/softmax.py): softmax, log_softmax, SoftmaxActivation, softmin.

References are written element by element from MXNet 1.9.1's formulas (checked against
MXNet 1.9.1 when this file was written); they do not call the operators.
"""
import numpy as np
import pytest

import symgraph as mx
from _refs import F16, _sm
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op


CASES = [
    OpCase('softmin', {}, [(2, 3, 4)], ref=lambda x: _sm(-x), dtypes=F16),
    OpCase('softmin', dict(axis=0, temperature=2.5), [(2, 3, 4)],
           ref=lambda x: _sm(-x / 2.5, 0)),
    OpCase('softmin', dict(axis=1, dtype='float64'), [(3, 5)], ref=lambda x: _sm(-x, 1)),
]


def _length_inputs(length):
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.asarray(length, dtype='int32')]
    return make

def _masked_softmax_ref(axis):
    def f(x, length):
        x = np.moveaxis(x, axis, -1)
        pos = np.arange(x.shape[-1])
        m = pos < length[..., None]
        e = np.where(m, np.exp(x - np.where(m, x, -np.inf).max(-1, keepdims=True)), 0)
        s = e.sum(-1, keepdims=True)
        return np.moveaxis(e / np.where(s > 0, s, 1), -1, axis)
    return f


SOFTMAX_CASES = [
    OpCase('softmax', {}, [(2, 3, 4)], ref=_sm),
    OpCase('softmax', dict(axis=0, temperature=2.5), [(2, 3, 4)],
           ref=lambda x: _sm(x / 2.5, 0)),
    OpCase('softmax', dict(dtype='float64'), [(3, 5)], ref=_sm),
    OpCase('softmax', dict(axis=1, use_length=True), [(2, 4, 3), (2, 3)],
           inputs=_length_inputs([[1, 3, 0], [2, 4, 3]]), ref=_masked_softmax_ref(1), grad=(0,)),
    OpCase('log_softmax', {}, [(2, 3, 4)], ref=lambda x: np.log(_sm(x))),
    OpCase('log_softmax', dict(axis=1, temperature=0.5), [(2, 3, 4)],
           ref=lambda x: np.log(_sm(x / 0.5, 1))),
    OpCase('SoftmaxActivation', {}, [(3, 5)], ref=_sm),
    OpCase('SoftmaxActivation', dict(mode='channel'), [(2, 3, 2, 2)], ref=lambda x: _sm(x, 1)),
]


test_forward, test_gradient = case_tests(CASES + SOFTMAX_CASES)


def test_softmax_length_argument():
    x = mx.sym.var('x')
    s = mx.sym.softmax(x, use_length=True, axis=1, name='s')
    assert s.list_arguments() == ['x', 's_length']
    assert get_op('softmax')(use_length=True, axis=1).infer_shape([(2, 3, 4), None])[0] == \
        [(2, 3, 4), (2, 4)]
    with pytest.raises(ShapeError, match="'length'"):
        get_op('softmax')(use_length=True).infer_shape([(2, 3, 4), (2, 4)])
    with pytest.raises(ShapeError):
        get_op('log_softmax')(use_length=True).infer_shape([(2, 3)])


def test_softmax_dtype():
    op = get_op('softmax')(dtype='float64')
    assert op.infer_type([np.dtype('float16')])[1] == [np.dtype('float64')]
    y, = op.forward(np, [np.zeros((2, 4), dtype='float32')], [], False)
    assert y.dtype == np.float64
    g, = op.backward(np, [np.ones((2, 4))], [np.zeros((2, 4), dtype='float32')], [y], [],
                     [True])
    assert g.dtype == np.float32


def test_softmax_activation_instance_backward_uses_axis_1():
    # MXNet 1.9.1: forward over the last axis, backward normalised over axis 1
    op = get_op('SoftmaxActivation')()
    x = np.random.RandomState(0).uniform(-1, 1, (2, 3, 4))
    y, = op.forward(np, [x], [], False)
    np.testing.assert_allclose(y, _sm(x, -1))
    g = np.random.RandomState(1).uniform(-1, 1, x.shape)
    d, = op.backward(np, [g], [x], [y], [], [True])
    np.testing.assert_allclose(d, y * (g - (g * y).sum(1, keepdims=True)))
    with pytest.raises(ShapeError):
        get_op('SoftmaxActivation')(mode='channel').infer_shape([(2, 3)])
