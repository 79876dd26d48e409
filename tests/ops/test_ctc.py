"""ops/ctc.py: CTCLoss (aliases ctc_loss, _contrib_CTCLoss, _contrib_ctc_loss).

The reference is the textbook CTC forward recursion in probability space, written with
plain loops per sequence (it does not call the operator); the gradient is checked
numerically by the harness. A few values were recorded from MXNet 1.9.1.
"""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError, get_op
from symgraph.opdef import positional_params


def _mx_round(v):
    return int(np.sign(v) * np.floor(abs(v) + 0.5))


def _ctc_ref(blank_label='first', use_data_lengths=False, use_label_lengths=False):
    def ref(data, label, *lens):
        lens = list(lens)
        T, B, A = data.shape
        dl = lens.pop(0) if use_data_lengths else None
        ll = lens.pop(0) if use_label_lengths else None
        blank = 0 if blank_label == 'first' else A - 1
        pad = 0 if blank_label == 'first' else -1
        seqs = []
        for b in range(B):
            row = [_mx_round(v) for v in label[b]]
            if ll is not None:
                n = _mx_round(ll[b])
            else:
                n = row.index(pad) if pad in row else len(row)
            seqs.append(row[:n])
        out = np.zeros(B)
        if not any(seqs):
            return out.astype(data.dtype)
        for b in range(B):
            tb = T if dl is None else _mx_round(dl[b])
            x = data[:tb, b].astype(np.float64)
            y = np.exp(x - x.max(axis=1, keepdims=True))
            y /= y.sum(axis=1, keepdims=True)
            ext = [blank]
            for c in seqs[b]:
                ext += [c, blank]
            S = len(ext)
            alpha = np.zeros(S)
            alpha[0] = y[0, ext[0]]
            if S > 1:
                alpha[1] = y[0, ext[1]]
            for t in range(1, tb):
                new = np.zeros(S)
                for s in range(S):
                    v = alpha[s] + (alpha[s - 1] if s >= 1 else 0.0)
                    if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                        v += alpha[s - 2]
                    new[s] = v * y[t, ext[s]]
                alpha = new
            p = alpha[-1] + (alpha[-2] if S > 1 else 0.0)
            out[b] = -np.log(p) if p > 0 else 0.0
        return out.astype(data.dtype)
    return ref


def _inputs(label, data_len=None, label_len=None):
    def make(rng, shapes, dtype):
        arrs = [rng.randn(*shapes[0]).astype(dtype), np.array(label, dtype=dtype)]
        for v in (data_len, label_len):
            if v is not None:
                arrs.append(np.array(v, dtype=dtype))
        return arrs
    return make


_FIRST = [[1, 2, 0], [3, 3, 0], [1, 1, 4], [2, 0, 0]]
_LAST = [[1, 2, -1], [3, 3, -1], [0, 0, 1], [2, -1, -1]]
CASES = [
    OpCase('CTCLoss', {}, [(6, 4, 5), (4, 3)], inputs=_inputs(_FIRST), ref=_ctc_ref(),
           grad=(0,)),
    OpCase('ctc_loss', dict(blank_label='last'), [(6, 4, 5), (4, 3)], inputs=_inputs(_LAST),
           ref=_ctc_ref('last'), grad=(0,)),
    OpCase('_contrib_CTCLoss', {}, [(4, 3, 5), (3, 3)], grad=(0,),
           inputs=_inputs([[1, 2, 0], [3, 3, 0], [1, 1, 1]]), ref=_ctc_ref(),
           id='CTCLoss[infeasible]'),
    OpCase('_contrib_ctc_loss', {}, [(5, 3, 4), (3, 2)], grad=(0,),
           inputs=_inputs([[0, 0], [1, 0], [1.5, 2.5]]), ref=_ctc_ref(),
           id='CTCLoss[empty,rounded]'),
    OpCase('CTCLoss', dict(use_data_lengths=True), [(7, 4, 5), (4, 3), (4,)], grad=(0,),
           inputs=_inputs(_FIRST, data_len=[7, 3, 6, 2]),
           ref=_ctc_ref(use_data_lengths=True)),
    OpCase('CTCLoss', dict(use_label_lengths=True, blank_label='last'),
           [(6, 4, 5), (4, 3), (4,)], grad=(0,),
           inputs=_inputs([[1, 2, 3], [3, 3, 1], [0, 0, 1], [2, -1, 0]],
                          label_len=[3, 2, 3, 0]),
           ref=_ctc_ref('last', use_label_lengths=True)),
    OpCase('CTCLoss', dict(use_data_lengths=True, use_label_lengths=True),
           [(6, 3, 4), (3, 3), (3,), (3,)], grad=(0,),
           inputs=_inputs([[1, 2, 3], [3, 3, 1], [1, 1, 1]], data_len=[6, 4, 5],
                          label_len=[2, 3, 1]),
           ref=_ctc_ref(use_data_lengths=True, use_label_lengths=True)),
    OpCase('CTCLoss', {}, [(1, 2, 3), (2, 1)], grad=(0,), inputs=_inputs([[1], [0]]),
           ref=_ctc_ref(), id='CTCLoss[one_step]'),
]


test_forward, test_gradient = case_tests(CASES)


def _run(data, label, **kw):
    op = get_op('CTCLoss')(**{k: v for k, v in kw.items() if k.startswith(('use', 'blank'))})
    ins = [data, label] + [kw[k] for k in ('data_lengths', 'label_lengths') if k in kw]
    return op.forward(np, ins, [], True)


def test_values_seen_on_mxnet():
    d = np.sin(np.arange(24).reshape(4, 2, 3)).astype(np.float32)
    loss, grad = _run(d, np.array([[1, 1], [2, 0]], np.float32))
    np.testing.assert_allclose(loss, [4.13273, 1.839393], rtol=1e-5)
    np.testing.assert_allclose(grad[:, 0], [[0.0400398, -0.4678968, 0.427857],
                                            [-0.4200793, -0.0803217, 0.5004011],
                                            [-0.4377147, -0.1233188, 0.5610339],
                                            [-0.0128431, -0.5911578, 0.6040009]], atol=1e-5)
    loss, _ = _run(d, np.array([[0, 1], [1, -1]], np.float32), blank_label='last')
    np.testing.assert_allclose(loss, [2.0916586, 4.1996713], rtol=1e-5)


def test_zero_cases():
    """Infeasible sequences, steps past data_lengths and all-empty batches: zeros."""
    rng = np.random.RandomState(0)
    d = rng.randn(4, 3, 5).astype(np.float32)
    loss, grad = _run(d, np.array([[1, 2, 0], [3, 3, 0], [1, 1, 1]], np.float32))
    assert loss[2] == 0 and not grad[:, 2].any() and loss[:2].min() > 0
    loss, grad = _run(d, np.zeros((3, 2), np.float32))
    assert not loss.any() and not grad.any()
    loss, grad = _run(d, np.array([[1, 0], [2, 0], [0, 0]], np.float32),
                      use_data_lengths=True, data_lengths=np.array([2, 4, 3], np.float32))
    assert not grad[2:, 0].any() and grad[:2, 0].any() and not grad[3:, 2].any()
    # the gradient rows of a feasible sequence sum to 0 (softmax minus occupancy)
    np.testing.assert_allclose(grad.sum(axis=2), 0, atol=1e-5)


def test_symbolic_and_ndarray():
    rng = np.random.RandomState(1)
    d = rng.randn(5, 2, 4).astype(np.float32)
    lab = np.array([[1, 2], [3, 0]], np.float32)
    out = mx.nd.CTCLoss(mx.nd.array(d), mx.nd.array(lab))
    np.testing.assert_allclose(out.asnumpy(), _ctc_ref()(d, lab), rtol=1e-5)
    out = mx.nd.contrib.ctc_loss(mx.nd.array(d), mx.nd.array(lab),
                                 label_lengths=mx.nd.array([1, 1]), use_label_lengths=True)
    np.testing.assert_allclose(out.asnumpy(), _ctc_ref(use_label_lengths=True)(
        d, lab, np.array([1, 1])), rtol=1e-5)
    s = mx.sym.CTCLoss(mx.sym.var('d'), mx.sym.var('l'), label_lengths=mx.sym.var('ll'),
                       use_label_lengths=True, name='c')
    assert s.list_arguments() == ['d', 'l', 'll']
    assert s.list_outputs() == ['c_output0']
    assert s.infer_shape(d=(5, 2, 4), l=(2, 3))[:2] == ([(5, 2, 4), (2, 3), (2,)], [(2,)])


def test_arguments_outputs_and_params():
    op = get_op('CTCLoss')
    assert op().list_arguments() == ['data', 'label']
    assert op(use_data_lengths=True).list_arguments() == ['data', 'label', 'data_lengths']
    assert op(use_label_lengths=True).list_arguments() == ['data', 'label', 'label_lengths']
    assert op(use_data_lengths=1, use_label_lengths=1).list_arguments() == \
        ['data', 'label', 'data_lengths', 'label_lengths']
    assert op().list_outputs() == ['output0', 'output1'] and op().num_visible_outputs() == 1
    assert positional_params(op) == ['use_data_lengths', 'use_label_lengths', 'blank_label']
    for alias in ('ctc_loss', '_contrib_CTCLoss', '_contrib_ctc_loss'):
        assert get_op(alias) is op
    with pytest.raises(mx.base.MXNetError):
        op(blank_label='middle')


@pytest.mark.parametrize('attrs,shapes,match', [
    ({}, [(5, 2), (2, 3)], "'data'"),
    ({}, [(5, 2, 4), (2,)], "'label'"),
    ({}, [(5, 2, 4), (3, 3)], "'label'"),
    (dict(use_data_lengths=True), [(5, 2, 4), (2, 3), (3,)], "'data_lengths'"),
    (dict(use_label_lengths=True), [(5, 2, 4), (2, 3), (2, 1)], "'label_lengths'"),
])
def test_shape_errors(attrs, shapes, match):
    """MXNet 1.9.1 checks: 3-D data, 2-D label, vectors of lengths, equal batch sizes."""
    with pytest.raises(ShapeError, match=match):
        get_op('CTCLoss')(**attrs).infer_shape(list(shapes))


def test_infer_shape_and_type():
    op = get_op('CTCLoss')(use_data_lengths=True)
    assert op.infer_shape([(5, 2, 4), (2, 3), None]) == \
        ([(5, 2, 4), (2, 3), (2,)], [(2,), (5, 2, 4)], [])
    f32, i32 = np.dtype('float32'), np.dtype('int32')
    assert op.infer_type([f32, i32, None]) == ([f32, i32, None], [f32, f32], [])
    with pytest.raises(TypeInferenceError):
        op.infer_type([i32, f32, f32])
