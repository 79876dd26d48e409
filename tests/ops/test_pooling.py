"""Pooling and UpSampling against naive loop references, plus shape rules."""
import math

import numpy as np
import pytest

from harness import case_tests, OpCase
from symgraph.opdef import get_op, ShapeError
from symgraph.base import MXNetError
from test_conv import deconv_ref


def _windows(spatial, attrs):
    """Per output position: (padded window start, clipped ranges) as MXNet's loops do."""
    nd = len(spatial)
    if attrs.get('global_pool'):
        kernel, stride, pad, conv = tuple(spatial), (1,) * nd, (0,) * nd, 'valid'
    else:
        kernel = attrs['kernel']
        stride = attrs.get('stride') or (1,) * nd
        pad = attrs.get('pad') or (0,) * nd
        conv = attrs.get('pooling_convention', 'valid')
    out = []
    for s, k, t, p in zip(spatial, kernel, stride, pad):
        if conv == 'valid':
            out.append((s + 2 * p - k) // t + 1)
        elif conv == 'full':
            out.append(1 + int(math.ceil((s + 2 * p - k) / t)))
        else:
            out.append(int(math.ceil(s / t)))
    res = {}
    for o in np.ndindex(*out):
        start = [o[i] * stride[i] - pad[i] for i in range(nd)]
        end_pad = [min(start[i] + kernel[i], spatial[i] + pad[i]) for i in range(nd)]
        lo = [max(v, 0) for v in start]
        hi = [min(v, s) for v, s in zip(end_pad, spatial)]
        cip = attrs.get('count_include_pad', True)
        size = np.prod([(e - b) for e, b in zip(end_pad, start)] if cip
                       else [h - l for h, l in zip(hi, lo)])
        res[o] = (tuple(slice(a, b) for a, b in zip(lo, hi)), size)
    return out, res


def _channels_last(attrs, x):
    return attrs.get('layout') in ('NWC', 'NHWC', 'NDHWC')


def pool_ref(attrs):
    def ref(x):
        last = _channels_last(attrs, x)
        if last:
            x = np.moveaxis(x, -1, 1)
        out, wins = _windows(x.shape[2:], attrs)
        y = np.zeros(x.shape[:2] + tuple(out))
        ptype = attrs.get('pool_type', 'max')
        for o, (sl, size) in wins.items():
            win = x[(slice(None), slice(None)) + sl].reshape(x.shape[:2] + (-1,))
            win = win.astype(np.float64)
            idx = (slice(None), slice(None)) + o
            if ptype == 'max':
                y[idx] = win.max(-1) if win.shape[-1] else np.finfo(x.dtype).min
            elif ptype == 'sum':
                y[idx] = win.sum(-1)
            elif ptype == 'avg':
                y[idx] = win.sum(-1) / size if size else 0.0
            else:
                p = attrs['p_value']
                y[idx] = np.sign(s := (win ** p).sum(-1)) * np.abs(s) ** (1.0 / p)
        y = y.astype(x.dtype)
        return np.moveaxis(y, 1, -1) if last else y
    return ref


def max_grad_ref(attrs):
    """The whole output gradient of a window goes to its first maximum (row-major)."""
    def grad_ref(inputs, outputs, out_grads):
        x, dy = inputs[0], out_grads[0]
        dx = np.zeros_like(x)
        _, wins = _windows(x.shape[2:], attrs)
        for o, (sl, _) in wins.items():
            for n, c in np.ndindex(*x.shape[:2]):
                win = x[(n, c) + sl]
                if win.size:
                    k = np.unravel_index(np.argmax(win), win.shape)
                    pos = tuple(s.start + i for s, i in zip(sl, k))
                    dx[(n, c) + pos] += dy[(n, c) + o]
        return [dx]
    return grad_ref


def _ties(rng, shapes, dtype):
    return [rng.randint(0, 3, shapes[0]).astype(dtype)]


def _pool(attrs, shape, **kw):
    return OpCase('Pooling', attrs, [shape], ref=pool_ref(attrs), rtol=1e-5, atol=1e-6, **kw)


K = dict
CASES = [
    _pool(K(kernel=(2, 2), stride=(2, 2)), (2, 3, 6, 8)),
    _pool(K(kernel=(3, 2), stride=(2, 1), pad=(1, 1)), (2, 2, 7, 5)),
    _pool(K(kernel=(3, 3), stride=(2, 2), pad=(2, 1)), (1, 2, 7, 6)),
    _pool(K(kernel=(2, 3), stride=(2, 2), pooling_convention='full'), (2, 2, 7, 6)),
    _pool(K(kernel=(3,), stride=(2,), pad=(1,)), (2, 3, 9)),
    _pool(K(kernel=(2, 2, 2), stride=(2, 1, 2), pool_type='max'), (1, 2, 4, 5, 6)),
    _pool(K(kernel=(3, 3), stride=(1, 1), pool_type='max'), (2, 2, 5, 4)),
    # ties: the gradient goes to the first maximum in each window
    _pool(K(kernel=(3, 3), stride=(2, 2), pad=(1, 1)), (2, 2, 7, 6), inputs=_ties,
          grad_ref=max_grad_ref(K(kernel=(3, 3), stride=(2, 2), pad=(1, 1)))),
    _pool(K(kernel=(2, 3), stride=(1, 2), pooling_convention='full'), (2, 2, 5, 6),
          inputs=_ties, grad_ref=max_grad_ref(K(kernel=(2, 3), stride=(1, 2),
                                                 pooling_convention='full'))),
    _pool(K(kernel=(1, 1), global_pool=True), (2, 3, 5, 4), inputs=_ties,
          grad_ref=max_grad_ref(K(global_pool=True))),
    # windows entirely in the padding ('full' with pad): MXNet's lowest float, forward only
    _pool(K(kernel=(2, 3), stride=(2, 2), pad=(1, 1), pooling_convention='full'),
          (1, 2, 3, 4), grad=()),
    # average: 'full' leaves the area past the edge out of the divisor, explicit pad counts
    _pool(K(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg',
            pooling_convention='full'), (2, 2, 6, 7)),
    _pool(K(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg',
            pooling_convention='full', count_include_pad=False), (2, 2, 6, 7)),
    _pool(K(kernel=(3, 2), stride=(2, 3), pad=(2, 1), pool_type='avg'), (2, 2, 7, 8)),
    _pool(K(kernel=(3, 2), stride=(2, 3), pad=(2, 1), pool_type='avg',
            count_include_pad=False), (2, 2, 7, 8)),
    _pool(K(kernel=(4,), stride=(3,), pool_type='avg', pooling_convention='full'), (2, 3, 9)),
    _pool(K(kernel=(2, 3), stride=(2, 2), pad=(1, 1), pool_type='avg',
            pooling_convention='full'), (1, 2, 3, 4)),
    _pool(K(kernel=(2, 2, 2), stride=(2, 1, 2), pad=(1, 0, 1), pool_type='avg'),
          (1, 2, 4, 3, 5)),
    _pool(K(kernel=(2, 2), stride=(3, 3), pad=(1, 1), pool_type='sum',
            pooling_convention='full'), (2, 2, 7, 8)),
    _pool(K(kernel=(3,), stride=(1,), pool_type='sum'), (2, 2, 6)),
    # global pooling ignores kernel, stride and pad
    _pool(K(kernel=(2, 2), pad=(1, 1), global_pool=True, pool_type='avg'), (2, 3, 5, 4)),
    _pool(K(global_pool=True, pool_type='sum'), (2, 3, 5)),
    _pool(K(kernel=(1, 1), global_pool=True, pool_type='max'), (2, 3, 4, 5)),
    _pool(K(global_pool=True, pool_type='lp', p_value=2), (2, 3, 3, 4)),
    # Lp
    _pool(K(kernel=(2, 2), stride=(1, 2), pad=(1, 0), pool_type='lp', p_value=2),
          (2, 2, 5, 6)),
    _pool(K(kernel=(2, 2), stride=(1, 2), pool_type='lp', p_value=1), (2, 2, 5, 6)),
    _pool(K(kernel=(3,), stride=(2,), pool_type='lp', p_value=3), (2, 2, 7)),
    # channels last
    _pool(K(kernel=(2, 3), stride=(2, 2), pad=(1, 1), layout='NHWC'), (2, 5, 6, 3)),
    _pool(K(kernel=(2, 3), stride=(2, 2), pool_type='avg', layout='NHWC',
            pooling_convention='full'), (2, 5, 6, 3)),
    _pool(K(kernel=(3,), stride=(2,), pool_type='sum', layout='NWC'), (2, 7, 3)),
    # 'same' (1-D max only in MXNet): ceil(W / stride) windows from the left edge
    _pool(K(kernel=(3,), stride=(2,), pooling_convention='same'), (2, 2, 8)),
]


def _up_ref(scale, mode='concat'):
    def ref(*xs):
        oh = xs[0].shape[2] * scale
        ups = [np.repeat(np.repeat(x, oh // x.shape[2], axis=2), oh // x.shape[2], axis=3)
               for x in xs]
        return sum(ups) if mode == 'sum' else np.concatenate(ups, axis=1)
    return ref


def _bilinear_ref(scale):
    k = 2 * scale - scale % 2
    p = int(math.ceil((scale - 1) / 2.0))

    def ref(x, w):
        return deconv_ref(x, w, None, (k, k), (scale, scale), (p, p),
                          groups=x.shape[1])
    return ref


UP = [
    OpCase('UpSampling', dict(scale=2, sample_type='nearest'), [(2, 3, 3, 4)],
           ref=_up_ref(2)),
    OpCase('UpSampling', dict(scale=3, sample_type='nearest', num_args=2),
           [(1, 2, 2, 3), (1, 3, 6, 9)], ref=_up_ref(3)),
    OpCase('UpSampling', dict(scale=2, sample_type='nearest', num_args=2,
                              multi_input_mode='sum'),
           [(2, 3, 4, 2), (2, 3, 2, 1)], ref=_up_ref(2, 'sum')),
    OpCase('UpSampling', dict(scale=2, sample_type='bilinear', num_filter=2),
           [(1, 2, 3, 4), (2, 1, 4, 4)], ref=_bilinear_ref(2), rtol=1e-4, atol=1e-5),
    OpCase('UpSampling', dict(scale=3, sample_type='bilinear', num_filter=3),
           [(1, 3, 2, 3), (3, 1, 5, 5)], ref=_bilinear_ref(3), rtol=1e-4, atol=1e-5),
]
CASES += UP


test_forward, test_gradient = case_tests(CASES)


def test_pooling_shapes():
    op = get_op('Pooling')(kernel=(2, 3), stride=(2, 2), pooling_convention='full')
    assert op.infer_shape([(2, 3, 7, 6)])[1] == [(2, 3, 4, 3)]
    assert op.infer_shape([(2, 3, 0, 6)])[1] == [(2, 3, 0, 3)]
    assert op.infer_shape([None])[1] == [None]
    valid = get_op('Pooling')(kernel=(2, 3), stride=(2, 2))
    assert valid.infer_shape([(2, 3, 7, 6)])[1] == [(2, 3, 3, 2)]
    glob = get_op('Pooling')(kernel=(1, 1), global_pool=True, pooling_convention='full')
    assert glob.infer_shape([(2, 3, 7, 6)])[1] == [(2, 3, 1, 1)]
    assert glob.infer_shape([(2, 3, 7)])[1] == [(2, 3, 1)]
    last = get_op('Pooling')(kernel=(2, 2), layout='NHWC')
    assert last.infer_shape([(1, 4, 5, 3)])[1] == [(1, 3, 4, 3)]
    with pytest.raises(ShapeError):
        valid.infer_shape([(2, 3, 7)])
    with pytest.raises(ShapeError):
        get_op('Pooling')(kernel=(5, 5)).infer_shape([(1, 1, 4, 8)])


def test_pooling_defaults_and_errors():
    op = get_op('Pooling')(kernel='(2, 2)')
    assert op.pool_type == 'max' and op.pooling_convention == 'valid'
    assert op.count_include_pad is None and op.p_value is None
    with pytest.raises(MXNetError):
        get_op('Pooling')(kernel=(2, 2), pool_type='lp')
    with pytest.raises(MXNetError):
        get_op('Pooling')(kernel=(2, 2), pool_type='median')
    with pytest.raises(MXNetError):
        get_op('Pooling')(kernel=(2, 2), pooling_convention='same')
    with pytest.raises(MXNetError):
        get_op('Pooling')(kernel=(2, 2), stride=(1,))
    with pytest.raises(MXNetError):      # MXNet also refuses a kernel-less, non-global pool
        get_op('Pooling')()


def test_upsampling_arguments_and_shapes():
    near = get_op('UpSampling')(scale=2, sample_type='nearest', num_args=2)
    assert near.list_arguments() == ['arg0', 'arg1']
    assert near.infer_shape([(1, 2, 3, 4), (1, 5, 6, 8)])[1] == [(1, 7, 6, 8)]
    with pytest.raises(ShapeError):
        near.infer_shape([(1, 2, 3, 4), (1, 5, 4, 8)])
    summed = get_op('UpSampling')(scale=2, sample_type='nearest', num_args=2,
                                  multi_input_mode='sum')
    with pytest.raises(ShapeError):
        summed.infer_shape([(1, 2, 3, 4), (1, 5, 3, 4)])
    bil = get_op('UpSampling')(scale=2, sample_type='bilinear', num_filter=3)
    assert bil.list_arguments() == ['data', 'weight']
    args, outs, _ = bil.infer_shape([(2, 3, 5, 4), None])
    assert args[1] == (3, 1, 4, 4) and outs == [(2, 3, 10, 8)]


@pytest.mark.parametrize('attrs, shape', [
    (dict(global_pool=True, pool_type='avg', kernel=(1, 1)), (2, 3, 8, 8)),
    (dict(global_pool=True, pool_type='max', kernel=(1, 1)), (2, 3, 5, 5)),
    (dict(kernel=(2, 2), stride=(2, 2), pool_type='max'), (2, 4, 12, 12)),
    (dict(kernel=(3, 3), stride=(1, 1), pool_type='avg'), (2, 3, 9, 9)),
    (dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg'), (2, 3, 9, 9)),
    (dict(kernel=(2, 2), stride=(2, 2), pool_type='max'), (64, 20, 24, 24)),   # oneDNN
])
def test_backward_computes_into_the_offered_gradient_array(attrs, shape):
    """grad_writes_into (a row of the storage plan's table): the data gradient lands in the
    array the storage plan offers (returned as such), with the values of the backward that
    makes its own."""
    from symgraph.graph import rules
    op = get_op('Pooling')(**attrs)
    assert rules.GRAD_WRITES_INTO.ask(op) and not op.writes_into
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    y = op.forward(np, [x], [], True)[0]
    dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
    want = op.backward(np, [dy], [x], [y], [], [True])[0]
    buf = np.full(shape, np.nan, np.float32)
    got = op.backward(np, [dy], [x], [y], [], [True], grad_out=[buf])[0]
    assert got is buf
    np.testing.assert_array_equal(got, want)
    # an array that does not fit is left alone
    other = np.zeros(shape, np.float64)
    np.testing.assert_array_equal(op.backward(np, [dy], [x], [y], [], [True],
                                              grad_out=[other])[0], want)
    assert not other.any()
