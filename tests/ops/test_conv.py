"""Convolution and Deconvolution (ops/conv.py) against naive loop references, plus shape rules
and the wide-grid im2col path."""
import numpy as np
import pytest

from harness import (case_tests, check_forward, check_gradient, check_symbolic, OpCase,
                     parametrize_cases)
from symgraph.base import MXNetError
from symgraph.opdef import get_op, ShapeError
from symgraph.ops import _conv_impl as impl


def _fill(v, nd, default):
    return tuple(v) if v else (default,) * nd


def conv_ref(x, w, b=None, stride=(), pad=(), dilate=(), groups=1):
    """Direct cross-correlation: a loop over output positions and kernel offsets."""
    nd = x.ndim - 2
    stride, pad, dilate = _fill(stride, nd, 1), _fill(pad, nd, 0), _fill(dilate, nd, 1)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    f, cg = w.shape[:2]
    fg = f // groups
    kern = w.shape[2:]
    out = [(xp.shape[2 + i] - dilate[i] * (kern[i] - 1) - 1) // stride[i] + 1
           for i in range(nd)]
    y = np.zeros((x.shape[0], f) + tuple(out), dtype=np.float64)
    for o in np.ndindex(*out):
        for k in np.ndindex(*kern):
            pos = tuple(o[i] * stride[i] + k[i] * dilate[i] for i in range(nd))
            v = xp[(slice(None), slice(None)) + pos].astype(np.float64)
            for g in range(groups):
                wk = w[(slice(g * fg, (g + 1) * fg), slice(None)) + k]
                y[(slice(None), slice(g * fg, (g + 1) * fg)) + o] += \
                    v[:, g * cg:(g + 1) * cg] @ wk.T
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y.astype(x.dtype)


def deconv_ref(x, w, b=None, kernel=None, stride=(), pad=(), dilate=(), adj=(),
               target_shape=(), groups=1):
    """Direct transposed convolution: every input pixel scatters its weighted kernel."""
    nd = x.ndim - 2
    stride, dilate = _fill(stride, nd, 1), _fill(dilate, nd, 1)
    pad, adj = _fill(pad, nd, 0), _fill(adj, nd, 0)
    c, fg = w.shape[:2]
    cg = c // groups
    kern = w.shape[2:]
    full = [stride[i] * (x.shape[2 + i] - 1) + dilate[i] * (kern[i] - 1) + 1
            for i in range(nd)]
    if target_shape and any(target_shape):
        tot = [full[i] - target_shape[i] for i in range(nd)]
        pad = tuple((t + 1) // 2 for t in tot)
        adj = tuple(t % 2 for t in tot)
    buf = np.zeros((x.shape[0], fg * groups) + tuple(f + a for f, a in zip(full, adj)))
    for i in np.ndindex(*x.shape[2:]):
        for k in np.ndindex(*kern):
            pos = tuple(i[d] * stride[d] + k[d] * dilate[d] for d in range(nd))
            for g in range(groups):
                xv = x[(slice(None), slice(g * cg, (g + 1) * cg)) + i].astype(np.float64)
                wk = w[(slice(g * cg, (g + 1) * cg), slice(None)) + k]
                buf[(slice(None), slice(g * fg, (g + 1) * fg)) + pos] += xv @ wk
    crop = tuple(slice(p, buf.shape[2 + d] - p) for d, p in enumerate(pad))
    y = buf[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return y.astype(x.dtype)


def _conv_case(attrs, dshape, **kw):
    nd = len(attrs['kernel'])
    g = attrs.get('num_group', 1)
    f = attrs['num_filter']
    wshape = (f, dshape[1] // g) + tuple(attrs['kernel'])
    shapes = [dshape, wshape] + ([] if attrs.get('no_bias') else [(f,)])
    assert len(dshape) == nd + 2

    def ref(x, w, b=None):
        return conv_ref(x, w, b, attrs.get('stride'), attrs.get('pad'), attrs.get('dilate'), g)
    return OpCase('Convolution', attrs, shapes, ref=ref, rtol=1e-4, atol=1e-5, **kw)


def _deconv_case(attrs, dshape, **kw):
    g = attrs.get('num_group', 1)
    f = attrs['num_filter']
    wshape = (dshape[1], f // g) + tuple(attrs['kernel'])
    has_bias = attrs.get('no_bias') is False
    shapes = [dshape, wshape] + ([(f,)] if has_bias else [])

    def ref(x, w, b=None):
        return deconv_ref(x, w, b, attrs['kernel'], attrs.get('stride'), attrs.get('pad'),
                          attrs.get('dilate'), attrs.get('adj'), attrs.get('target_shape'), g)
    return OpCase('Deconvolution', attrs, shapes, ref=ref, rtol=1e-4, atol=1e-5, **kw)


CASES = [
    _conv_case(dict(kernel=(3, 3), num_filter=4), (2, 3, 5, 4)),
    _conv_case(dict(kernel=(2, 3), num_filter=3, stride=(2, 1), pad=(2, 1)), (2, 2, 5, 6)),
    # dilation with stride, padding larger than half the kernel
    _conv_case(dict(kernel=(2, 3), num_filter=2, stride=(2, 3), dilate=(2, 2), pad=(3, 2)),
               (1, 2, 6, 7)),
    _conv_case(dict(kernel=(3, 3), num_filter=4, num_group=2, stride=(2, 2), pad=(1, 0)),
               (2, 4, 5, 6)),
    # depthwise, with and without a channel multiplier
    _conv_case(dict(kernel=(3, 3), num_filter=3, num_group=3, pad=(1, 1)), (2, 3, 4, 5)),
    _conv_case(dict(kernel=(3, 2), num_filter=6, num_group=3, pad=(1, 1), no_bias=True),
               (1, 3, 4, 5)),
    _conv_case(dict(kernel=(1, 1), num_filter=3, stride=(2, 2), no_bias=True), (2, 4, 5, 3)),
    _conv_case(dict(kernel=(1, 1), num_filter=2, pad=(1, 2)), (1, 3, 2, 3)),
    # unit stride but more output channels than twice the input: the col2im branch
    _conv_case(dict(kernel=(3, 3), num_filter=7, pad=(1, 1)), (1, 3, 4, 4)),
    # 1-D
    _conv_case(dict(kernel=(3,), num_filter=4, stride=(2,), pad=(3,), dilate=(2,)), (2, 3, 9)),
    _conv_case(dict(kernel=(4,), num_filter=2, num_group=2), (3, 2, 7)),
    # 3-D
    _conv_case(dict(kernel=(2, 2, 3), num_filter=2, stride=(1, 2, 1), pad=(1, 0, 1)),
               (1, 2, 3, 4, 5)),
    _deconv_case(dict(kernel=(3, 3), num_filter=3), (2, 2, 3, 4)),
    _deconv_case(dict(kernel=(3, 2), num_filter=4, stride=(2, 3), pad=(1, 1), adj=(1, 2),
                      no_bias=False), (2, 3, 3, 4)),
    _deconv_case(dict(kernel=(3, 3), num_filter=4, num_group=2, stride=(2, 2), dilate=(2, 1),
                      target_shape=(10, 8)), (1, 2, 4, 4)),
    _deconv_case(dict(kernel=(3, 3), num_filter=2, stride=(2, 2), target_shape=(6, 7),
                      no_bias=False), (1, 3, 3, 3)),
    _deconv_case(dict(kernel=(3, 3), num_filter=2, pad=(2, 0), dilate=(1, 2)), (1, 3, 5, 4)),
    _deconv_case(dict(kernel=(4,), num_filter=2, stride=(3,), pad=(1,), no_bias=False),
                 (2, 3, 5)),
    _deconv_case(dict(kernel=(2, 2, 2), num_filter=2, stride=(2, 1, 2), pad=(0, 1, 1)),
                 (1, 2, 2, 3, 3)),
]


test_forward, test_gradient = case_tests(CASES)


def test_convolution_arguments_and_shapes():
    op = get_op('Convolution')(kernel=(3, 3), num_filter=4, num_group=2)
    assert op.list_arguments() == ['data', 'weight', 'bias']
    args, outs, aux = op.infer_shape([(1, 2, 7, 6), None, None])
    assert args == [(1, 2, 7, 6), (4, 1, 3, 3), (4,)] and outs == [(1, 4, 5, 4)]
    # unknown dimensions stay unknown (0), as in MXNet's infer_shape_partial
    args, outs, _ = op.infer_shape([(1, 0, 7, 6), None, None])
    assert args[1] == (4, 0, 3, 3) and outs == [(1, 4, 5, 4)]
    assert op.infer_shape([(1, 2, 0, 6), None, None])[1] == [(1, 4, 0, 4)]
    assert op.infer_shape([None, None, None])[1] == [None]
    no_bias = get_op('Convolution')(kernel=(3,), num_filter=2, no_bias=True)
    assert no_bias.list_arguments() == ['data', 'weight']


@pytest.mark.parametrize('shapes', [
    [(1, 3, 7, 6), None, None],             # channels not divisible by num_group
    [(1, 2, 2, 6), None, None],             # kernel larger than the padded input
    [(1, 2, 7), None, None],                # wrong rank
    [(1, 2, 7, 6), (4, 2, 3, 3), None],     # weight disagrees with data
    [(1, 2, 7, 6), None, (3,)],             # bias disagrees with num_filter
])
def test_convolution_shape_errors(shapes):
    op = get_op('Convolution')(kernel=(3, 3), num_filter=4, num_group=2)
    with pytest.raises(ShapeError):
        op.infer_shape(shapes)


def test_convolution_bad_params():
    with pytest.raises(MXNetError):
        get_op('Convolution')(kernel=(3, 3), num_filter=3, num_group=2)
    with pytest.raises(MXNetError):
        get_op('Convolution')(kernel=(3, 3), num_filter=3, stride=(1,))
    with pytest.raises(MXNetError):
        get_op('Convolution')(kernel=(3, 3), num_filter=3, layout='NDHWC')
    with pytest.raises(MXNetError):
        get_op('Deconvolution')(kernel=(3, 3), num_filter=3, layout='NHWC')
    op = get_op('Convolution')(kernel='(3, 3)', num_filter='3', workspace='512',
                               cudnn_tune='fastest', cudnn_off='True', layout='NCHW')
    assert op.kernel == (3, 3) and op.num_filter == 3


def test_deconvolution_defaults_and_shapes():
    op = get_op('Deconvolution')(kernel=(3, 3), num_filter=4)
    assert op.no_bias is True and op.list_arguments() == ['data', 'weight']
    args, outs, _ = op.infer_shape([(2, 3, 4, 5), None])
    assert args[1] == (3, 4, 3, 3) and outs == [(2, 4, 6, 7)]
    op = get_op('Deconvolution')(kernel=(3, 3), num_filter=3, stride=(2, 2),
                                 target_shape=(6, 7), no_bias=False)
    args, outs, _ = op.infer_shape([(1, 2, 3, 3), None, None])
    assert args == [(1, 2, 3, 3), (2, 3, 3, 3), (3,)] and outs == [(1, 3, 6, 7)]
    with pytest.raises(ShapeError):      # target larger than the kernel can reach
        op.infer_shape([(1, 2, 2, 2), None, None])
    bad_adj = get_op('Deconvolution')(kernel=(3, 3), num_filter=2, adj=(1, 0))
    with pytest.raises(ShapeError):      # adj must be smaller than stride
        bad_adj.infer_shape([(1, 2, 3, 3), None])


def test_transposed_paths_agree():
    """The unit-stride backward (a convolution of dy) equals the col2im backward."""
    rng = np.random.RandomState(3)
    x = rng.rand(2, 4, 6, 5)
    w = rng.rand(4, 2, 3, 3)
    dy = rng.rand(2, 4, 4, 5)
    args = (dy, w, x.shape, (1, 1), (0, 1), (1, 1), 2)
    fast = impl.conv_backward_data(np, *args)
    old = impl._TRANSPOSED_BWD
    try:
        impl._TRANSPOSED_BWD = False
        slow = impl.conv_backward_data(np, *args)
    finally:
        impl._TRANSPOSED_BWD = old
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)


# --- the wide-grid im2col of unit-stride convolutions, forced on for every conv case ---------
# By default the wide path is taken only when its extra columns cost little (large maps),
# which the small test shapes never reach; here every Convolution/Deconvolution case runs
# through it, forward, numeric gradients and the executor.
WIDE_CASES = [c for c in CASES if c.op in ('Convolution', 'Deconvolution')]


@pytest.fixture
def wide_everywhere(monkeypatch):
    monkeypatch.setattr(impl, '_WIDE_MAX_RATIO', 1e9)


@pytest.mark.usefixtures('wide_everywhere')
@parametrize_cases(WIDE_CASES)
def test_forward_wide(case):
    check_forward(case)


@pytest.mark.usefixtures('wide_everywhere')
@parametrize_cases(WIDE_CASES)
def test_gradient_wide(case):
    check_gradient(case)


@pytest.mark.usefixtures('wide_everywhere')
@parametrize_cases(WIDE_CASES)
def test_symbolic_wide(case):
    check_symbolic(case)


@pytest.mark.usefixtures('wide_everywhere')
def test_the_wide_path_is_taken(monkeypatch):
    calls = []
    real = impl._wide_cols
    monkeypatch.setattr(impl, '_wide_cols', lambda *a, **k: calls.append(1) or real(*a, **k))
    check_forward(next(c for c in WIDE_CASES if c.op == 'Convolution'))
    assert calls, 'the wide im2col was not used'
