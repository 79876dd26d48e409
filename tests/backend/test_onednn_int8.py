"""The oneDNN backend's int8 kernels (symgraph/backend/onednn/int8.py): exact int32 sums
of uint8/int8 data and int8 weights against NumPy's integer products, the cases they
decline, and the quantized operators giving the same bits with and without them."""
import numpy as np
import pytest

from symgraph.backend import onednn
from symgraph.opdef import get_op

RNG = np.random.RandomState(11)


def _backend():
    be = onednn.backend()
    if be is None:
        pytest.skip('oneDNN not loaded')
    if not be.int8_dot_exact:
        pytest.skip('no VNNI under oneDNN here: its int8 dot products saturate in 16 bits, '
                    'so the kernels decline (see test_int8_dot_products_decline_without_vnni)')
    return be


def test_int8_dot_products_decline_without_vnni(monkeypatch):
    # (on an AVX2 machine without VNNI, oneDNN's u8 x s8 convolution gave sums off by up to
    # 69,051 against the exact int32 ones: vpmaddubsw saturates pairs of products)
    be = onednn.backend()
    if be is None:
        pytest.skip('oneDNN not loaded')
    monkeypatch.setitem(be.__dict__, '_int8_dot_exact', False)
    x = RNG.randint(0, 256, (2, 16, 9, 9)).astype(np.uint8)
    w = RNG.randint(-128, 128, (24, 16, 3, 3)).astype(np.int8)
    assert be.int8_conv(x, w, None, (1, 1), (1, 1), (1, 1), 1) is None
    assert be.int8_matmul(x.reshape(2, -1)[:, :256].copy(), w.reshape(24, -1)[:, :256].copy()) \
        is None


def _conv_ref(x, w, b, stride, pad):
    op = get_op('Convolution')(kernel=w.shape[2:], num_filter=w.shape[0], stride=stride,
                               pad=pad, no_bias=True)
    y = op.forward(np, [x.astype(np.float64), w.astype(np.float64)], [], False)[0]
    if b is not None:
        y = y + b.reshape(1, -1, *([1] * (y.ndim - 2)))
    return y.astype(np.int64)


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
@pytest.mark.parametrize('stride,pad,bias', [((1, 1), (1, 1), True), ((2, 2), (0, 0), False),
                                             ((1, 2), (1, 0), True)])
def test_int8_conv_is_exact(dtype, stride, pad, bias):
    be = _backend()
    lo, hi = (0, 256) if dtype == 'uint8' else (-128, 128)
    x = RNG.randint(lo, hi, (3, 16, 11, 9)).astype(dtype)
    w = RNG.randint(-128, 128, (24, 16, 3, 3)).astype(np.int8)
    b = RNG.randint(-5000, 5000, 24).astype(np.int32) if bias else None
    y = be.int8_conv(x, w, b, stride, pad, (1, 1), 1)
    assert y is not None and y.dtype == np.int32
    np.testing.assert_array_equal(y, _conv_ref(x, w, b, stride, pad))


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
def test_int8_matmul_is_exact(dtype):
    be = _backend()
    lo, hi = (0, 256) if dtype == 'uint8' else (-128, 128)
    x = RNG.randint(lo, hi, (33, 257)).astype(dtype)
    w = RNG.randint(-128, 128, (19, 257)).astype(np.int8)
    y = be.int8_matmul(x, w)
    np.testing.assert_array_equal(y, x.astype(np.int64) @ w.astype(np.int64).T)


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
def test_int8_matmul_constant_weights_reordered_once_per_token(dtype):
    # a layer's constant weights (a token): oneDNN's inner product on them reordered into
    # its blocked layout once, not the matmul that copies them every call
    be = _backend()
    lo, hi = (0, 256) if dtype == 'uint8' else (-128, 128)
    x = RNG.randint(lo, hi, (16, 320)).astype(dtype)
    w = RNG.randint(-128, 128, (40, 320)).astype(np.int8)
    cache = {}
    ref = x.astype(np.int64) @ w.astype(np.int64).T
    for _ in range(3):
        y = be.int8_matmul(x, w, token=1, cache=cache)
        assert y is not None and y.dtype == np.int32
        np.testing.assert_array_equal(y, ref)
    (prim,) = cache.values()
    assert prim.const_reorders == 1
    assert be.cached_primitives().get(('int8_matmul', 16, 320, 40, x.dtype.str, True)) is None
    # new values under a new token are reordered again; under the old token they are not
    w2 = RNG.randint(-128, 128, (40, 320)).astype(np.int8)
    np.testing.assert_array_equal(be.int8_matmul(x, w2, token=2, cache=cache),
                                  x.astype(np.int64) @ w2.astype(np.int64).T)
    assert prim.const_reorders == 2
    np.testing.assert_array_equal(be.int8_matmul(x, w, token=2, cache=cache),
                                  x.astype(np.int64) @ w2.astype(np.int64).T)
    assert prim.const_reorders == 2


def test_declines_what_it_does_not_take():
    be = _backend()
    w = np.ones((4, 3, 3, 3), np.int8)
    assert be.int8_conv(np.ones((2, 3, 8, 8), np.float32), w, None, (1, 1), (1, 1), (1, 1),
                        1) is None
    assert be.int8_matmul(np.ones((2, 3), np.int8), np.ones((4, 3), np.uint8)) is None
    assert be.int8_matmul(np.ones((1, 2), np.int8), np.ones((1, 2), np.int8)) is None  # tiny


def test_quantized_conv_same_bits_with_and_without_the_kernel(monkeypatch):
    from symgraph.ops import quantized_nn
    x = RNG.randint(0, 256, (2, 8, 10, 10)).astype(np.uint8)
    w = RNG.randint(-128, 128, (16, 8, 3, 3)).astype(np.int8)
    b = RNG.randint(-128, 128, 16).astype(np.int8)
    r = [np.float32([v]) for v in (0.0, 2.0, -0.5, 0.5, -0.1, 0.1)]
    op = get_op('_contrib_quantized_conv')(kernel=(3, 3), num_filter=16, pad=(1, 1))
    with_kernel = op.forward(np, [x, w, b] + r, [], False)
    monkeypatch.setattr(quantized_nn, '_kernel', lambda name: None)
    without = op.forward(np, [x, w, b] + r, [], False)
    for a, c in zip(with_kernel, without):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize('dtype', ['uint8', 'int8', 'float32'])
def test_int8_requantize_rounds_and_saturates_as_numpy(dtype):
    be = _backend()
    acc = np.moveaxis(RNG.randint(-400000, 400000, (3, 7, 5, 24)).astype(np.int32), -1, 1)
    acc[0, :, 0, 0] = np.arange(-12, 12) * 2 + 1      # odd sums: halves at scale 0.5
    scales = RNG.uniform(1e-4, 1e-3, 24).astype(np.float32)
    scales[:] = np.where(np.arange(24) % 3 == 0, np.float32(0.5), scales)
    y = be.int8_requantize(acc, scales, dtype, ('t', dtype), {})
    f = acc.astype(np.float32) * scales.reshape(1, -1, 1, 1)
    if dtype == 'float32':
        ref = f
    else:
        info = np.iinfo(dtype)
        ref = np.clip(np.rint(f), info.min, info.max).astype(dtype)
    assert y.dtype == np.dtype(dtype) and y.shape == acc.shape
    assert np.moveaxis(y, 1, -1).flags.c_contiguous         # the layout kept
    np.testing.assert_array_equal(y, ref)
    assert be.int8_requantize(acc.astype(np.int64), scales, dtype, 't', {}) is None


@pytest.mark.parametrize('dtype,relu', [('float32', False), ('float32', True),
                                        ('uint8', True), ('int8', False), ('int8', True)])
@pytest.mark.parametrize('sdtype', ['uint8', 'int8'])
def test_int8_add_rounds_each_step_as_numpy(dtype, relu, sdtype):
    """y + float32(s * scale): two roundings, as NumPy's float32 (a fused multiply-add
    would differ in the last bit of many of these)."""
    be = _backend()
    y = np.moveaxis(RNG.uniform(-300, 300, (4, 6, 7, 32)).astype(np.float32), -1, 1)
    y.flat[:64] = np.arange(64) - 31.5                  # halves: ties to even
    lo, hi = (0, 256) if sdtype == 'uint8' else (-128, 128)
    s = np.moveaxis(RNG.randint(lo, hi, (4, 6, 7, 32)).astype(sdtype), -1, 1)
    scale = np.float32(0.7371234)
    got = be.int8_add(y, s, scale, relu, dtype, {})
    t = s.astype(np.float32)
    t *= scale
    ref = y + t
    if relu:
        ref = np.maximum(ref, np.float32(0))
    if dtype != 'float32':
        info = np.iinfo(dtype)
        ref = np.clip(np.rint(ref), info.min, info.max).astype(dtype)
    assert got.dtype == np.dtype(dtype) and np.moveaxis(got, 1, -1).flags.c_contiguous
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize('dtype,relu', [('uint8', False), ('int8', False), ('float32', True),
                                        ('float32', False)])
@pytest.mark.parametrize('channels_last', [False, True])
def test_int8_conv_requantized_in_the_primitive(dtype, relu, channels_last):
    """float32(sums + bias) * scale (a relu), rounded and saturated: the bits of the int32
    sums requantized by NumPy."""
    be = _backend()
    x = RNG.randint(0, 256, (2, 16, 9, 9)).astype(np.uint8)
    if channels_last:
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    w = RNG.randint(-128, 128, (32, 16, 3, 3)).astype(np.int8)
    b = RNG.randint(-9000, 9000, 32).astype(np.int32)
    scales = RNG.uniform(1e-4, 2e-3, 32).astype(np.float32)
    y = be.int8_conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, token=7, cache={}, scales=scales,
                     dtype=dtype, relu=relu)
    f = _conv_ref(x, w, b, (1, 1), (1, 1)).astype(np.float32) * scales.reshape(1, -1, 1, 1)
    if relu:
        f = np.maximum(f, np.float32(0))
    if dtype != 'float32':
        info = np.iinfo(dtype)
        f = np.clip(np.rint(f), info.min, info.max).astype(dtype)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y, f)
    assert be.int8_conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, scales=scales) is None  # no token


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
@pytest.mark.parametrize('relu,post_relu', [(False, False), (False, True), (True, True)])
@pytest.mark.parametrize('kernel,stride', [(3, 1), (1, 1), (1, 2)])
def test_int8_conv_fuses_the_residual_sum(dtype, relu, post_relu, kernel, stride):
    """The requantized sums plus a summand times its scale in the same primitive, on
    oneDNN's optimised kernels (not its reference one): one fused multiply-add
    (``float64(s) * scale + y`` rounded once: test_residual_sum_rounds_once_as_mxnet
    shows it against MXNet), the relus, rounded and saturated into the summand's type."""
    be = _backend()
    x = RNG.randint(0, 256, (4, 32, 10, 10)).astype(np.uint8)
    x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    w = RNG.randint(-128, 128, (64, 32, kernel, kernel)).astype(np.int8)
    b = RNG.randint(-9000, 9000, 64).astype(np.int32)
    scales = RNG.uniform(1e-4, 5e-4, 64).astype(np.float32)
    pad = (kernel // 2,) * 2
    acc = _conv_ref(x, w, b, (stride,) * 2, pad)
    info = np.iinfo(dtype)
    s = np.moveaxis(RNG.randint(info.min, info.max + 1, np.moveaxis(acc, 1, -1).shape)
                    .astype(dtype), -1, 1)
    s_before = s.copy()
    k = np.float32(0.7137231)
    cache = {}
    y = be.int8_conv(x, w, b, (stride,) * 2, pad, (1, 1), 1, token=3, cache=cache,
                     scales=scales, dtype=dtype, relu=relu, summand=s, sum_scale=k,
                     post_relu=post_relu)
    f = acc.astype(np.float32) * scales.reshape(1, -1, 1, 1)
    if relu:
        f = np.maximum(f, np.float32(0))
    ref = (s.astype(np.float64) * float(k) + f).astype(np.float32)
    if post_relu:
        ref = np.maximum(ref, np.float32(0))
    ref = np.clip(np.rint(ref), info.min, info.max).astype(dtype)
    assert y.dtype == np.dtype(dtype) and np.moveaxis(y, 1, -1).flags.c_contiguous
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(s, s_before)           # the summand untouched
    # a summand in C order (copied into the channels-last output by a reorder)
    y2 = be.int8_conv(x, w, b, (stride,) * 2, pad, (1, 1), 1, token=3, cache=cache,
                      scales=scales, dtype=dtype, relu=relu,
                      summand=np.ascontiguousarray(s), sum_scale=k, post_relu=post_relu)
    np.testing.assert_array_equal(y2, ref)
    impls = [p.impl() for p in cache.values() if p is not None]
    assert impls and not any(i.startswith('ref') for i in impls), impls
    # declined: no requantization, or a summand of another type or shape
    assert be.int8_conv(x, w, b, (stride,) * 2, pad, (1, 1), 1, token=3, cache={},
                        summand=s) is None
    other = 'int8' if dtype == 'uint8' else 'uint8'
    assert be.int8_conv(x, w, b, (stride,) * 2, pad, (1, 1), 1, token=3, cache={},
                        scales=scales, dtype=other, summand=s, sum_scale=k) is None
    assert be.int8_conv(x, w, b, (stride,) * 2, pad, (1, 1), 1, token=3, cache={},
                        scales=scales, dtype=dtype, summand=s[:1], sum_scale=k) is None


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
@pytest.mark.parametrize('channels_last', [False, True])
@pytest.mark.parametrize('kernel,stride,pad,conv', [((3, 3), (2, 2), (1, 1), 'valid'),
                                                     ((2, 2), (2, 2), (0, 0), 'full'),
                                                     ((3, 3), (2, 2), (0, 0), 'full'),
                                                     ((3, 3), (1, 1), (0, 0), 'valid')])
def test_quantized_max_pooling_same_bits_with_and_without_the_kernel(
        monkeypatch, dtype, channels_last, kernel, stride, pad, conv):
    from symgraph.ops import quantized
    be = _backend()
    lo, hi = (0, 256) if dtype == 'uint8' else (-128, 128)
    x = RNG.randint(lo, hi, (4, 32, 23, 23)).astype(dtype)     # (big enough to route)
    if channels_last:
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    r = [np.float32([-1.0]), np.float32([1.0])]
    op = get_op('_contrib_quantized_pooling')(kernel=kernel, stride=stride, pad=pad,
                                               pool_type='max', pooling_convention=conv)
    calls = be.calls.get('int8_pool', 0)
    fast = op.forward(np, [x] + r, [], False)
    # (windows under 9 elements: the routing's float32 limits keep them in NumPy)
    assert be.calls.get('int8_pool', 0) == calls + (np.prod(kernel) >= 9)
    monkeypatch.setattr(quantized, 'CPU_KERNELS', frozenset())
    slow = op.forward(np, [x] + r, [], False)
    assert fast[0].dtype == slow[0].dtype == np.dtype(dtype)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)


def test_int8_conv_chains_channels_last_and_keeps_constant_weights():
    be = _backend()
    x = RNG.randint(0, 256, (2, 16, 9, 9)).astype(np.uint8)
    w = RNG.randint(-127, 128, (16, 16, 3, 3)).astype(np.int8)     # -w fits
    cache = {}
    y = be.int8_conv(x, w, None, (1, 1), (1, 1), (1, 1), 1, token=1, cache=cache)
    assert np.moveaxis(y, 1, -1).flags.c_contiguous
    np.testing.assert_array_equal(y, _conv_ref(x, w, None, (1, 1), (1, 1)))
    # a channels-last input taken as it lies
    x2 = np.clip(y, 0, 255).astype(np.uint8)
    assert np.moveaxis(x2, 1, -1).flags.c_contiguous
    y2 = be.int8_conv(x2, w, None, (1, 1), (1, 1), (1, 1), 1, token=1, cache=cache)
    np.testing.assert_array_equal(y2, _conv_ref(x2, w, None, (1, 1), (1, 1)))
    # the same token: the weights are not reordered again (a stale copy is kept on
    # purpose: the token is the caller's promise)
    prims = [p for p in cache.values() if p is not None]
    before = sum(p.const_reorders for p in prims)
    be.int8_conv(x2, w, None, (1, 1), (1, 1), (1, 1), 1, token=1, cache=cache)
    assert sum(p.const_reorders for p in prims) == before
    y3 = be.int8_conv(x2, -w, None, (1, 1), (1, 1), (1, 1), 1, token=2, cache=cache)
    np.testing.assert_array_equal(y3, -y2)


def _resnet_block():
    import symgraph as mx
    data = mx.sym.var('data')

    def conv_bn(x, name, relu):
        c = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True,
                               name=name + '_conv')
        b = mx.sym.BatchNorm(c, fix_gamma=False, name=name + '_bn')
        return mx.sym.Activation(b, act_type='relu', name=name + '_relu') if relu else b

    x = conv_bn(data, 'stem', True)
    h = conv_bn(conv_bn(x, 'a', True), 'b', False)
    x = mx.sym.Activation(h + x, act_type='relu', name='out_relu')
    x = mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1), name='pool')
    return mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=5, name='fc')


def test_fused_int8_network_same_bits_with_and_without_the_kernels(monkeypatch):
    """A quantized residual block (_sg_mkldnn_conv with relu, without, with a sum): the
    oneDNN path (requantization, residual sum and relus fused into the convolution, one
    primitive per layer; or the requantization in a scaled reorder after its channels-last
    int32 sums) gives NumPy's bits (the sum one fused multiply-add, as oneDNN's sum
    post-op)."""
    import symgraph as mx
    from symgraph.ops import quantized_nn, subgraph_mkldnn
    be = _backend()
    sym = _resnet_block()
    shape = (4, 3, 12, 12)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    rng = np.random.RandomState(5)
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in
            zip(sym.list_arguments(), arg_shapes) if n != 'data'}
    auxs = {n: mx.nd.array(rng.uniform(0.5, 1.5, s) if n.endswith('var') else
                           rng.uniform(-0.1, 0.1, s))
            for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    x = rng.uniform(0, 1, shape).astype(np.float32)
    qsym, qargs, qauxs = mx.contrib.quant.quantize_model_mkldnn(
        sym, args, auxs, label_names=None, calib_mode='naive',
        calib_data=mx.io.NDArrayIter(x, batch_size=4), num_calib_examples=4,
        quantized_dtype='auto')

    def run():
        given = dict(qargs, data=mx.nd.array(x))
        exe = qsym.bind(mx.cpu(), {k: given[k] for k in qsym.list_arguments()},
                        aux_states={k: qauxs[k] for k in qsym.list_auxiliary_states()},
                        grad_req='null')
        outs = [exe.forward(is_train=False)[0].asnumpy() for _ in range(2)]
        np.testing.assert_array_equal(outs[0], outs[1])
        return outs[0]

    calls = dict(be.calls)
    fast = run()
    done = {k: v - calls.get(k, 0) for k, v in be.calls.items() if v != calls.get(k, 0)}
    # twice: the data's quantization (a scaled reorder), 3 quantized convolutions (the
    # third with the sum, computed over its summand's buffer in place: the stem's output,
    # which the first convolution read before), nothing else: no copy of the summand
    assert done == {'int8_requantize': 2, 'int8_conv': 6}, done
    # the requantization in a reorder after the int32 sums instead of in the convolution
    monkeypatch.setattr(subgraph_mkldnn, 'conv_requantized', lambda *a, **k: None)
    calls = dict(be.calls)
    np.testing.assert_array_equal(fast, run())
    assert be.calls.get('int8_requantize', 0) > calls.get('int8_requantize', 0)
    monkeypatch.setattr(quantized_nn, '_kernel', lambda name: None)
    monkeypatch.setattr(subgraph_mkldnn, '_requantize', lambda *a: None)
    np.testing.assert_array_equal(fast, run())


def _quantized(sym, shape, seed=5):
    """(quantized symbol, its arguments and auxiliary states, data) of ``sym``, calibrated
    (naive) on one batch of ``shape``."""
    import symgraph as mx
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    rng = np.random.RandomState(seed)
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in
            zip(sym.list_arguments(), arg_shapes) if n != 'data'}
    auxs = {n: mx.nd.array(rng.uniform(0.5, 1.5, s) if n.endswith('var') else
                           rng.uniform(-0.1, 0.1, s))
            for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    x = rng.uniform(0, 1, shape).astype(np.float32)
    qsym, qargs, qauxs = mx.contrib.quant.quantize_model_mkldnn(
        sym, args, auxs, label_names=None, calib_mode='naive',
        calib_data=mx.io.NDArrayIter(x, batch_size=shape[0]), num_calib_examples=shape[0],
        quantized_dtype='auto')
    return qsym, dict(qargs, data=mx.nd.array(x)), qauxs


def _bind_forward(qsym, args, auxs):
    """(executor, its inference output) of ``qsym`` run twice (the same bits)."""
    import symgraph as mx
    exe = qsym.bind(mx.cpu(), {k: args[k] for k in qsym.list_arguments()},
                    aux_states={k: auxs[k] for k in qsym.list_auxiliary_states()},
                    grad_req='null')
    outs = [exe.forward(is_train=False)[0].asnumpy() for _ in range(2)]
    np.testing.assert_array_equal(outs[0], outs[1])
    return exe, outs[0]


def _sum_nodes(exe):
    """Per fused convolution with a sum in the executor's inference plan: (whether the plan
    gave its output the summand's storage, the summand's dtype, the output's dtype,
    whether the output's buffer lies channels last)."""
    plan = exe._passes.plan() or exe._plan
    st = plan.storage()
    slot = {k: i for i, k in enumerate(st.keys)}
    found = []
    for n in plan.steps:
        op = plan.run_op[id(n)]
        if getattr(op, 'name', None) != '_sg_mkldnn_conv' or not op.with_sum:
            continue
        assert op.writes_into and op.inplace
        (j, i), = op.inplace
        src, out = plan.in_entries(n)[j], plan.out_entries(n)[i]
        assert out in slot
        same = src in slot and st.offset[slot[src]] == st.offset[slot[out]]
        found.append((same, plan.dtypes[src].name, plan.dtypes[out].name,
                      st.layouts[slot[out]]))
    return found


def test_residual_sum_takes_its_summands_storage_only_where_it_dies_there(monkeypatch):
    """The storage plan gives a fused residual sum's output the summand's buffer (MXNet's
    in-place sum, no copy of the summand) where the summand is read last by that node, in
    the same layout (channels last, as the int8 convolutions write) and item size (an int8
    summand under a uint8 post-sum relu too: Operator.inplace_any_dtype); it refuses where
    another node reads the summand later (here a third branch: the summand is then
    copied). The values are the NumPy path's either way."""
    import symgraph as mx
    from symgraph.ops import quantized_nn, subgraph_mkldnn
    data = mx.sym.var('data')

    def conv_bn(x, name, relu, filters=16):
        c = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                               no_bias=True, name=name + '_conv')
        b = mx.sym.BatchNorm(c, fix_gamma=False, name=name + '_bn')
        return mx.sym.Activation(b, act_type='relu', name=name + '_relu') if relu else b

    def pool(x, name):
        return mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1), name=name)

    stem = conv_bn(data, 'stem', True)
    # block 1: identity summand (uint8), read first by a_conv, last by the sum: in place
    y1 = mx.sym.Activation(conv_bn(conv_bn(stem, 'a', True), 'b', False) + stem,
                           act_type='relu', name='r1')
    # block 2: its summand y1 is read again later (c_conv after the sum): refused
    y2 = mx.sym.Activation(conv_bn(conv_bn(y1, 'd', True), 'e', False) + y1,
                           act_type='relu', name='r2')
    late = conv_bn(y1, 'c', True)
    # block 3: a projection summand (int8, no relu) into a uint8 output: in place too
    proj = conv_bn(y2, 'p', False)
    y3 = mx.sym.Activation(conv_bn(y2, 'f', False) + proj, act_type='relu', name='r3')
    net = mx.sym.FullyConnected(mx.sym.Flatten(mx.sym.Concat(pool(y3, 'p1'),
                                                             pool(late, 'p2'))),
                                num_hidden=5, name='fc')
    qsym, args, auxs = _quantized(net, (4, 3, 12, 12))
    be = onednn.backend()
    fast_path = be is not None and be.int8_dot_exact
    calls = dict(be.calls) if be is not None else {}
    exe, fast = _bind_forward(qsym, args, auxs)
    assert _sum_nodes(exe) == [(True, 'uint8', 'uint8', 'channels_last'),
                               (False, 'uint8', 'uint8', 'channels_last'),
                               (True, 'int8', 'uint8', 'channels_last')]
    if fast_path:
        done = {k: v - calls.get(k, 0) for k, v in be.calls.items()}
        assert done.get('int8_copy') == 2, done     # one copy per forward, not three
    # without the inplace_any_dtype row the plan shares storage in one dtype only
    from symgraph.graph import rules
    with monkeypatch.context() as m:
        m.setitem(rules.INPLACE_ANY_DTYPE._rows, subgraph_mkldnn.SgMKLDNNConv, None)
        m.setattr(rules.INPLACE_ANY_DTYPE, '_resolved', {})
        exe3, same = _bind_forward(qsym, args, auxs)
        assert [f[0] for f in _sum_nodes(exe3)] == [True, False, False]
    np.testing.assert_array_equal(fast, same)
    monkeypatch.setattr(quantized_nn, '_kernel', lambda name: None)
    monkeypatch.setattr(subgraph_mkldnn, '_requantize', lambda *a: None)
    exe2, slow = _bind_forward(qsym, args, auxs)
    np.testing.assert_array_equal(fast, slow)
    # the NumPy path runs the same plan (its results copied into the buffers)
    assert _sum_nodes(exe2) == _sum_nodes(exe)


def test_int8_conv_writes_into_the_given_output_and_sums_in_place():
    """``out``: the result is written there (and returned) where it lies as the result
    does; given the summand itself, the sum is computed over it with no copy (the
    backend's int8_copy not called); an ``out`` overlapping the data, or not lying
    channels last, gets a new array; a summand overlapping ``out`` elsewhere is not
    copied over itself."""
    be = _backend()
    x = np.moveaxis(RNG.randint(0, 256, (2, 10, 10, 32)).astype(np.uint8), -1, 1)
    w = RNG.randint(-128, 128, (32, 32, 3, 3)).astype(np.int8)
    b = RNG.randint(-9000, 9000, 32).astype(np.int32)
    scales = RNG.uniform(1e-4, 5e-4, 32).astype(np.float32)
    k = np.float32(0.61)
    kw = dict(token=4, cache={}, scales=scales, dtype=np.uint8, relu=True, sum_scale=k,
              post_relu=True)
    s = np.moveaxis(RNG.randint(0, 256, (2, 10, 10, 32)).astype(np.uint8), -1, 1)
    want = be.int8_conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, summand=s, **kw)
    assert not np.shares_memory(want, s)
    copies = be.calls.get('int8_copy', 0)
    dest = np.moveaxis(np.empty((2, 10, 10, 32), np.uint8), -1, 1)
    got = be.int8_conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, summand=s, out=dest, **kw)
    assert got is dest and be.calls.get('int8_copy', 0) == copies + 1
    np.testing.assert_array_equal(got, want)
    s_own = s.copy(order='K')
    got = be.int8_conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, summand=s_own, out=s_own, **kw)
    assert got is s_own and be.calls.get('int8_copy', 0) == copies + 1     # no copy
    np.testing.assert_array_equal(got, want)
    # an out in C order, or one lying over the data: a new array
    for bad in (np.empty((2, 32, 10, 10), np.uint8), x):
        got = be.int8_conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, summand=s, out=bad, **kw)
        assert got is not bad and not np.shares_memory(got, bad)
        np.testing.assert_array_equal(got, want)
    # a summand overlapping out elsewhere (shifted by one image): a new array
    buf = np.moveaxis(np.empty((3, 10, 10, 32), np.uint8), -1, 1)
    buf[1:] = s
    got = be.int8_conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, summand=buf[1:], out=buf[:2],
                       **kw)
    assert not np.shares_memory(got, buf)
    np.testing.assert_array_equal(got, want)


def _int8_sum_golden():
    import os
    import sys
    import symgraph as mx
    golden = os.path.join(os.path.dirname(__file__), '..', 'golden')
    sys.path.insert(0, golden)
    try:
        import make_int8_sum
    finally:
        sys.path.remove(golden)
    data = np.load(os.path.join(golden, 'data', 'quantization', 'int8_sum.npz'))
    _, args, auxs, _, test = make_int8_sum.model(mx, np, int(data['seed']))
    args.update((k[4:], mx.nd.array(data[k], dtype=data[k].dtype)) for k in data.files
                if k.startswith('arg:'))
    qsym = mx.sym.load_json(str(data['json']))
    return lambda: make_int8_sum.run(mx, qsym, args, auxs, test), data['out']


def test_residual_sum_rounds_once_as_mxnet(monkeypatch):
    """A quantized residual sum whose test batch has an element where MXNet's fused
    multiply-add (oneDNN's sum post-op) and a separate float32 multiply and add round
    apart (tests/golden/make_int8_sum.py): MXNet's output exactly, through oneDNN's
    convolution with the sum post-op and through the NumPy path; the two-rounding sum
    gives another."""
    from symgraph.ops import quantized_nn, subgraph_mkldnn
    run, want = _int8_sum_golden()
    be = onednn.backend()
    if be is not None and be.int8_dot_exact:
        calls = dict(be.calls)
        np.testing.assert_array_equal(run(), want)
        assert be.calls.get('int8_conv', 0) - calls.get('int8_conv', 0) == 2  # 2 layers
    monkeypatch.setattr(quantized_nn, '_kernel', lambda name: None)
    monkeypatch.setattr(subgraph_mkldnn, '_requantize', lambda *a: None)
    np.testing.assert_array_equal(run(), want)
    monkeypatch.setattr(subgraph_mkldnn, '_fma',
                        lambda y, s, k: y + s.astype(np.float32) * np.float32(k))
    assert (run() != want).any()


@pytest.mark.parametrize('lo,hi', [(0.0, 1.0), (-0.7, 1.3)])
def test_calibrated_quantize_same_bits_with_and_without_the_kernel(monkeypatch, lo, hi):
    """_contrib_quantize_v2 with a calibrated range: the backend's scaled reorder (float32
    in, uint8/int8 out) rounds halves to even and saturates as NumPy does."""
    import symgraph as mx
    from symgraph.ops import quantized
    be = _backend()
    x = RNG.uniform(-1.5, 1.5, (4, 3, 10, 10)).astype(np.float32)
    real = max(abs(lo), abs(hi))
    q = 127.5 if lo < 0 else 255.5
    x.flat[:40] = (np.arange(40) - 20.5) / np.float32(q / real)      # near halves
    x.flat[40:44] = [np.inf, -np.inf, 1e30, -1e30]

    def run():
        out = mx.nd.contrib.quantize_v2(mx.nd.array(x), min_calib_range=lo,
                                        max_calib_range=hi, out_type='auto')
        return [o.asnumpy() for o in out]

    calls = be.calls.get('int8_requantize', 0)
    fast = run()
    assert be.calls.get('int8_requantize', 0) == calls + 1
    assert fast[0].dtype == np.dtype(np.uint8 if lo >= 0 else np.int8)
    # an image lies channels last, as the int8 convolutions read it (no second reorder)
    assert np.moveaxis(mx.nd.contrib.quantize_v2(
        mx.nd.array(x), min_calib_range=lo, max_calib_range=hi)[0]._data, 1, -1) \
        .flags.c_contiguous
    monkeypatch.setattr(quantized, 'cpu_kernel', lambda name: None)
    slow = run()
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
@pytest.mark.parametrize('spatial', [(2, 2), (7, 7), (3,)])
@pytest.mark.parametrize('channels_last', [False, True])
def test_quantized_global_average_pooling_same_bits_as_the_float64_mean(
        monkeypatch, dtype, spatial, channels_last):
    """Global average pooling of int8/uint8 data by int64 sums: the float64 mean's bits
    (halves, which a 2x2 window makes, rounded to even), whatever the layout."""
    from symgraph.ops import quantized
    info = np.iinfo(dtype)
    x = RNG.randint(info.min, info.max + 1, (3, 5) + spatial).astype(dtype)
    x[0, 0] = info.max                                            # saturating sums
    x[0, 1].flat[0] += 1 if x[0, 1].flat[0] < info.max else -1    # (a half, often)
    if channels_last:
        x = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    op = get_op('_contrib_quantized_pooling')(pool_type='avg', global_pool=True,
                                              kernel=(1,) * len(spatial))
    ins = [x, np.array([-1.0], np.float32), np.array([1.0], np.float32)]
    fast = op.forward(np, ins, [], False)
    monkeypatch.setattr(quantized.QuantizedPooling, '_global_average', lambda self, x: None)
    slow = op.forward(np, ins, [], False)
    assert fast[0].shape == slow[0].shape == (3, 5) + (1,) * len(spatial)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def _quantized_fc_model():
    import symgraph as mx
    rng = np.random.RandomState(3)
    sym = mx.sym.FullyConnected(mx.sym.relu(mx.sym.var('data')), num_hidden=48, name='fc')
    arg = {'fc_weight': mx.nd.array(rng.randn(48, 400).astype(np.float32) * 0.1),
           'fc_bias': mx.nd.array(rng.randn(48).astype(np.float32))}
    x = rng.rand(16, 400).astype(np.float32)
    qsym, qarg, _ = mx.contrib.quantization.quantize_model_mkldnn(
        sym, arg, {}, ctx=mx.cpu(), calib_mode='naive',
        calib_data=mx.io.NDArrayIter(x, batch_size=16), num_calib_examples=16,
        quantized_dtype='auto')
    return qsym, qarg, x


def _forward(qsym, args, x, exe=None):
    import symgraph as mx
    if exe is None:
        exe = qsym.simple_bind(mx.cpu(), grad_req='null', data=x.shape,
                               type_dict=dict({k: v.dtype for k, v in args.items()},
                                              data='float32'))
    for k, v in args.items():
        exe.arg_dict[k][:] = v
    return exe, exe.forward(is_train=False, data=mx.nd.array(x))[0].asnumpy()


def test_quantized_fc_constant_weights_same_bits_and_follow_new_weights(monkeypatch):
    # _sg_mkldnn_fully_connected hands its int8 weights to the inner product as a layer's
    # constant (reordered once per bound executor); the bits are those of NumPy's integer
    # product, and new weights written in (with their new range) are taken
    _backend()
    from symgraph.ops import quantized_nn
    qsym, qarg, x = _quantized_fc_model()
    w = qarg['fc_weight_quantize'].asnumpy()
    args2 = dict(qarg, fc_weight_quantize=w[::-1].copy() // 2,
                 fc_weight_quantize_min=qarg['fc_weight_quantize_min'] / 2,
                 fc_weight_quantize_max=qarg['fc_weight_quantize_max'] / 2)
    exe, out = _forward(qsym, qarg, x)
    _, again = _forward(qsym, qarg, x, exe)
    _, out2 = _forward(qsym, args2, x, exe)
    with monkeypatch.context() as m:
        m.setattr(quantized_nn, '_kernel', lambda name: None)
        _, ref = _forward(qsym, qarg, x)
        _, ref2 = _forward(qsym, args2, x)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(again, ref)
    np.testing.assert_array_equal(out2, ref2)
    assert not np.array_equal(ref, ref2)
