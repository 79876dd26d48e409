"""Channels-last Convolution (layouts NWC, NHWC, NDHWC) and Pooling.

Values and gradients against MXNet 1.9.1 (tests/golden/make_channels_last.py: MXNet's
channels-first arithmetic on the moved axes for convolution, which its CPU build runs
channels first only; MXNet's own channels-last pooling), through ``mx.nd`` with autograd
and through a bound executor, on the oneDNN backend and on the NumPy code; the operator
harness' float64 numeric gradients; shape inference against MXNet's; the inference and
training passes (fusion, channels-last buffers) leave these layouts alone.
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, case_tests
from symgraph.backend import onednn
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, cpu_backend, get_op

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    'golden', 'data', 'channels_last')
with open(DATA + '.json') as _f:
    META = json.load(_f)
GOLD = np.load(DATA + '.npz')


@pytest.fixture(params=['onednn', 'numpy'])
def path(request, monkeypatch):
    """The CPU backend (views of channels-last memory taken as they lie) or the NumPy code
    (strided views)."""
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '1' if request.param == 'onednn' else '0')
    onednn.reset()
    if request.param == 'onednn' and cpu_backend() is None:
        pytest.skip('oneDNN is not available on this machine')
    yield request.param
    onednn.reset()


def _params(case):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in case['params'].items()}


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ convolution
@pytest.mark.parametrize('case', META['conv'], ids=[c['name'] for c in META['conv']])
def test_convolution_matches_mxnet_through_autograd(case, path):
    pre = 'conv_%s_' % case['name']
    params = _params(case)
    args = [mx.nd.array(GOLD[pre + k]) for k in ('x', 'w', 'b') if pre + k in GOLD]
    for a in args:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(*args, layout=case['layout'], **params)
    y.backward(mx.nd.array(GOLD[pre + 'dy']))
    _close(y.asnumpy(), GOLD[pre + 'y'])
    for a, k in zip(args, ('dx', 'dw', 'db')):
        _close(a.grad.asnumpy(), GOLD[pre + k])


@pytest.mark.parametrize('case', META['conv'], ids=[c['name'] for c in META['conv']])
def test_convolution_matches_mxnet_in_an_executor(case, path):
    pre = 'conv_%s_' % case['name']
    sym = mx.sym.Convolution(mx.sym.var('data'), name='conv', layout=case['layout'],
                             **_params(case))
    exe = sym.simple_bind(mx.cpu(), data=tuple(case['data']))
    names = {'data': 'x', 'conv_weight': 'w', 'conv_bias': 'b'}
    for name in sym.list_arguments():
        exe.arg_dict[name][:] = GOLD[pre + names[name]]
    y = exe.forward(is_train=True)[0]
    _close(y.asnumpy(), GOLD[pre + 'y'])
    exe.backward(mx.nd.array(GOLD[pre + 'dy']))
    for name in sym.list_arguments():
        _close(exe.grad_dict[name].asnumpy(), GOLD[pre + 'd' + names[name]])
    # and an inference forward (the inference passes)
    _close(exe.forward(is_train=False)[0].asnumpy(), GOLD[pre + 'y'])


@pytest.mark.parametrize('case', META['conv'], ids=[c['name'] for c in META['conv']])
def test_convolution_shapes_are_mxnets(case):
    sym = mx.sym.Convolution(mx.sym.var('data'), name='conv', layout=case['layout'],
                             **_params(case))
    args, outs, _ = sym.infer_shape(data=tuple(case['data']))
    pre = 'conv_%s_' % case['name']
    assert outs[0] == GOLD[pre + 'y'].shape and args[1] == GOLD[pre + 'w'].shape
    want = case['mxnet_shapes']
    if 'refused' in want:
        # MXNet 1.9.1 has no NWC Convolution (docs/differences.md): symgraph's shapes are
        # the channels-first ones moved, as for NHWC and NDHWC
        assert case['layout'] == 'NWC' and 'NWC' in want['refused']
    else:
        assert [list(a) for a in args] == want['args'] and list(outs[0]) == want['out']


def test_partial_shapes_fill_channels_last():
    # unknown input channels stay unknown in the weight's last axis; a known output fills
    # the batch and the unit-stride spatial sizes, as for channels first
    op = get_op('Convolution')(kernel=(3, 3), num_filter=4, layout='NHWC')
    args, outs, _ = op.infer_shape([(2, 7, 6, 0), None, None])
    assert args[1] == (4, 3, 3, 0) and outs == [(2, 5, 4, 4)]
    args, outs, _ = op.infer_shape([(0, 0, 6, 3), None, None], [(2, 5, 4, 4)])
    assert args[0] == (2, 7, 6, 3) and args[1] == (4, 3, 3, 3)
    args, _, _ = op.infer_shape([None, (4, 3, 3, 5), None])
    assert args[0] is None


def _cl_ref(attrs):
    """A NumPy channels-last convolution: windows of the padded data against the weight."""
    nd = len(attrs['kernel'])
    st = attrs.get('stride') or (1,) * nd
    pd = attrs.get('pad') or (0,) * nd
    dl = attrs.get('dilate') or (1,) * nd
    g = attrs.get('num_group', 1)

    def ref(x, w, b=None):
        xp = np.pad(x, [(0, 0)] + [(p, p) for p in pd] + [(0, 0)])
        out = [(xp.shape[1 + i] - dl[i] * (attrs['kernel'][i] - 1) - 1) // st[i] + 1
               for i in range(nd)]
        f, cg = w.shape[0], w.shape[-1]
        y = np.zeros((x.shape[0],) + tuple(out) + (f,))
        for o in np.ndindex(*out):
            for k in np.ndindex(*attrs['kernel']):
                pos = tuple(o[i] * st[i] + k[i] * dl[i] for i in range(nd))
                v = xp[(slice(None),) + pos]                      # (N, C)
                for j in range(g):
                    fs = slice(j * f // g, (j + 1) * f // g)
                    y[(slice(None),) + o + (fs,)] += \
                        v[:, j * cg:(j + 1) * cg] @ w[(fs,) + k].T
        if b is not None:
            y += b
        return y.astype(x.dtype)
    return ref


def _cl_case(attrs, dshape):
    g = attrs.get('num_group', 1)
    f = attrs['num_filter']
    shapes = [dshape, (f,) + tuple(attrs['kernel']) + (dshape[-1] // g,)]
    if not attrs.get('no_bias'):
        shapes.append((f,))
    return OpCase('Convolution', attrs, shapes, ref=_cl_ref(attrs), rtol=1e-4, atol=1e-5)


CASES = [
    _cl_case(dict(kernel=(3,), num_filter=3, stride=(2,), pad=(1,), layout='NWC'), (2, 7, 2)),
    _cl_case(dict(kernel=(2, 3), num_filter=4, num_group=2, pad=(1, 0), dilate=(1, 2),
                  layout='NHWC'), (2, 4, 6, 2)),
    _cl_case(dict(kernel=(3, 2), num_filter=2, stride=(2, 1), no_bias=True, layout='NHWC'),
             (1, 5, 4, 3)),
    _cl_case(dict(kernel=(2, 2, 2), num_filter=2, stride=(1, 2, 1), pad=(0, 1, 0),
                  layout='NDHWC'), (1, 3, 3, 4, 2)),
]

# forward against the NumPy reference in float32 and float64, float64 numeric gradients,
# and the symbol + simple_bind + JSON round trip (the operator harness)
test_harness_forward, test_harness_gradient = case_tests(CASES)


@pytest.mark.parametrize('make, shapes, match', [
    (dict(kernel=(3, 3), layout='NHWC'), [(2, 6, 7), None, None], r'N, H, W, C'),
    (dict(kernel=(3, 3), layout='NHWC', num_group=2), [(2, 6, 7, 3), None, None],
     r'\(2, 6, 7, 3\).*num_group'),
    (dict(kernel=(3, 3), layout='NHWC'), [(2, 6, 7, 3), (4, 3, 3, 2), None],
     r'\(4, 3, 3, 2\) but \(4, 3, 3, 3\)'),
    (dict(kernel=(3, 3), layout='NHWC'), [(2, 2, 7, 3), None, None], r'\(2, 2, 7, 3\)'),
])
def test_shape_errors_name_the_channels_last_shapes(make, shapes, match):
    op = get_op('Convolution')(num_filter=4, **make)
    with pytest.raises(ShapeError, match=match):
        op.infer_shape(shapes)


@pytest.mark.parametrize('op, params, match', [
    ('Convolution', dict(kernel=(3, 3), layout='NWC'), 'NCHW or NHWC, got NWC'),
    ('Convolution', dict(kernel=(3,), layout='NDHWC'), 'NCW or NWC, got NDHWC'),
    ('Deconvolution', dict(kernel=(3, 3), layout='NHWC'), 'GPUs only'),
    ('Deconvolution', dict(kernel=(3,), layout='NWC'), 'GPUs only'),
])
def test_layouts_that_do_not_fit_are_refused(op, params, match):
    with pytest.raises(MXNetError, match=match):
        get_op(op)(num_filter=2, **params)


# ------------------------------------------------------------------ the passes
def _net(layout):
    """conv -> BatchNorm -> relu -> conv (+ the first conv's output: a residual sum) ->
    relu -> max pooling, channels last or first (the shapes the inference and training
    passes fuse and lay out channels last)."""
    last = layout == 'NHWC'
    axis = -1 if last else 1
    x = mx.sym.var('data')
    c1 = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=16, layout=layout,
                            name='c1')
    h = mx.sym.BatchNorm(c1, axis=axis, fix_gamma=False, name='bn')
    h = mx.sym.Activation(h, act_type='relu')
    c2 = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=16, layout=layout,
                            name='c2')
    h = mx.sym.Activation(c2 + c1, act_type='relu')
    return mx.sym.Pooling(h, kernel=(3, 3), stride=(2, 2), pool_type='max', layout=layout)


def _bound(rng, grad_req):
    """The network bound channels first and channels last, with the same values."""
    first = _net('NCHW').simple_bind(mx.cpu(), data=(4, 16, 16, 16), grad_req=grad_req)
    last = _net('NHWC').simple_bind(mx.cpu(), data=(4, 16, 16, 16), grad_req=grad_req)
    for name, arr in first.arg_dict.items():
        v = rng.uniform(-1, 1, arr.shape).astype(np.float32)
        arr[:] = v
        last.arg_dict[name][:] = np.moveaxis(v, 1, -1) if v.ndim == 4 else v
    for name, arr in first.aux_dict.items():
        v = rng.uniform(0.5, 1.5, arr.shape).astype(np.float32)
        arr[:] = v
        last.aux_dict[name][:] = v
    return first, last


def test_inference_passes_leave_channels_last_convolution_alone(path):
    # an executor without gradients runs the inference passes (BatchNorm folded, the sum
    # and the relus fused into a channels-first FusedConvolution, channels-last buffers):
    # a channels-last Convolution takes part in none, and gives the values of the same
    # network channels first
    first, last = _bound(np.random.RandomState(3), 'null')
    _close(last.forward(is_train=False)[0].asnumpy(),
           np.moveaxis(first.forward(is_train=False)[0].asnumpy(), 1, -1))
    assert 'fuse: 1 fused node(s)' in first.debug_str()     # the passes do run here
    assert 'fuse: 0 fused node(s)' in last.debug_str()


def test_training_plans_leave_channels_last_convolution_alone(path):
    # a training step (BatchNorm + relu fused, channels-last buffers and gradients)
    rng = np.random.RandomState(4)
    first, last = _bound(rng, 'write')
    yf = first.forward(is_train=True)[0]
    yl = last.forward(is_train=True)[0]
    _close(yl.asnumpy(), np.moveaxis(yf.asnumpy(), 1, -1))
    dy = rng.uniform(-1, 1, yf.shape).astype(np.float32)
    first.backward(mx.nd.array(dy))
    last.backward(mx.nd.array(np.moveaxis(dy, 1, -1)))
    for name, g in first.grad_dict.items():
        v = g.asnumpy()
        np.testing.assert_allclose(last.grad_dict[name].asnumpy(),
                                   np.moveaxis(v, 1, -1) if v.ndim == 4 else v,
                                   rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ pooling
@pytest.mark.parametrize('case', META['pool'], ids=[c['name'] for c in META['pool']])
def test_pooling_matches_mxnet(case, path):
    pre = 'pool_%s_' % case['name']
    x = mx.nd.array(GOLD[pre + 'x'])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(x, layout=case['layout'], **_params(case))
    y.backward(mx.nd.array(GOLD[pre + 'dy']))
    _close(y.asnumpy(), GOLD[pre + 'y'])
    _close(x.grad.asnumpy(), GOLD[pre + 'dx'])
    sym = mx.sym.Pooling(mx.sym.var('data'), layout=case['layout'], **_params(case))
    exe = sym.simple_bind(mx.cpu(), data=x.shape)
    exe.arg_dict['data'][:] = GOLD[pre + 'x']
    _close(exe.forward(is_train=True)[0].asnumpy(), GOLD[pre + 'y'])
    exe.backward(mx.nd.array(GOLD[pre + 'dy']))
    _close(exe.grad_dict['data'].asnumpy(), GOLD[pre + 'dx'])
