"""Sequence operators (ops/sequence.py): SequenceMask, SequenceLast, SequenceReverse.

References below loop over the batch, written from MXNet 1.9.1's documentation and the
values MXNet 1.9.1 gave when this file was written; they do not call the operators.
"""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op
from symgraph.opdef import positional_params


def _with_lengths(lengths, dtype=None):
    def make(rng, shapes, dt):
        ln = np.asarray(lengths, dtype=dtype or dt)
        return [rng.uniform(-1, 1, shapes[0]), ln]
    return make


def _steps(x, axis):
    """Data as (batch, time, ...)."""
    return x if axis == 1 else np.swapaxes(x, 0, 1)


def _unsteps(y, axis):
    return y if axis == 1 else np.swapaxes(y, 0, 1)


def _lens(x, ln, axis):
    n = x.shape[axis]
    if ln is None:
        return [n] * x.shape[1 - axis]
    return [int(v) for v in ln]


def _mask_ref(value=0.0, axis=0):
    def f(x, ln=None):
        s = _steps(x, axis).copy()
        for b, n in enumerate(_lens(x, ln, axis)):
            s[b, max(n, 0):] = value
        return _unsteps(s, axis)
    return f


def _last_ref(axis=0):
    def f(x, ln=None):
        s = _steps(x, axis)
        return np.stack([s[b, n - 1] for b, n in enumerate(_lens(x, ln, axis))])
    return f


def _reverse_ref(x, ln=None):
    s = _steps(x, 0).copy()
    for b, n in enumerate(_lens(x, ln, 0)):
        s[b, :n] = s[b, :n][::-1].copy()
    return _unsteps(s, 0)


SM, SL, SR = 'SequenceMask', 'SequenceLast', 'SequenceReverse'
USE = dict(use_sequence_length=True)
F16 = ('float16', 'float32', 'float64')
CASES = [
    OpCase(SM, {}, [(4, 3, 2)], ref=_mask_ref()),
    OpCase(SM, dict(USE), [(4, 3, 2), (3,)], inputs=_with_lengths([2, 4, 1]),
           ref=_mask_ref(), grad=(0,), dtypes=F16),
    OpCase(SM, dict(USE, value=-1.5), [(5, 3), (3,)], inputs=_with_lengths([0, 5, 3]),
           ref=_mask_ref(-1.5), grad=(0,)),
    OpCase(SM, dict(USE, axis=1, value=2.0), [(3, 4, 2), (3,)],
           inputs=_with_lengths([1, 4, 2]), ref=_mask_ref(2.0, 1), grad=(0,)),
    OpCase(SM, dict(USE), [(4, 2, 2), (2,)], inputs=_with_lengths([3, 1], 'int32'),
           ref=_mask_ref(), grad=(0,), id='SequenceMask[int32 lengths]'),
    OpCase(SM, dict(USE), [(4, 3), (3,)], inputs=_with_lengths([2.7, 1.2, 3.9]),
           ref=_mask_ref(), grad=(0,), id='SequenceMask[fractional lengths]'),
    OpCase(SL, {}, [(4, 3, 2)], ref=_last_ref()),
    OpCase(SL, dict(axis=1), [(3, 4, 2)], ref=_last_ref(1)),
    OpCase(SL, dict(USE), [(4, 3, 2), (3,)], inputs=_with_lengths([2, 4, 1]),
           ref=_last_ref(), grad=(0,), dtypes=F16),
    OpCase(SL, dict(USE, axis=1), [(3, 5), (3,)], inputs=_with_lengths([5, 1, 3]),
           ref=_last_ref(1), grad=(0,)),
    OpCase(SL, dict(USE), [(4, 2, 2, 2), (2,)], inputs=_with_lengths([3, 1], 'int32'),
           ref=_last_ref(), grad=(0,), id='SequenceLast[int32 lengths]'),
    OpCase(SR, {}, [(4, 3, 2)], ref=_reverse_ref),
    OpCase(SR, dict(USE), [(4, 3, 2), (3,)], inputs=_with_lengths([2, 4, 1]),
           ref=_reverse_ref, grad=(0,), dtypes=F16),
    OpCase(SR, dict(USE), [(5, 4), (4,)], inputs=_with_lengths([0, 5, 3, 2], 'int32'),
           ref=_reverse_ref, grad=(0,), id='SequenceReverse[int32 lengths]'),
]


test_forward, test_gradient = case_tests(CASES)


def test_values_seen_on_mxnet():
    """The example of MXNet 1.9.1 (lengths 2, 4 and 1.7 over (4, 3, 1) data)."""
    x = mx.nd.array(np.arange(12).reshape(4, 3, 1))
    ln = mx.nd.array([2, 4, 1.7])
    np.testing.assert_array_equal(
        mx.nd.SequenceReverse(x, ln, use_sequence_length=True).asnumpy()[:, :, 0],
        [[3, 10, 2], [0, 7, 5], [6, 4, 8], [9, 1, 11]])
    np.testing.assert_array_equal(
        mx.nd.SequenceLast(x, ln, use_sequence_length=True).asnumpy(), [[3], [10], [2]])
    np.testing.assert_array_equal(
        mx.nd.SequenceMask(x, ln, use_sequence_length=True, value=-1).asnumpy()[:, :, 0],
        [[0, 1, 2], [3, 4, -1], [-1, 7, -1], [-1, 10, -1]])


def test_arguments_and_lengths_inference():
    x = mx.sym.var('x')
    for name in (SM, SL, SR):
        assert getattr(mx.sym, name)(x, name='q').list_arguments() == ['x']
        s = getattr(mx.sym, name)(x, use_sequence_length=True, name='q')
        assert s.list_arguments() == ['x', 'q_sequence_length']
        args, outs, _ = s.infer_shape(x=(5, 3, 2))
        assert args == [(5, 3, 2), (3,)]
        assert outs == [(3, 2) if name == SL else (5, 3, 2)]
    args, outs, _ = mx.sym.SequenceMask(x, use_sequence_length=True, axis=1,
                                        name='q').infer_shape(x=(5, 3, 2))
    assert args == [(5, 3, 2), (5,)] and outs == [(5, 3, 2)]
    args, outs, _ = mx.sym.SequenceLast(x, use_sequence_length=True, axis=1,
                                        name='q').infer_shape(x=(5, 3, 2))
    assert args == [(5, 3, 2), (5,)] and outs == [(5, 2)]


def test_types():
    f32, i32, f64 = np.dtype('float32'), np.dtype('int32'), np.dtype('float64')
    for name in (SM, SL, SR):
        op = get_op(name)(use_sequence_length=True)
        assert op.infer_type([f32, None]) == ([f32, f32], [f32], [])
        assert op.infer_type([f64, i32]) == ([f64, i32], [f64], [])


@pytest.mark.parametrize('name, attrs, shapes, match', [
    (SM, dict(axis=2), [(5, 3, 2, 4)], 'axis'),
    (SM, dict(axis=-1), [(5, 3, 2)], 'axis'),
    (SL, dict(axis=2), [(5, 3, 2, 4)], 'axis'),
    (SR, dict(axis=1), [(5, 3, 2)], 'axis'),
    (SM, {}, [(5,)], "'data'"),
    (SM, dict(USE), [(5, 3, 2), (4,)], "'sequence_length'"),
    (SL, dict(USE, axis=1), [(5, 3, 2), (3,)], "'sequence_length'"),
    (SR, dict(USE), [(5, 3), (3, 1)], "'sequence_length'"),
])
def test_shape_errors(name, attrs, shapes, match):
    """The axis and shape checks MXNet 1.9.1 makes (axis 0 or 1; 0 only for Reverse)."""
    with pytest.raises(ShapeError, match=match):
        get_op(name)(**attrs).infer_shape(list(shapes))


def test_positional_parameters():
    """MXNet's order: use_sequence_length, value, axis."""
    assert positional_params(get_op(SM)) == ['use_sequence_length', 'value', 'axis']
    assert positional_params(get_op(SL)) == ['use_sequence_length', 'axis']


def test_no_gradient_for_lengths():
    x = mx.sym.var('x')
    ln = mx.sym.var('ln')
    s = mx.sym.SequenceLast(x, ln, use_sequence_length=True)
    exe = s.simple_bind(mx.cpu(), x=(4, 2, 3), ln=(2,))
    exe.arg_dict['x'][:] = np.arange(24).reshape(4, 2, 3)
    exe.arg_dict['ln'][:] = np.array([3, 1])
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    g = exe.grad_dict['x'].asnumpy()
    assert g[2, 0].tolist() == [1, 1, 1] and g[0, 1].tolist() == [1, 1, 1]
    assert g.sum() == 6
    assert not exe.grad_dict['ln'].asnumpy().any()
