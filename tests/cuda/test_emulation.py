"""symgraph's CUDA kernels against NumPy references.

Every test runs the loader's launchers on the CPU emulator (the kernels
compiled by g++ against cuda/emu/cuda_emu.h) and, on a GPU machine, again on
CuPy (the ``kernels`` fixture).  References are naive NumPy code, plus the
project's own NumPy operators where they exist (convolution, greedy NMS).
"""
import numpy as np
import pytest

from symgraph import cuda
from symgraph.cuda import loader
from symgraph.ops import _conv_impl as conv_ops
from symgraph.ops import detection

# ---------------------------------------------------------------------------
# the emulator itself


def test_emulator_barrier_and_shared_memory(emu_libraries):
    lib = emu_libraries['selftest.cu']
    n = 150  # three blocks, the last one partial
    x = np.arange(n, dtype=np.float32)
    out = np.full(n, -1, np.float32)
    lib.launch('reverse_blocks', (3, 1, 1), (64, 1, 1), (x, out, np.int32(n)))
    # out[j] = in[i] with i the mirror of j inside its 64-slot block (0 past the end)
    j = np.arange(n)
    i = j // 64 * 64 + 63 - j % 64
    expected = np.where(i < n, i, 0).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


def test_emulator_reports_divergent_barrier(emu_libraries):
    out = np.zeros(32, np.int32)
    with pytest.raises(RuntimeError, match='diverged'):
        emu_libraries['selftest.cu'].launch('diverge', (1, 1, 1), (32, 1, 1), (out,))


def test_emulator_thread_and_block_indices(emu_libraries):
    grid, block = (3, 2, 2), (4, 3, 2)
    total = int(np.prod(grid) * np.prod(block))
    counter = np.zeros(1, np.uint64)
    ids = np.full(total, -1, np.int32)
    emu_libraries['selftest.cu'].launch('count_threads', grid, block, (counter, ids))
    assert counter[0] == total
    np.testing.assert_array_equal(ids, np.arange(total))


def test_emulator_rejects_bad_launch(emu_libraries):
    out = np.zeros(1, np.int32)
    with pytest.raises(RuntimeError, match='configuration'):
        emu_libraries['selftest.cu'].launch('diverge', (1, 1, 1), (2048, 1, 1), (out,))


def test_emulator_rejects_wrong_argument_types(emu_libraries):
    lib = emu_libraries['selftest.cu']
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match='numpy.int32'):
        lib.launch('reverse_blocks', (1, 1, 1), (64, 1, 1), (x, x.copy(), 4))
    with pytest.raises(TypeError, match='float32'):
        lib.launch('reverse_blocks', (1, 1, 1), (64, 1, 1), (x.astype(np.float64), x,
                                                             np.int32(4)))


def test_emulator_half_conversions(emu_libraries):
    lib = emu_libraries['selftest.cu']
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    out = np.empty(every.size, np.float32)
    lib.launch('half_to_float', (64, 1, 1), (256, 1, 1), (every, out, np.int32(every.size)))
    np.testing.assert_array_equal(out.view(np.uint32), every.astype(np.float32).view(np.uint32))
    rng = np.random.default_rng(0)
    # normals, subnormals, overflow, exact ties between two halves, and specials
    halves = every[np.isfinite(every)].astype(np.float32)
    ties = (halves[:-1] + halves[1:]) / 2
    floats = np.concatenate([
        rng.standard_normal(5000).astype(np.float32) * 10 ** rng.uniform(-9, 5, 5000),
        ties[np.isfinite(ties)], [65504.0, 65519.99, 65520.0, 1e6, -1e6, 0.0, -0.0,
                                  np.inf, -np.inf, 2.0 ** -25, 2.0 ** -26, 3 * 2.0 ** -26]
    ]).astype(np.float32)
    got = np.empty(floats.size, np.float16)
    lib.launch('float_to_half', (64, 1, 1), (256, 1, 1), (floats, got, np.int32(floats.size)))
    with np.errstate(over='ignore'):  # the overflow to inf is intended
        want = floats.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    nan = np.empty(1, np.float16)
    lib.launch('float_to_half', (1, 1, 1), (1, 1, 1),
               (np.array([np.nan], np.float32), nan, np.int32(1)))
    assert np.isnan(nan[0])


# ---------------------------------------------------------------------------
# im2col / col2im


def _naive_im2col(x, kernel, stride, pad, dilate):
    """(N, C, H, W) -> (N, C*KH*KW, OH*OW) by slicing the padded data per tap."""
    (kh_, kw_), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, pad, dilate
    n, c, h, w = x.shape
    oh = (h + 2 * ph - dh * (kh_ - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw_ - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    cols = np.empty((n, c, kh_, kw_, oh, ow), x.dtype)
    for kh in range(kh_):
        for kw in range(kw_):
            cols[:, :, kh, kw] = xp[:, :, kh * dh:kh * dh + sh * (oh - 1) + 1:sh,
                                    kw * dw:kw * dw + sw * (ow - 1) + 1:sw]
    return cols.reshape(n, c * kh_ * kw_, oh * ow)


def _naive_col2im(cols, shape, kernel, stride, pad, dilate):
    """Scatter-add of the columns back onto (N, C, H, W)."""
    (kh_, kw_), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, pad, dilate
    n, c, h, w = shape
    oh = (h + 2 * ph - dh * (kh_ - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw_ - 1) - 1) // sw + 1
    cols = cols.reshape(n, c, kh_, kw_, oh, ow)
    acc = np.zeros((n, c, h + 2 * ph, w + 2 * pw), cols.dtype)
    for kh in range(kh_):
        for kw in range(kw_):
            acc[:, :, kh * dh:kh * dh + sh * (oh - 1) + 1:sh,
                kw * dw:kw * dw + sw * (ow - 1) + 1:sw] += cols[:, :, kh, kw]
    return acc[:, :, ph:ph + h, pw:pw + w]


# (x shape, kernel, stride, pad, dilate)
CONV_CASES = [
    ((2, 3, 7, 5), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 2, 9, 6), (3, 2), (2, 1), (1, 0), (1, 2)),
    ((3, 1, 5, 8), (1, 1), (1, 1), (0, 0), (1, 1)),
    ((2, 4, 6, 7), (2, 3), (3, 2), (2, 1), (2, 1)),
    ((1, 5, 4, 4), (4, 4), (1, 1), (0, 0), (1, 1)),
    ((2, 2, 11, 3), (5, 1), (2, 3), (3, 2), (2, 1)),
    ((1, 2, 20, 17), (3, 3), (1, 1), (1, 1), (1, 1)),     # a plane of 340 > 256 positions
    ((3, 2, 3, 3), (3, 3), (1, 1), (0, 0), (1, 1)),       # a 1 x 1 output plane
]


@pytest.fixture(params=[None, 1], ids=['grid', 'one-block'])
def plane_caps(request, monkeypatch):
    """The loader's grid caps as they are, or one block on each axis: a thread then
    strides over many planes and many positions of each."""
    if request.param is not None:
        monkeypatch.setattr(loader, 'MAX_BLOCKS', request.param)
        monkeypatch.setattr(loader, 'MAX_PLANE_BLOCKS', request.param)
    return request.param


def _to_layout(cols, layout):
    """(N, K, P) columns in ``layout``."""
    return np.ascontiguousarray(cols.transpose(1, 0, 2)) if layout == 'knl' else cols


@pytest.mark.parametrize('layout', loader.LAYOUTS)
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('case', CONV_CASES, ids=str)
def test_im2col(kernels, case, dtype, layout, plane_caps):
    shape, kernel, stride, pad, dilate = case
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    cols = kernels(loader.im2col, x, kernel, stride, pad, dilate, layout=layout)
    ref = _naive_im2col(x, kernel, stride, pad, dilate)
    assert cols.dtype == dtype
    np.testing.assert_array_equal(cols, _to_layout(ref, layout))
    oh, ow = loader.conv_output_shape(shape, kernel, stride, pad, dilate)
    k = shape[1] * kernel[0] * kernel[1]
    assert cols.shape == ((k, shape[0]) if layout == 'knl' else (shape[0], k)) + (oh * ow,)


@pytest.mark.parametrize('layout', loader.LAYOUTS)
@pytest.mark.parametrize('case', CONV_CASES, ids=str)
def test_col2im(kernels, case, layout, plane_caps):
    shape, kernel, stride, pad, dilate = case
    rng = np.random.default_rng(2)
    cols = _naive_im2col(np.zeros(shape), kernel, stride, pad, dilate)
    cols = rng.standard_normal(cols.shape)
    got = kernels(loader.col2im, _to_layout(cols, layout), shape, kernel, stride, pad, dilate,
                  layout=layout)
    np.testing.assert_allclose(got, _naive_col2im(cols, shape, kernel, stride, pad, dilate),
                               rtol=1e-13, atol=1e-13)
    # col2im is the adjoint of im2col: <im2col(x), cols> == <x, col2im(cols)>
    x = rng.standard_normal(shape)
    lhs = np.vdot(kernels(loader.im2col, x, kernel, stride, pad, dilate, layout=layout),
                  _to_layout(cols, layout))
    np.testing.assert_allclose(lhs, np.vdot(x, got), rtol=1e-12)


def test_layout_is_checked(emu):
    with pytest.raises(ValueError, match='layout'):
        loader.im2col(np.zeros((1, 1, 3, 3)), (2, 2), layout='nlk', backend=emu)


def test_col2im_float32(kernels):
    shape, kernel, stride, pad, dilate = CONV_CASES[3]
    cols = _naive_im2col(np.zeros(shape), kernel, stride, pad, dilate)
    cols = np.random.default_rng(3).standard_normal(cols.shape).astype(np.float32)
    got = kernels(loader.col2im, cols, shape, kernel, stride, pad, dilate)
    assert got.dtype == np.float32
    ref = _naive_col2im(cols.astype(np.float64), shape, kernel, stride, pad, dilate)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_conv1d_is_conv2d_with_unit_height(kernels):
    x = np.random.default_rng(4).standard_normal((2, 3, 13))
    cols = kernels(loader.im2col, x, (3,), (2,), (2,), (3,))
    ref = _naive_im2col(x[:, :, None, :], (1, 3), (1, 2), (0, 2), (1, 3))
    np.testing.assert_array_equal(cols, ref)
    back = kernels(loader.col2im, cols, x.shape, (3,), (2,), (2,), (3,))
    ref = _naive_col2im(cols, (2, 3, 1, 13), (1, 3), (1, 2), (0, 2), (1, 3))
    np.testing.assert_allclose(back, ref[:, :, 0], rtol=1e-13, atol=1e-13)


def test_group_channel_offsets(kernels):
    """Groups: im2col/col2im on channels [c0, c0 + C) of the whole array."""
    shape, kernel, stride, pad, dilate = CONV_CASES[1]
    shape = (2, 6) + shape[2:]
    x = np.random.default_rng(5).standard_normal(shape)
    cols = kernels(loader.im2col, x, kernel, stride, pad, dilate, c0=2, channels=3)
    np.testing.assert_array_equal(cols, _naive_im2col(x[:, 2:5], kernel, stride, pad, dilate))
    out = np.full(shape, 7.0)
    back = kernels(loader.col2im, cols, shape, kernel, stride, pad, dilate, c0=2, out=out)
    np.testing.assert_allclose(back[:, 2:5], _naive_col2im(cols, (2, 3) + shape[2:], kernel,
                                                           stride, pad, dilate), rtol=1e-13)
    np.testing.assert_array_equal(back[:, :2], 7.0)
    np.testing.assert_array_equal(back[:, 5:], 7.0)


@pytest.mark.parametrize('groups', [1, 2])
def test_im2col_matches_project_convolution(kernels, groups):
    """im2col + a batched GEMM reproduces ops._conv_impl.conv_forward."""
    shape, kernel, stride, pad, dilate = CONV_CASES[3]
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape)
    f, cg = 4, shape[1] // groups
    w = rng.standard_normal((f, cg) + kernel)
    fg = f // groups
    outs = []
    for g in range(groups):
        cols = kernels(loader.im2col, x, kernel, stride, pad, dilate, c0=g * cg, channels=cg)
        outs.append(w[g * fg:(g + 1) * fg].reshape(fg, -1) @ cols)
    y = np.concatenate(outs, axis=1)
    ref = conv_ops.conv_forward(np, x, w, None, stride, pad, dilate, groups)
    np.testing.assert_allclose(y.reshape(ref.shape), ref, rtol=1e-12, atol=1e-12)


def test_conv_argument_errors():
    x = np.zeros((1, 2, 3, 3), np.float32)
    with pytest.raises(ValueError, match='larger than'):
        loader.conv_output_shape(x.shape, (5, 5))
    with pytest.raises(ValueError, match='channels'):
        loader._conv_args(x.shape, 3, 0, (1, 1), None, None, None)
    with pytest.raises(TypeError, match='float32 or float64'):
        loader._suffix(np.int32)


# ---------------------------------------------------------------------------
# batch normalisation


def _bn_ref(x, gamma, beta, eps, fix_gamma):
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=(0, 2)), x64.var(axis=(0, 2))
    g = np.ones_like(mean) if fix_gamma else gamma.astype(np.float64)
    y = (x64 - mean[:, None]) / np.sqrt(var[:, None] + eps) * g[:, None] + beta[:, None]
    return mean, var, y


def _bn_backward_ref(dy, x, mean, var, gamma, eps, fix_gamma, use_global_stats):
    dy, x = dy.astype(np.float64), x.astype(np.float64)
    inv = 1 / np.sqrt(var.astype(np.float64) + eps)[:, None]
    g = np.ones(x.shape[1]) if fix_gamma else gamma.astype(np.float64)
    xhat = (x - mean.astype(np.float64)[:, None]) * inv
    sdy, sdyx = dy.sum(axis=(0, 2)), (dy * xhat).sum(axis=(0, 2))
    if use_global_stats:
        dx = dy * g[:, None] * inv
    else:
        m = x.shape[0] * x.shape[2]
        dx = g[:, None] * inv * (dy - sdy[:, None] / m - xhat * sdyx[:, None] / m)
    return dx, (np.zeros_like(sdyx) if fix_gamma else sdyx), sdy


# channels not a multiple of anything; N*S from one element to several blocks
# (2000, 2, 3): a thread's stride over (N, S) spans many rows (division-free walk)
BN_SHAPES = [(2, 3, 5), (1, 1, 1), (4, 7, 1), (3, 5, 700), (4, 3, 5000), (1, 300, 2),
             (2000, 2, 3)]


@pytest.mark.parametrize('shape', BN_SHAPES, ids=str)
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_batchnorm_stats(kernels, shape, dtype):
    x = (np.random.default_rng(7).standard_normal(shape) * 3 + 2).astype(dtype)
    mean, var, inv = kernels(loader.batchnorm_stats, x, 1e-3)
    ref_mean, ref_var, _ = _bn_ref(x, None, np.zeros(shape[1]), 1e-3, True)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert mean.dtype == var.dtype == inv.dtype == dtype
    np.testing.assert_allclose(mean, ref_mean, rtol=tol, atol=tol)
    np.testing.assert_allclose(var, ref_var, rtol=tol, atol=tol)
    np.testing.assert_allclose(inv, 1 / np.sqrt(ref_var + 1e-3), rtol=tol, atol=tol)


def test_batchnorm_stats_large_mean_float32(kernels):
    """Welford keeps float32 accurate at mean 1e4, std 0.5 over 640k elements/channel."""
    rng = np.random.default_rng(8)
    x = (1e4 + 0.5 * rng.standard_normal((16, 2, 40000))).astype(np.float32)
    mean, var, _ = kernels(loader.batchnorm_stats, x)
    ref_mean, ref_var, _ = _bn_ref(x, None, np.zeros(2), 1e-3, True)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6)
    np.testing.assert_allclose(var, ref_var, rtol=1e-3)
    # the one-pass E[x^2] - E[x]^2 in float32 is far off here: the test has teeth
    x2 = (x * x).astype(np.float32).mean(axis=(0, 2), dtype=np.float32)
    naive = x2 - x.mean(axis=(0, 2), dtype=np.float32) ** 2
    assert np.abs(naive / ref_var - 1).max() > 1e-2


def test_batchnorm_stats_empty(kernels):
    mean, var, inv = kernels(loader.batchnorm_stats, np.zeros((0, 3, 4), np.float32), 0.25)
    np.testing.assert_array_equal(mean, 0)
    np.testing.assert_array_equal(var, 0)
    np.testing.assert_array_equal(inv, 2)
    mean, var, inv = kernels(loader.batchnorm_stats, np.zeros((2, 0, 4), np.float32))
    assert mean.shape == var.shape == inv.shape == (0,)
    # no spatial extent (data (2, 3, 0, 4) reshaped): the index walk must not divide by 0
    mean, var, inv = kernels(loader.batchnorm_stats, np.zeros((2, 3, 0), np.float32), 0.25)
    np.testing.assert_array_equal(mean, 0)
    np.testing.assert_array_equal(inv, 2)
    x = np.zeros((2, 3, 0), np.float32)
    dx, dgamma, dbeta = kernels(loader.batchnorm_backward, x, x, mean, inv, np.ones(3, np.float32),
                                False)
    assert dx.shape == (2, 3, 0)
    np.testing.assert_array_equal(dgamma, 0)
    np.testing.assert_array_equal(dbeta, 0)


@pytest.fixture(params=[None, 1])
def max_blocks(request, monkeypatch):
    """The loader's grid cap as it is, or 1 block: every thread then strides over many
    elements and channels (the kernels' division-free index walk)."""
    if request.param is not None:
        monkeypatch.setattr(loader, 'MAX_BLOCKS', request.param)
    return request.param


@pytest.mark.parametrize('fix_gamma', [True, False])
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('shape', [(2, 3, 5), (3, 5, 700), (50, 7, 3)], ids=str)
def test_batchnorm_forward(kernels, shape, dtype, fix_gamma, max_blocks):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape).astype(dtype)
    gamma = rng.uniform(0.5, 2, shape[1]).astype(dtype)
    beta = rng.standard_normal(shape[1]).astype(dtype)
    ref_mean, ref_var, ref_y = _bn_ref(x, gamma, beta, 1e-3, fix_gamma)
    mean, var, inv = kernels(loader.batchnorm_stats, x, 1e-3)
    y = kernels(loader.batchnorm_forward, x, mean, inv, gamma, beta, fix_gamma)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_allclose(y, ref_y, rtol=tol, atol=tol)


def test_batchnorm_update_moving(kernels):
    rng = np.random.default_rng(10)
    mm, mv, mean, var = (rng.standard_normal(7) for _ in range(4))
    got_mm, got_mv = kernels(loader.batchnorm_update_moving, mm.copy(), mv.copy(), mean, var,
                             0.9)
    np.testing.assert_allclose(got_mm, mm * 0.9 + mean * 0.1, rtol=1e-14)
    np.testing.assert_allclose(got_mv, mv * 0.9 + var * 0.1, rtol=1e-14)


def test_batchnorm_backward_reference_is_the_gradient():
    """The NumPy backward reference against central differences of the forward."""
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    gamma = rng.uniform(0.5, 2, 3)

    def loss(xv, gv):
        return (_bn_ref(xv, gv, np.zeros(3), 1e-3, False)[2] * w).sum()

    mean, var, _ = _bn_ref(x, gamma, np.zeros(3), 1e-3, False)
    dx, dgamma, dbeta = _bn_backward_ref(w, x, mean, var, gamma, 1e-3, False, False)
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1e-6
        num[i] = (loss(x + e, gamma) - loss(x - e, gamma)) / 2e-6
    np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-7)
    num_g = [(loss(x, gamma + 1e-6 * np.eye(3)[c]) - loss(x, gamma - 1e-6 * np.eye(3)[c]))
             / 2e-6 for c in range(3)]
    np.testing.assert_allclose(dgamma, num_g, rtol=1e-5)
    np.testing.assert_allclose(dbeta, w.sum(axis=(0, 2)), rtol=1e-12)


@pytest.mark.parametrize('use_global_stats', [False, True])
@pytest.mark.parametrize('fix_gamma', [True, False])
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('shape', [(2, 3, 5), (4, 3, 5000), (1, 1, 1), (50, 7, 3)], ids=str)
def test_batchnorm_backward(kernels, shape, dtype, fix_gamma, use_global_stats, max_blocks):
    rng = np.random.default_rng(12)
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    gamma = rng.uniform(0.5, 2, shape[1]).astype(dtype)
    if use_global_stats:  # the moving statistics, unrelated to this batch
        mean = rng.standard_normal(shape[1]).astype(dtype)
        var = rng.uniform(0.5, 2, shape[1]).astype(dtype)
    else:
        stats = _bn_ref(x, gamma, np.zeros(shape[1]), 1e-3, fix_gamma)
        mean, var = stats[0].astype(dtype), stats[1].astype(dtype)
    inv = (1 / np.sqrt(var.astype(np.float64) + 1e-3)).astype(dtype)
    dx, dgamma, dbeta = kernels(loader.batchnorm_backward, dy, x, mean, inv, gamma,
                                fix_gamma, use_global_stats)
    ref = _bn_backward_ref(dy, x, mean, var, gamma, 1e-3, fix_gamma, use_global_stats)
    big = shape[0] * shape[2] > 1000  # float32 sums over many elements
    tol = (2e-4 if big else 2e-5) if dtype == np.float32 else 1e-10
    for got, want in zip((dx, dgamma, dbeta), ref):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max(initial=1))
    if fix_gamma:
        np.testing.assert_array_equal(dgamma, 0)


def test_batchnorm_argument_errors():
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match='spatial'):
        loader._check3d(np.zeros((2, 3)))
    with pytest.raises(TypeError, match='mixed dtypes'):
        loader._same_dtype(x, x.astype(np.float64))
    c3, c2 = np.ones(3, np.float32), np.ones(2, np.float32)
    # per-channel arrays shorter than C would be read past their end on the device
    with pytest.raises(ValueError, match=r'gamma must have shape \(3,\).*\(2,\)'):
        loader.batchnorm_forward(x, c3, c3, c2, c3, False, backend=_NO_LAUNCH)
    with pytest.raises(ValueError, match=r'inv_std must have shape \(3,\)'):
        loader.batchnorm_backward(x, x, c3, c2, c3, False, backend=_NO_LAUNCH)
    with pytest.raises(ValueError, match=r'var must have shape \(3,\)'):
        loader.batchnorm_update_moving(c3.copy(), c3.copy(), c3, c2, 0.9, backend=_NO_LAUNCH)


class _NoLaunch:
    """A backend that must not be reached: argument checks come first."""
    xp = np

    def launch(self, *args):
        raise AssertionError('launched %r despite bad arguments' % (args[:2],))


_NO_LAUNCH = _NoLaunch()


def test_loader_checks_32_bit_indices_and_block_sizes(monkeypatch):
    # im2col's row index k = C * KH * KW is a 32-bit int in the kernel
    with pytest.raises(ValueError, match='32-bit'):
        loader._conv_args((1, 2 ** 29, 3, 3), None, 0, (3, 3), None, (1, 1), None)
    with pytest.raises(ValueError, match='kernel must be >= 1'):
        loader.col2im(np.zeros((1, 0, 4), np.float32), (1, 1, 2, 2), (0, 2),
                      backend=_NO_LAUNCH)
    # the shared arrays are sized from the block size the launches use, read at each call
    monkeypatch.setattr(loader, 'REDUCE_THREADS', 128)
    assert '-DSG_REDUCE_THREADS=128' in loader.compile_options()


# ---------------------------------------------------------------------------
# NMS


def _iou(a, b):
    def area(r):
        return 0.0 if r[2] < r[0] or r[3] < r[1] else (r[2] - r[0]) * (r[3] - r[1])
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    inter = iw * ih if iw > 0 and ih > 0 else 0.0
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def _naive_nms(boxes, thresh, ids=None):
    keep = []
    for i in range(len(boxes)):
        if all(not ((ids is None or ids[i] == ids[k]) and _iou(boxes[k], boxes[i]) > thresh)
               for k in keep):
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def _random_boxes(n, dtype, seed):
    """Clustered boxes (so that suppression chains happen), some degenerate."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 40, (max(1, n // 8), 2))[rng.integers(0, max(1, n // 8), n)]
    centres = centres + rng.normal(0, 1.5, (n, 2))
    size = rng.uniform(1, 6, (n, 2))
    boxes = np.concatenate([centres - size / 2, centres + size / 2], axis=1)
    flip = rng.random(n) < 0.05
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]  # x2 < x1: area 0, suppresses nothing
    return boxes.astype(dtype)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('n', [0, 1, 63, 64, 65, 1000])
def test_nms_keep(kernels, n, dtype):
    boxes = _random_boxes(n, dtype, seed=n)
    keep = kernels(loader.nms_keep, boxes, 0.3)
    assert keep.dtype == np.bool_ and keep.shape == (n,)
    ref = _naive_nms(boxes.astype(np.float64), dtype(0.3))
    np.testing.assert_array_equal(np.flatnonzero(keep), ref)
    if n:
        assert 0 < keep.sum() < n or n == 1
        # the project's NumPy NMS agrees (scores decreasing in input order)
        scores = np.linspace(1, 0, n).astype(dtype)
        np.testing.assert_array_equal(np.flatnonzero(keep),
                                      detection.nms_indices(np, boxes, scores, 0.3))


@pytest.mark.parametrize('n', [65, 300])
def test_nms_keep_per_class(kernels, n):
    boxes = _random_boxes(n, np.float32, seed=100 + n)
    ids = np.random.default_rng(n).integers(0, 3, n).astype(np.float32)
    keep = kernels(loader.nms_keep, boxes, 0.25, ids=ids)
    np.testing.assert_array_equal(np.flatnonzero(keep),
                                  _naive_nms(boxes.astype(np.float64), np.float32(0.25), ids))
    assert not np.array_equal(keep, kernels(loader.nms_keep, boxes, 0.25))


def test_nms_threshold_is_strict_like_mxnet(kernels):
    # IoU of these two is exactly 1/3 (MXNet's box_nms: no +1 on widths)
    boxes = np.array([[0, 0, 2, 2], [1, 0, 3, 2], [5, 5, 4, 4], [5, 5, 4, 4.5]], np.float32)
    np.testing.assert_array_equal(kernels(loader.nms_keep, boxes, 0.3), [1, 0, 1, 1])
    np.testing.assert_array_equal(kernels(loader.nms_keep, boxes, 0.4), [1, 1, 1, 1])
    same = np.tile(np.array([[0, 0, 1, 1]], np.float32), (70, 1))
    np.testing.assert_array_equal(np.flatnonzero(kernels(loader.nms_keep, same, 0.99)), [0])


def test_nms_geometry(emu):
    emu.launches.clear()
    loader.nms_keep(_random_boxes(130, np.float32, 1), 0.5, backend=emu)
    (mask, grid, block), (sweep, sgrid, sblock) = emu.launches
    assert (mask, grid, block) == ('nms_mask_f32', (3, 3, 1), (64, 1, 1))
    assert (sweep, sgrid) == ('nms_sweep', (1, 1, 1)) and sblock[0] % 32 == 0


# ---------------------------------------------------------------------------
# ring_add


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('n', [0, 1, 257, 3001])
def test_ring_add(kernels, n, dtype):
    rng = np.random.default_rng(n)
    dst = (rng.standard_normal(n) * 100).astype(dtype)
    src = (rng.standard_normal(n) * 100).astype(dtype)
    got = kernels(loader.ring_add, dst.copy(), src)
    # float16 adds in float and rounds once: exactly NumPy's float16 addition
    np.testing.assert_array_equal(got, dst + src)


def test_ring_add_in_place_on_chunks(emu):
    dst, src = np.arange(10.0), np.ones(10)
    loader.ring_add(dst[3:7], src[3:7], backend=emu)
    np.testing.assert_array_equal(dst, [0, 1, 2, 4, 5, 6, 7, 7, 8, 9])
    with pytest.raises(ValueError, match='contiguous'):
        loader.ring_add(dst[::2], src[::2], backend=emu)


# ---------------------------------------------------------------------------
# the loader on a real GPU


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason='needs CuPy and a CUDA GPU')
def test_modules_compile_once_per_device():
    for filename, names in loader.KERNEL_FILES.items():
        for name in names:
            assert loader.get_kernel(filename, name) is not None
    device = cuda.import_cupy().cuda.Device().id
    keys = [k for k in loader._modules if k[1] == device]
    assert sorted(k[0] for k in keys) == sorted(loader.KERNEL_FILES)
    loader.get_kernel('nms.cu', 'nms_sweep')
    assert len([k for k in loader._modules if k[1] == device]) == len(keys)
