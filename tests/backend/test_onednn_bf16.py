"""oneDNN's bfloat16 kernels (symgraph/backend/onednn/bf16.py) and the operators' bfloat16
variants that reach them (ops/_bf16.py, through the ``instead`` rule for bfloat16 inputs):
values against float32 within bfloat16 rounding, layouts, the kernels oneDNN picks, and
the fallback (float32 and round) where a kernel declines."""
import numpy as np
import pytest

ml_dtypes = pytest.importorskip('ml_dtypes')

import symgraph as mx  # noqa: E402
from symgraph import opdef  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
pytestmark = pytest.mark.skipif(opdef.cpu_backend() is None, reason='oneDNN is not loaded')


@pytest.fixture
def be():
    """The backend as loaded for this test (conftest.py loads it afresh for each); the
    test is skipped where oneDNN has no native bfloat16 kernels (below AVX-512 BF16, or
    held below it by ONEDNN_MAX_CPU_ISA): bfloat16 operators then compute in float32 and
    round, which tests/ndarray/test_bfloat16.py covers."""
    from symgraph.backend.onednn import _lib
    backend = opdef.cpu_backend()
    if not _lib.has_bf16(_lib.effective_isa(backend.lib)):
        pytest.skip("oneDNN has no native bfloat16 kernels on this CPU's ISA")
    return backend


def bf(a):
    return np.asarray(a, np.float32).astype(BF16)


def f32(a):
    return np.asarray(a).astype(np.float32)


def close(got, want, steps=2):
    """``got`` (bfloat16) within ``steps`` bfloat16 rounding steps of float32's ``want``
    (relative to the largest value: accumulations round once at the end)."""
    assert got.dtype == BF16
    tol = steps * 2 ** -8 * max(1e-6, float(np.abs(want).max()))
    np.testing.assert_allclose(f32(got), want, rtol=0, atol=tol)


def conv_ref(be, x, w, b, stride, pad):
    return be.conv_forward(x, w, b, stride, pad, (1, 1), 1,
                           (x.shape[0], w.shape[0]) + tuple(
                               (s + 2 * p - k) // t + 1 for s, k, t, p in
                               zip(x.shape[2:], w.shape[2:], stride, pad)), is_train=False)


@pytest.mark.parametrize('c,stride,pad', [(3, (1, 1), (1, 1)), (16, (2, 2), (1, 1)),
                                          (16, (1, 1), (0, 0))])
def test_convolution_matches_float32(be, c, stride, pad):
    rng = np.random.RandomState(c)
    x = bf(rng.normal(size=(2, c, 9, 11)))
    w = bf(rng.normal(0, 0.3, size=(8, c, 3, 3)))
    b = rng.normal(size=8).astype(np.float32)
    want = conv_ref(be, f32(x), f32(w), b, stride, pad)
    got = be.conv_forward_bf16(x, w, b, stride, pad, (1, 1), 1, want.shape)
    close(got, want)
    # the relu post-op, and data lying channels last in and out
    xl = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    got = be.conv_forward_bf16(xl, w, b, stride, pad, (1, 1), 1, want.shape,
                               post_ops=(('eltwise', 'relu', 0.0),),
                               out_layout='channels_last')
    assert not got.flags.c_contiguous and np.moveaxis(got, 1, -1).flags.c_contiguous
    close(got, np.maximum(want, 0))
    # a residual summed by the primitive (channels last), then relu: into the residual's
    # own memory where it is offered as the output, else into a new array
    res = np.moveaxis(np.ascontiguousarray(np.moveaxis(
        bf(rng.normal(size=want.shape)), 1, -1)), -1, 1)
    ref = np.maximum(want + f32(res), 0)
    ops = (('sum',), ('eltwise', 'relu', 0.0))
    got = be.conv_forward_bf16(xl, w, b, stride, pad, (1, 1), 1, want.shape, post_ops=ops,
                               out_layout='channels_last', residual=res)
    assert got is not res
    close(got, ref, 3)
    got = be.conv_forward_bf16(xl, w, b, stride, pad, (1, 1), 1, want.shape, post_ops=ops,
                               out_layout='channels_last', residual=res, out=res)
    assert got is res
    close(got, ref, 3)
    # the sum needs the channels-last output
    assert be.conv_forward_bf16(x, w, b, stride, pad, (1, 1), 1, want.shape, post_ops=ops,
                                residual=res) is None


@pytest.mark.parametrize('wide', [False, True])
def test_convolution_widened_to_float32_kernels_matches(be, wide):
    """The bf16 convolution run by oneDNN's float32 kernel on its widened operands (the
    route bf16_conv_widens picks where the bf16 kernels are slower, as on AVX-512 BF16
    cores without AMX) and by the bf16 kernel: both within bfloat16 rounding of float32,
    within one rounding step of each other, with the relu post-op, the residual sum (in
    place and into a new array), bias float32 or bfloat16, C order and channels last; the
    kernel is the float32 one exactly when widened."""
    from symgraph.backend.onednn import _lib
    rng = np.random.RandomState(5)
    x = bf(rng.normal(size=(2, 16, 9, 11)))
    w = bf(rng.normal(0, 0.3, size=(32, 16, 3, 3)))
    b32 = rng.normal(size=32).astype(np.float32)
    want = conv_ref(be, f32(x), f32(w), b32, (1, 1), (1, 1))
    xl = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    relu = (('eltwise', 'relu', 0.0),)
    for b in (b32, bf(b32)):
        ref = want if b is b32 else conv_ref(be, f32(x), f32(w), f32(b), (1, 1), (1, 1))
        got = be.conv_forward_bf16(x, w, b, (1, 1), (1, 1), (1, 1), 1, ref.shape,
                                   wide=wide)
        assert got.flags.c_contiguous
        close(got, ref)
        got_cl = be.conv_forward_bf16(xl, w, b, (1, 1), (1, 1), (1, 1), 1, ref.shape,
                                      post_ops=relu, out_layout='channels_last', token=1,
                                      cache={}, wide=wide)
        assert np.moveaxis(got_cl, 1, -1).flags.c_contiguous
        close(got_cl, np.maximum(ref, 0))
        other = be.conv_forward_bf16(xl, w, b, (1, 1), (1, 1), (1, 1), 1, ref.shape,
                                     post_ops=relu, out_layout='channels_last',
                                     wide=not wide)
        np.testing.assert_allclose(f32(got_cl), f32(other), rtol=2 ** -7, atol=1e-6)
    res = np.moveaxis(np.ascontiguousarray(np.moveaxis(
        bf(rng.normal(size=want.shape)), 1, -1)), -1, 1)
    ref = np.maximum(want + f32(res), 0)
    ops = (('sum',), ('eltwise', 'relu', 0.0))
    for token in (None, 7):
        kw = dict(post_ops=ops, out_layout='channels_last', residual=res, token=token,
                  cache={}, wide=wide)
        got = be.conv_forward_bf16(xl, w, b32, (1, 1), (1, 1), (1, 1), 1, want.shape, **kw)
        assert got is not res
        close(got, ref, 3)
        mine = res.copy(order='K')     # (channels last, as res)
        kw['residual'] = mine
        got = be.conv_forward_bf16(xl, w, b32, (1, 1), (1, 1), (1, 1), 1, want.shape,
                                   out=mine, **kw)
        assert got is mine
        close(got, ref, 3)
        # replayed on the same arrays (an inference plan's second forward): the sum
        # starts again from the residual's values, which the caller writes afresh
        mine[...] = res
        got = be.conv_forward_bf16(xl, w, b32, (1, 1), (1, 1), (1, 1), 1, want.shape,
                                   out=mine, memo={}, **kw)
        close(got, ref, 3)
    names = {_lib.impl_name(be.lib, p.pd) for k, p in be._thread().cache.items()
             if p and k[0] == 'conv_forward_bf16' and k[-1] == wide}
    assert names and all(('bf16' in n) != wide and 'ref' not in n for n in names), names


def test_the_widening_choice_is_timed_once_and_can_be_set(be):
    """bf16_conv_widens times the two routes once per backend and keeps its answer; a
    caller's setting wins, and convolutions follow it."""
    from symgraph.backend.onednn import _lib
    assert be.bf16_conv_f32 is None
    first = be.bf16_conv_widens(BF16)
    assert isinstance(first, bool) and be.bf16_conv_f32 is first
    assert be.bf16_conv_widens(BF16) is first
    x, w = bf(np.ones((1, 16, 8, 8))), bf(np.full((16, 16, 3, 3), 0.5))
    for choice in (True, False):
        be.bf16_conv_f32 = choice
        y = be.conv_forward_bf16(x, w, None, (1, 1), (1, 1), (1, 1), 1, (1, 16, 8, 8))
        assert f32(y)[0, 0, 4, 4] == 72.0           # 16 * 9 * 0.5, exact in both
        prim = be._thread().cache[next(k for k in be._thread().cache
                                       if k[0] == 'conv_forward_bf16' and k[-1] == choice)]
        assert ('bf16' in _lib.impl_name(be.lib, prim.pd)) != choice


@pytest.mark.parametrize('word, wide', [('bf16', False), ('float32', True)])
def test_the_route_is_pinned_by_the_switch(be, monkeypatch, word, wide):
    """SYMGRAPH_BF16_CONV=bf16|float32 pins the route without timing it (for bit-for-bit
    runs across processes); a bad word is refused naming the variable."""
    monkeypatch.setattr(type(be), '_time_bf16_conv',
                        lambda self, dtype: pytest.fail('timed although pinned'))
    monkeypatch.setenv('SYMGRAPH_BF16_CONV', word)
    assert be.bf16_conv_widens(BF16) is wide and be.bf16_conv_f32 is wide
    be.bf16_conv_f32 = None
    monkeypatch.setenv('SYMGRAPH_BF16_CONV', 'fp32')
    with pytest.raises(ValueError, match='SYMGRAPH_BF16_CONV'):
        be.bf16_conv_widens(BF16)


def test_the_kernels_are_onednns_bf16_ones(be):
    from symgraph.backend.onednn import _lib
    x, w = bf(np.ones((1, 16, 8, 8))), bf(np.ones((16, 16, 3, 3)))
    assert be.conv_forward_bf16(x, w, None, (1, 1), (1, 1), (1, 1), 1, (1, 16, 8, 8)) \
        is not None
    names = {k[0]: _lib.impl_name(be.lib, p.pd) for k, p in be._thread().cache.items()
             if p and k[0].endswith('bf16')}
    assert 'ref' not in names['conv_forward_bf16']
    # (this project's machines have AVX-512 BF16; elsewhere oneDNN emulates it)
    print(names)


def test_inner_product_eltwise_softmax_pooling_add(be):
    rng = np.random.RandomState(3)
    x, w = bf(rng.normal(size=(5, 40))), bf(rng.normal(size=(7, 40)))
    b = bf(rng.normal(size=7))
    close(be.fc_forward_bf16(x, w, b), f32(x) @ f32(w).T + f32(b))
    close(be.fc_forward_bf16(x, w, None), f32(x) @ f32(w).T)
    assert be.fc_forward_bf16(f32(x), w, None) is None          # float32 data: declined
    for kind, fn in (('relu', lambda v: np.maximum(v, 0)), ('tanh', np.tanh),
                     ('sigmoid', lambda v: 1 / (1 + np.exp(-v)))):
        close(be.eltwise_forward_bf16(x, kind), fn(f32(x)), 1)
    e = np.exp(f32(x) - f32(x).max(1, keepdims=True))
    close(be.softmax_forward_bf16(x, 1), e / e.sum(1, keepdims=True), 1)
    close(be.softmax_forward_bf16(x, 1, log=True),
          np.log(e / e.sum(1, keepdims=True)), 2)
    img = bf(rng.normal(size=(2, 3, 6, 6)))
    close(be.pool_forward_bf16(img, 'max', (2, 2), (2, 2), (0, 0), (0, 0), (2, 3, 3, 3)),
          f32(img).reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)), 0)
    close(be.pool_forward_bf16(img, 'avg_include', (2, 2), (2, 2), (0, 0), (0, 0),
                               (2, 3, 3, 3)),
          f32(img).reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)), 1)
    # channels last in and out (the layout pass's pooling)
    img_l = np.moveaxis(np.ascontiguousarray(np.moveaxis(img, 1, -1)), -1, 1)
    got = be.pool_forward_bf16(img_l, 'max', (2, 2), (2, 2), (0, 0), (0, 0), (2, 3, 3, 3),
                               'channels_last')
    assert np.moveaxis(got, 1, -1).flags.c_contiguous
    close(got, f32(img).reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)), 0)
    # into the plan's buffer where it lies as the output does, else into a new array
    buf = _channels_last(np.zeros((2, 3, 3, 3), BF16))
    assert be.pool_forward_bf16(img_l, 'max', (2, 2), (2, 2), (0, 0), (0, 0), (2, 3, 3, 3),
                                'channels_last', out=buf) is buf
    close(buf, f32(got), 0)
    other = np.zeros((2, 3, 3, 3), BF16)
    assert be.pool_forward_bf16(img_l, 'max', (2, 2), (2, 2), (0, 0), (0, 0), (2, 3, 3, 3),
                                'channels_last', out=other) is not other
    close(be.add_bf16(img, img[::-1].copy(), relu=True),
          np.maximum(f32(img) + f32(img[::-1]), 0), 1)


def test_operators_take_the_bf16_variants_and_match_float32(be):
    rng = np.random.RandomState(4)
    x = bf(rng.normal(size=(2, 3, 8, 8)))
    w = bf(rng.normal(0, 0.3, size=(4, 3, 3, 3)))
    fw = bf(rng.normal(0, 0.2, size=(5, 4 * 4 * 4)))
    outs = {}
    for dt in (np.float32, BF16):
        h = mx.nd.Convolution(mx.nd.array(x, dtype=dt), mx.nd.array(w, dtype=dt),
                              kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True)
        h = mx.nd.Activation(h, act_type='relu')
        h = mx.nd.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='max')
        h = mx.nd.FullyConnected(h, mx.nd.array(fw, dtype=dt), num_hidden=5, no_bias=True)
        outs[np.dtype(dt).name] = mx.nd.softmax(h).asnumpy()
    close(outs['bfloat16'], outs['float32'], 4)
    # the variants ran (oneDNN counted their calls)
    # (pooling this small stays with the float32 code: the backend's routing)
    assert {'conv_forward_bf16', 'eltwise_forward_bf16', 'fc_forward_bf16',
            'softmax_forward_bf16'} <= set(be.calls)


def test_a_declined_case_computes_in_float32_and_rounds():
    """Lp pooling has no oneDNN kernel: the bf16 variant computes it in float32."""
    x = bf(np.random.RandomState(5).uniform(0, 1, (1, 2, 4, 4)))
    got = mx.nd.Pooling(mx.nd.array(x, dtype=BF16), kernel=(2, 2), stride=(2, 2),
                        pool_type='lp', p_value=2).asnumpy()
    want = np.sqrt((f32(x) ** 2).reshape(1, 2, 2, 2, 2, 2).sum(axis=(3, 5)))
    np.testing.assert_array_equal(f32(got), f32(bf(want)))


def test_bf16_inference_graph_through_the_passes_matches_float32(be):
    """A converted ResNet block in an inference executor: the passes fold BatchNorm into the
    bf16 convolution and run the residual sum + relu through the bf16 add."""
    from symgraph.contrib import amp
    d = mx.sym.var('data')
    h = mx.sym.Convolution(d, num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True, name='c1')
    h = mx.sym.Activation(mx.sym.BatchNorm(h, fix_gamma=False, name='bn1'), act_type='relu')
    s = mx.sym.Convolution(h, num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True, name='c2')
    s = mx.sym.BatchNorm(s, fix_gamma=False, name='bn2')
    out = mx.sym.Activation(s + h, act_type='relu')
    out = mx.sym.FullyConnected(mx.sym.Flatten(out), num_hidden=4, name='fc')
    rng = np.random.RandomState(6)
    arg_shapes, _, aux_shapes = out.infer_shape(data=(2, 8, 6, 6))
    arg = {n: mx.nd.array(rng.normal(0, 0.3, s)) for n, s in
           zip(out.list_arguments(), arg_shapes) if n != 'data'}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
           zip(out.list_auxiliary_states(), aux_shapes)}
    x = mx.nd.array(rng.normal(size=(2, 8, 6, 6)))
    res = {}
    calls = dict(be.calls)
    for target in ('float32', 'bfloat16'):
        sym, a, b = (out, arg, aux) if target == 'float32' else amp.convert_model(
            out, arg, aux, target_dtype='bfloat16', cast_optional_params=True)
        exe = sym.bind(mx.cpu(), dict(a, data=x), aux_states=b, grad_req='null')
        res[target] = exe.forward(is_train=False)[0].asnumpy()
    assert be.calls.get('conv_forward_bf16', 0) > calls.get('conv_forward_bf16', 0)
    assert be.calls.get('add_bf16', 0) > calls.get('add_bf16', 0)
    ref = res['float32']
    np.testing.assert_allclose(res['bfloat16'], ref, rtol=0,
                               atol=0.05 * np.abs(ref).max())


def _channels_last(a):
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)


@pytest.mark.parametrize('shape', [(4, 8, 5, 6), (6, 16), (2, 16, 3, 4, 5), (3, 5, 7)])
def test_batch_norm_matches_float32(be, shape):
    """bf16 data, float32 scale/shift/statistics (MXNet's bf16 BatchNorm keeps them so):
    inference with the given statistics and a training forward's batch statistics, against
    the float32 kernel on the same (bf16-exact) values."""
    rng = np.random.RandomState(shape[1])
    c = shape[1]
    x = bf(rng.normal(0.3, 2, shape))
    g, b = rng.uniform(0.5, 1.5, c).astype(np.float32), rng.normal(0, .2, c).astype(np.float32)
    m = rng.normal(0, .2, c).astype(np.float32)
    v = rng.uniform(.5, 1.5, c).astype(np.float32)
    want = be.batch_norm_forward(f32(x), g, b, 1e-3, m, v, is_train=False)
    got = be.batch_norm_forward_bf16(x, g, b, 1e-3, m, v)
    close(got, want, 1)
    y, mean, var = be.batch_norm_forward_bf16(x, g, b, 1e-3)
    wy, wmean, wvar = be.batch_norm_forward(f32(x), g, b, 1e-3)
    assert mean.dtype == var.dtype == np.float32
    np.testing.assert_allclose(mean, wmean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, wvar, rtol=1e-5)
    close(y, wy, 1)
    if len(shape) == 4:         # channels last in, channels last out
        got = be.batch_norm_forward_bf16(_channels_last(x), g, b, 1e-3, m, v)
        assert np.moveaxis(got, 1, -1).flags.c_contiguous
        close(got, want, 1)
    assert be.batch_norm_forward_bf16(f32(x), g, b, 1e-3, m, v) is None     # float32 data


def test_concat_is_exact(be):
    rng = np.random.RandomState(7)
    for axis in range(4):
        a = bf(rng.normal(size=(2, 3, 4, 5)))
        shape = list(a.shape)
        shape[axis] = 6
        b = bf(rng.normal(size=shape))
        got = be.concat_bf16([a, b, a[::-1]], axis)
        want = np.concatenate([a, b, a[::-1]], axis)
        assert got.dtype == BF16 and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    assert be.concat_bf16([a, f32(a)], 0) is None                 # a float32 input
    assert be.concat_bf16([a, bf(np.ones((2, 3, 4, 6)))], 1) is None   # shapes disagree


def test_batch_norm_and_concat_operators_in_bf16(be):
    """mx.nd's BatchNorm (bf16 data, float32 parameters, as amp converts it) and Concat
    reach the bf16 kernels; inference and a training forward (running statistics
    updated) match float32; the gradient (computed in float32) matches float32's."""
    rng = np.random.RandomState(8)
    x = bf(rng.normal(0.5, 2, (4, 6, 5, 5)))
    params = [rng.uniform(0.5, 1.5, 6), rng.normal(0, .2, 6), rng.normal(0, .2, 6),
              rng.uniform(.5, 1.5, 6)]
    calls = dict(be.calls)
    res = {}
    for dt in (np.float32, BF16):
        g, b, m, v = (mx.nd.array(p, dtype=np.float32) for p in params)
        data = mx.nd.array(x, dtype=dt)
        inf = mx.nd.BatchNorm(data, g, b, m, v, fix_gamma=False, use_global_stats=True)
        data.attach_grad()
        with mx.autograd.record():
            y = mx.nd.BatchNorm(data, g, b, m, v, fix_gamma=False, momentum=0.5)
            z = mx.nd.concat(y, data, dim=1)
        z.backward(mx.nd.array(np.arange(z.size).reshape(z.shape) % 7 - 3.0, dtype=dt))
        res[np.dtype(dt).name] = (inf.asnumpy(), z.asnumpy(), m.asnumpy(), v.asnumpy(),
                                  data.grad.asnumpy())
    (inf, z, m, v, dx), want = res['bfloat16'], res['float32']
    assert inf.dtype == z.dtype == dx.dtype == BF16 and m.dtype == np.float32
    close(inf, want[0], 1)
    close(z, want[1], 1)
    # the batch's raw data half of the concatenation is the data itself, bit for bit
    np.testing.assert_array_equal(z[:, 6:].view(np.uint16), x.view(np.uint16))
    np.testing.assert_allclose(m, want[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v, want[3], rtol=1e-5)
    close(dx, want[4], 2)
    for k in ('batch_norm_forward_bf16', 'concat_bf16'):
        assert be.calls.get(k, 0) > calls.get(k, 0), k


def test_bf16_graph_fuses_as_float32_and_widens_nothing(be):
    """amp.convert_model's bf16 graph through the inference passes: the same fusions as
    float32 (BatchNorm folded into convolution and FullyConnected, relu and the residual
    sum as post-ops), and every node in a bf16 kernel's variant: none computes widened to
    float32 (opdef.WidenedStep)."""
    from symgraph.contrib import amp
    from symgraph.opdef import WidenedStep
    d = mx.sym.var('data')
    c = mx.sym.Convolution(d, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c1')
    r = mx.sym.Activation(mx.sym.BatchNorm(c, fix_gamma=False, name='bn1'), act_type='relu')
    c2 = mx.sym.Convolution(r, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c2')
    s = mx.sym.Activation(c2 + r, act_type='relu')
    h = mx.sym.BatchNorm(mx.sym.concat(s, r, dim=1), fix_gamma=False, name='bn3')
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='max')
    f = mx.sym.BatchNorm(mx.sym.FullyConnected(h, num_hidden=10, name='fc'), name='bnf')
    out = mx.sym.softmax(mx.sym.Activation(f, act_type='relu'))
    rng = np.random.RandomState(9)
    arg_shapes, _, aux_shapes = out.infer_shape(data=(2, 3, 8, 8))
    arg = {n: mx.nd.array(rng.normal(0, 0.3, s)) for n, s in
           zip(out.list_arguments(), arg_shapes) if n != 'data'}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
           zip(out.list_auxiliary_states(), aux_shapes)}
    x = mx.nd.array(rng.normal(size=(2, 3, 8, 8)))
    x2 = rng.normal(size=(2, 3, 8, 8))
    res, fused = {}, {}
    for target in ('float32', 'bfloat16'):
        sym, a, b = (out, arg, aux) if target == 'float32' else amp.convert_model(
            out, arg, aux, target_dtype='bfloat16', cast_optional_params=True)
        exe = sym.bind(mx.cpu(), dict(a, data=x.copy()), aux_states=b, grad_req='null')
        res[target] = exe.forward(is_train=False)[0].asnumpy()
        # a second batch: the layers replay their recorded calls on the same buffers
        exe.arg_dict['data'][:] = x2
        res[target + '2'] = exe.forward(is_train=False)[0].asnumpy()
        plan = exe._passes.plan()
        ops = [plan.run_op[id(n)] for n in plan.steps]
        fused[target] = sorted(o.describe() for o in ops if hasattr(o, 'post_ops'))
        if target == 'bfloat16':
            assert not [type(o).__name__ for n, o in zip(plan.steps, ops)
                        if isinstance(plan.bound[id(n)], WidenedStep)]
            assert {'Bf16FusedConvolution', 'Bf16FusedFullyConnected', 'Bf16Concat',
                    'Bf16BatchNorm'} <= {type(o).__name__ for o in ops}
    assert fused['bfloat16'] == fused['float32'] and len(fused['float32']) == 3
    for k in ('', '2'):
        np.testing.assert_allclose(res['bfloat16' + k], res['float32' + k], rtol=0,
                                   atol=0.02 * np.abs(res['float32' + k]).max())
    assert np.abs(res['float322'] - res['float32']).max() > 0.1


def test_cast_is_mxnets_amp_cast(be):
    """float32 -> bfloat16 by oneDNN's reorder rounds to nearest even, as ml_dtypes does,
    and flushes float32 denormals to zero, as MXNet 1.9.1's amp_cast (a oneDNN reorder)
    does; bfloat16 -> float32 is exact. amp_cast between the two goes through it."""
    rng = np.random.RandomState(10)
    x = rng.normal(size=(4, 3, 8, 8)).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, 1e-30, -2.5],
                       np.float32)
    ties = np.array([0x3f808000, 0x3f818000, 0x3f80c000, 0xbf808000], np.uint32)
    x.flat[:8] = special
    x.flat[8:12] = ties.view(np.float32)
    x.flat[12:14] = [1e-40, -3e-39]                 # float32 denormals
    got = be.cast_bf16(x, BF16)
    want = x.astype(BF16)
    want.flat[12:14] = np.array([0.0, -0.0], np.float32).astype(BF16)    # (signed)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    back = be.cast_bf16(got, np.float32)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back.view(np.uint32), f32(got).view(np.uint32))
    xl = _channels_last(x)                          # taken as it lies
    assert np.moveaxis(be.cast_bf16(xl, BF16), 1, -1).flags.c_contiguous
    assert be.cast_bf16(np.ones(3, np.float16), BF16) is None
    assert be.cast_bf16(x, np.float16) is None
    calls = be.calls.get('cast_bf16', 0)
    y = mx.nd.amp_cast(mx.nd.array(x), dtype='bfloat16').asnumpy()
    np.testing.assert_array_equal(y.view(np.uint16), got.view(np.uint16))
    np.testing.assert_array_equal(
        mx.nd.amp_cast(mx.nd.array(got, dtype=BF16), dtype='float32').asnumpy(), back)
    assert be.calls.get('cast_bf16', 0) == calls + 2
