"""Every Convolution / Deconvolution OpCase of test_conv.py through oneDNN (float32).

For each case: the output shape equals the inferred one, the forward matches the loop
reference, and the gradients of data, weight and bias match the NumPy path's in float64;
each of the three oneDNN calls is counted, so a silent fallback to NumPy fails the test.
The same through ``simple_bind`` for one network, and with the backend forced off; results
computed into offered arrays (``writes_into``) are those arrays, bit-identical to the others.
"""
import numpy as np
import pytest

from harness import parametrize_cases
from test_conv import CASES
from symgraph.backend import onednn
from symgraph.opdef import cpu_backend

import symgraph as mx


@pytest.fixture(params=['default', 'blocked'])
def backend(onednn_backend, monkeypatch, request):
    # 'blocked': data with few channels goes in oneDNN's blocked layout too (by default it
    # stays plain below Backend.PLAIN_DATA_BELOW channels per group), so that both
    # layouts run every case (the backend is fresh: no primitive is cached yet)
    if request.param == 'blocked':
        from symgraph.backend.onednn.conv import Backend
        monkeypatch.setattr(Backend, 'PLAIN_DATA_BELOW', 0)
    yield onednn_backend


@pytest.fixture
def numpy_only(monkeypatch):
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    onednn.reset()
    assert cpu_backend() is None
    yield
    monkeypatch.delenv('SYMGRAPH_ONEDNN')
    onednn.reset()


def _run(case, dtype, seed=0):
    op = case.make_op()
    inputs = case.make_inputs(dtype)
    n = len(op.list_arguments())
    outs = op.forward(np, inputs[:n], [], True)
    dy = np.random.RandomState(seed + 1).uniform(-1, 1, outs[0].shape).astype(dtype)
    grads = op.backward(np, [dy], inputs[:n], outs, [], [True] * n)
    return op, inputs, outs, grads


@parametrize_cases(CASES)
def test_case_through_onednn(case, backend):
    before = dict(backend.calls)
    op, inputs, outs, grads = _run(case, 'float32')
    used = {k: backend.calls.get(k, 0) - before.get(k, 0) for k in
            ('conv_forward', 'conv_backward_data', 'conv_backward_weights')}
    assert used == {'conv_forward': 1, 'conv_backward_data': 1,
                    'conv_backward_weights': 1}, used
    _, out_shapes, _ = op.infer_shape([a.shape for a in inputs])
    assert outs[0].shape == tuple(out_shapes[0]) and outs[0].dtype == np.float32
    np.testing.assert_allclose(outs[0], case.ref(*inputs), rtol=case.rtol, atol=case.atol)
    # gradients against the NumPy path in float64 on the same values
    _, _, _, ref_grads = _run(case, 'float64')
    assert backend.calls['conv_forward'] == before.get('conv_forward', 0) + 1
    for i, (g, r) in enumerate(zip(grads, ref_grads)):
        assert g.shape == inputs[i].shape and g.dtype == np.float32
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=2e-5, err_msg='input %d' % i)


@parametrize_cases(CASES[:3] + CASES[-3:])
def test_case_with_backend_forced_off(case, numpy_only):
    _, inputs, outs, grads = _run(case, 'float32')
    np.testing.assert_allclose(outs[0], case.ref(*inputs), rtol=case.rtol, atol=case.atol)
    _, _, _, ref_grads = _run(case, 'float64')
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=2e-5)


def _run_into(case, dtype, seed=0):
    """:func:`_run` with every result offered an array (``out=``/``grad_out=``, as the
    executor's buffers are), filled with NaN so that a partial write shows."""
    op = case.make_op()
    inputs = case.make_inputs(dtype)
    n = len(op.list_arguments())
    _, out_shapes, _ = op.infer_shape([a.shape for a in inputs])
    out = [np.full(out_shapes[0], np.nan, dtype)]
    outs = op.forward(np, inputs[:n], [], True, out=out)
    dy = np.random.RandomState(seed + 1).uniform(-1, 1, outs[0].shape).astype(dtype)
    grad_out = [np.full(a.shape, np.nan, dtype) for a in inputs[:n]]
    grads = op.backward(np, [dy], inputs[:n], outs, [], [True] * n, grad_out=grad_out)
    return outs, grads, out, grad_out


@pytest.mark.parametrize('path', ['onednn', 'numpy-float32', 'numpy-float64'])
@parametrize_cases(CASES)
def test_results_computed_into_offered_arrays_are_bit_identical(case, path, monkeypatch):
    """writes_into: the output and the data and weight gradients are the arrays offered
    (no copy by the executor), with exactly the values computed without them."""
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '1' if path == 'onednn' else '0')
    onednn.reset()
    try:
        be = cpu_backend()
        if path == 'onednn' and be is None:
            pytest.skip('oneDNN is not available on this machine')
        dtype = 'float64' if path.endswith('64') else 'float32'
        before = dict(be.calls) if be is not None else {}
        outs, grads, out, grad_out = _run_into(case, dtype)
        if be is not None:
            assert all(be.calls.get(k, 0) == before.get(k, 0) + 1 for k in
                       ('conv_forward', 'conv_backward_data', 'conv_backward_weights'))
        _, _, _, ref_grads = _run(case, dtype)
        ref_outs = _run(case, dtype)[2]
    finally:
        onednn.reset()
    assert outs[0] is out[0]
    np.testing.assert_array_equal(outs[0], ref_outs[0])
    for i in (0, 1):
        assert grads[i] is grad_out[i], 'input %d' % i
    for g, r in zip(grads, ref_grads):
        np.testing.assert_array_equal(g, r)


def _net_grads():
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c1')
    h = mx.sym.Activation(h, act_type='relu')
    h = mx.sym.Convolution(h, kernel=(3, 3), stride=(2, 2), num_filter=4, num_group=2,
                           name='c2')
    h = mx.sym.Deconvolution(h, kernel=(2, 2), stride=(2, 2), num_filter=3, name='d1')
    out = mx.sym.MakeLoss(mx.sym.sum(h * h))
    exe = out.simple_bind(mx.cpu(), data=(2, 3, 9, 9))
    rng = np.random.RandomState(3)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-0.5, 0.5, arr.shape)
    exe.forward(is_train=True)
    exe.backward()
    return exe.outputs[0].asnumpy(), {k: v.asnumpy() for k, v in exe.grad_dict.items()}


def test_simple_bind_with_and_without_onednn(monkeypatch):
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    onednn.reset()
    ref_out, ref_grads = _net_grads()
    monkeypatch.delenv('SYMGRAPH_ONEDNN')
    onednn.reset()
    be = cpu_backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    out, grads = _net_grads()
    assert be.calls.get('conv_forward', 0) >= 3 and be.calls.get('conv_backward_weights') >= 3
    np.testing.assert_allclose(out, ref_out, rtol=1e-4)
    for k in ref_grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=1e-4, atol=1e-5, err_msg=k)
    onednn.reset()


# ---------------------------------------------------------------- channels-last activations
def _channels_last(a):
    """A copy of ``a`` (N, C, *S) lying channels last (a transposed view)."""
    nd = a.ndim
    lay = np.ascontiguousarray(np.moveaxis(a, 1, -1))
    return lay.transpose((0, nd - 1) + tuple(range(1, nd - 1)))


def _ref_fused(x, w, b, stride, pad, residual=None, relu=True):
    from symgraph.ops._conv_impl import conv_forward
    y = conv_forward(np, x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                     stride, pad, (1, 1), 1)
    if residual is not None:
        y = y + residual
    return np.maximum(y, 0) if relu else y


@pytest.mark.parametrize('xlay,rlay,olay', [
    ('plain', 'plain', 'channels_last'), ('channels_last', None, 'channels_last'),
    ('channels_last', 'channels_last', 'channels_last'), ('channels_last', 'plain', None),
    ('channels_last', 'channels_last', None), ('plain', 'channels_last', 'channels_last')])
@pytest.mark.parametrize('channels,stride', [(3, 1), (16, 1), (16, 2)])
def test_fused_convolution_reads_and_writes_channels_last(xlay, rlay, olay, channels, stride,
                                                          onednn_backend):
    """conv_forward_fused takes data and residual in either layout as they lie and writes
    the layout asked for; the values are the C-order computation's. Few input channels
    with a channels-last output is reordered to channels last rather than run by oneDNN's
    reference kernel (hundreds of times slower)."""
    from symgraph.backend.onednn import _lib
    from symgraph.backend.onednn._core import layout_of
    be = onednn_backend
    rng = np.random.RandomState(channels + stride)
    x = rng.uniform(-1, 1, (2, channels, 9, 10)).astype(np.float32)
    w = rng.uniform(-0.5, 0.5, (8, channels, 3, 3)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, 8).astype(np.float32)
    yshape = (2, 8) + tuple((s + 2 - 3) // stride + 1 for s in (9, 10))
    res = rng.uniform(-1, 1, yshape).astype(np.float32) if rlay else None
    post = (('sum',),) if rlay else ()
    post += (('eltwise', 'relu', 0.0),)
    xin = _channels_last(x) if xlay == 'channels_last' else x
    rin = None if res is None else _channels_last(res) if rlay == 'channels_last' else res
    before = be.calls.get('conv_forward_fused', 0)
    y = be.conv_forward_fused(xin, w, b, (stride, stride), (1, 1), (1, 1), 1, yshape, post,
                              rin, out_layout=olay if olay else None)
    assert be.calls['conv_forward_fused'] == before + 1
    assert layout_of(y) == (olay or None)
    if olay is None:
        assert y.flags.c_contiguous
    np.testing.assert_allclose(y, _ref_fused(x, w, b, (stride, stride), (1, 1), res),
                               rtol=1e-5, atol=1e-5)
    prims = [p for k, p in be.cached_primitives().items() if k[0] == 'conv_forward_fused'
             and k[1] == xin.shape and p is not None]
    assert prims and all(not _lib.impl_name(be.lib, p.pd).startswith('ref') for p in prims)


def test_fused_convolution_sum_in_place_and_into_offered_buffers(onednn_backend):
    """Offered a channels-last buffer that is the residual's own storage (the storage plan's
    in-place sum), the output goes there and the residual is added where it lies; an
    offered buffer of the wrong layout is not used; one that overlaps the residual
    otherwise is not written."""
    be = onednn_backend
    rng = np.random.RandomState(3)
    x = _channels_last(rng.uniform(-1, 1, (2, 16, 8, 8)).astype(np.float32))
    w = rng.uniform(-0.3, 0.3, (16, 16, 3, 3)).astype(np.float32)
    b = np.zeros(16, np.float32)
    res = _channels_last(rng.uniform(-1, 1, (2, 16, 8, 8)).astype(np.float32))
    want = _ref_fused(np.array(x), w, b, (1, 1), (1, 1), np.array(res))
    post = (('sum',), ('eltwise', 'relu', 0.0))
    buf = res
    keep = np.array(res)
    y = be.conv_forward_fused(x, w, b, (1, 1), (1, 1), (1, 1), 1, res.shape, post, buf,
                              out_layout='channels_last', out=buf)
    assert y is buf
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    # a C-order buffer is no channels-last destination
    res2 = _channels_last(keep)
    plain = np.empty(res.shape, np.float32)
    y2 = be.conv_forward_fused(x, w, b, (1, 1), (1, 1), (1, 1), 1, res.shape, post, res2,
                               out_layout='channels_last', out=plain)
    assert y2 is not plain
    np.testing.assert_allclose(y2, want, rtol=1e-5, atol=1e-5)
    # a buffer overlapping the residual in another way is left alone
    base = np.zeros(2 * res.size + 16, np.float32)
    res3 = base[:res.size].reshape(res.shape)
    res3[...] = keep
    over = base[8:8 + res.size].reshape(res.shape)
    y3 = be.conv_forward_fused(x, w, b, (1, 1), (1, 1), (1, 1), 1, res.shape, post, res3,
                               out=over)
    assert y3 is not over
    np.testing.assert_array_equal(res3, keep)
    np.testing.assert_allclose(y3, want, rtol=1e-5, atol=1e-5)


def test_convolution_forward_reads_channels_last_data(onednn_backend):
    """The training/plain forward takes channels-last data as it lies (no reorder of its
    own) and writes C order."""
    be = onednn_backend
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (2, 16, 7, 7)).astype(np.float32)
    w = rng.uniform(-0.3, 0.3, (8, 16, 3, 3)).astype(np.float32)
    b = rng.uniform(-0.3, 0.3, 8).astype(np.float32)
    y = be.conv_forward(_channels_last(x), w, b, (1, 1), (1, 1), (1, 1), 1, (2, 8, 7, 7),
                        is_train=False)
    assert y.flags.c_contiguous
    np.testing.assert_allclose(y, _ref_fused(x, w, b, (1, 1), (1, 1), relu=False),
                               rtol=1e-5, atol=1e-5)
    prim = [p for k, p in be.cached_primitives().items()
            if k[0] == 'conv_forward' and k[-2] == 'channels_last' and k[-1] is None][0]
    assert len(prim.before) == 1    # the weights' reorder only: the data lies as it is


@pytest.mark.parametrize('stride', [1, 2])
def test_training_convolution_runs_channels_last_end_to_end(onednn_backend, stride):
    """A training plan's channels-last buffers: forward writes its output into one as it
    lies, backward-data reads dy and writes dx so, backward-weights reads x and dy so --
    no reorder but the weights', and the values of the C-order calls."""
    be = onednn_backend
    rng = np.random.RandomState(5)
    x = rng.uniform(-1, 1, (2, 16, 9, 9)).astype(np.float32)
    w = rng.uniform(-0.3, 0.3, (8, 16, 3, 3)).astype(np.float32)
    o = (9 + 2 - 3) // stride + 1
    yshape = (2, 8, o, o)
    dy = rng.uniform(-1, 1, yshape).astype(np.float32)
    geo = ((stride, stride), (1, 1), (1, 1), 1)
    want_y = be.conv_forward(x, w, None, *geo, yshape)
    want_dx = be.conv_backward_data(dy, w, x.shape, *geo)
    want_dw = be.conv_backward_weights(x, dy, w.shape, *geo)
    xl, dyl = _channels_last(x), _channels_last(dy)
    yl, dxl = _channels_last(np.zeros(yshape, np.float32)), _channels_last(np.zeros_like(x))
    assert be.conv_forward(xl, w, None, *geo, yshape, out=yl) is yl
    assert be.conv_backward_data(dyl, w, x.shape, *geo, out=dxl) is dxl
    dw = be.conv_backward_weights(xl, dyl, w.shape, *geo)
    np.testing.assert_allclose(yl, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dxl, want_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=1e-4)
    cached = be.cached_primitives()
    seen = set()
    for k, p in cached.items():
        if k[0] == 'conv_forward' and k[-2:] == ('channels_last', 'channels_last') or \
                k[0] == 'conv_backward_data' and k[-2:] == ('channels_last',) * 2 or \
                k[0] == 'conv_backward_weights' and k[-2:] == ('channels_last',) * 2:
            # only the weights (or the weight gradient) are reordered
            assert len(p.before) + len(p.after) == 1, k
            seen.add(k[0])
    assert len(seen) == 3
