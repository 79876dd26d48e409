"""The cuDNN GPU backend (symgraph/backend/cudnn).

Without a GPU (this file's first part): the geometry in pure Python, the library found,
loaded and its version parsed, every declared function resolved in the real library,
cuDNN's own error strings, descriptors set and output shapes asked of the real library
(cuDNN answers those without a GPU), and the routing's fallback with exactly one log line.
The library tests skip when no cuDNN is installed (``pip install nvidia-cudnn-cu13``, or
point ``SYMGRAPH_CUDNN_LIB`` at a ``libcudnn.so.9``).

With a GPU (``-m gpu``, ``bench/run_gpu.sh cudnn``): cuDNN's results against symgraph's
own CUDA kernels and NumPy on random shapes. NOT RUN YET: no GPU was lent when these
were written.
"""
import ctypes
import logging
import types

import numpy as np
import pytest

from symgraph.backend import cudnn
from symgraph.backend.cudnn import _lib, geometry as geo
from symgraph.backend.cudnn.core import Backend


# ----------------------------------------------------------------- pure Python
def test_parse_version():
    assert _lib.parse_version(92801) == (9, 28, 1)
    assert _lib.parse_version(90100) == (9, 1, 0)
    assert _lib.parse_version(8907) == (8, 9, 7)
    assert _lib.parse_version(7605) == (7, 6, 5)


def test_as_4d_pads_to_four_axes():
    assert geo.as_4d((2, 3, 7), (21, 7, 1)) == ((2, 3, 1, 7), (21, 7, 7, 1))
    assert geo.as_4d((5, 4), (4, 1)) == ((5, 4, 1, 1), (4, 1, 1, 1))
    assert geo.as_4d((1, 2, 3, 4, 5), (120, 60, 20, 5, 1)) == ((1, 2, 3, 4, 5),
                                                                (120, 60, 20, 5, 1))
    assert geo.as_4d((3,), (1,)) is None
    assert geo.as_4d((1,) * 9, (1,) * 9) is None


def test_tensor_desc_nchw_and_nhwc_views():
    x = np.zeros((2, 3, 4, 5), np.float32)
    assert geo.tensor_desc(x.dtype, x.shape, x.strides) == (_lib.FLOAT, (2, 3, 4, 5),
                                                            (60, 20, 5, 1))
    last = np.zeros((2, 4, 5, 3), np.float64)          # NHWC buffer, NCHW view
    view = np.moveaxis(last, -1, 1)
    assert geo.tensor_desc(view.dtype, view.shape, view.strides) == (
        _lib.DOUBLE, (2, 3, 4, 5), (60, 1, 15, 3))
    assert geo.is_packed(view.shape, geo.elem_strides(view.strides, 8)) == 'NHWC'
    assert geo.is_packed(x.shape, geo.elem_strides(x.strides, 4)) == 'NCHW'
    assert geo.tensor_desc(np.int32, x.shape, x.strides) is None            # dtype
    assert geo.tensor_desc(x.dtype, x[:, :, ::-1].shape, x[:, :, ::-1].strides) is None
    assert geo.tensor_desc(x.dtype, (0, 3, 4, 5), x.strides) is None         # empty


def test_filter_format():
    w = np.zeros((8, 3, 3, 3), np.float32)
    assert geo.filter_format(w.shape, geo.elem_strides(w.strides, 4)) == _lib.NCHW
    wl = np.moveaxis(np.zeros((8, 3, 3, 4), np.float32), -1, 1)      # (8, 4, 3, 3) NHWC
    assert geo.filter_format(wl.shape, geo.elem_strides(wl.strides, 4)) == _lib.NHWC
    wt = np.zeros((3, 8, 3, 3), np.float32).transpose(1, 0, 2, 3)
    assert geo.filter_format(wt.shape, geo.elem_strides(wt.strides, 4)) is None
    # length-1 axes may have any stride
    assert geo.filter_format((8, 1, 3, 3), (9, 123, 3, 1)) == _lib.NCHW


def _out_size(s, k, p, t, d):
    return (s + 2 * p - d * (k - 1) - 1) // t + 1


def test_conv_params_and_out_shape():
    rng = np.random.default_rng(0)
    for _ in range(200):
        nd = int(rng.integers(1, 4))
        g = int(rng.choice([1, 2, 4]))
        c, f = g * int(rng.integers(1, 4)), g * int(rng.integers(1, 4))
        k = tuple(int(v) for v in rng.integers(1, 4, nd))
        s = tuple(int(v) for v in rng.integers(1, 9, nd))
        p = tuple(int(v) for v in rng.integers(0, 3, nd))
        t = tuple(int(v) for v in rng.integers(1, 3, nd))
        d = tuple(int(v) for v in rng.integers(1, 3, nd))
        xs, ws = (2, c) + s, (f, c // g) + k
        got = geo.conv_params(xs, ws, p, t, d, g)
        out = [_out_size(*a) for a in zip(s, k, p, t, d)]
        if min(out) <= 0:
            assert got is None
            continue
        assert geo.conv_out_shape(xs, ws, p, t, d) == (2, f) + tuple(out)
        want = (p, t, d) if nd > 1 else ((0,) + p, (1,) + t, (1,) + d)
        assert got == want
    xs, ws = (1, 4, 8, 8), (6, 2, 3, 3)
    assert geo.conv_params(xs, ws, (1, 1), (1, 1), (1, 1), 2, after=(1, 2)) is None
    assert geo.conv_params(xs, ws, (-1, 0), (1, 1), (1, 1), 2) is None     # crop
    assert geo.conv_params(xs, ws, (1, 1), (1, 1), (1, 1), 3) is None      # 4 % 3
    assert geo.conv_params(xs, (6, 4, 3, 3), (1, 1), (1, 1), (1, 1), 2) is None  # C/g
    assert geo.conv_params(xs, ws, (1, 1), (1, 1), (1, 1), 2, after=(1, 1)) == \
        ((1, 1), (1, 1), (1, 1))


def test_conv_key_separates_what_the_choice_depends_on():
    base = dict(direction='fwd', dtype=np.float32, xd=((2, 3, 8, 8), (192, 64, 8, 1)),
                wd=((4, 3, 3, 3), _lib.NCHW), yd=((2, 4, 8, 8), (256, 64, 8, 1)),
                params=((1, 1), (1, 1), (1, 1)), groups=1, math=_lib.FMA_MATH)
    k0 = geo.conv_key(**base)
    assert k0 == geo.conv_key(**base) and hash(k0) == hash(geo.conv_key(**base))
    changes = dict(direction='bwd_data', dtype=np.float16,
                   xd=((2, 3, 8, 8), (192, 1, 24, 3)), wd=((4, 3, 3, 3), _lib.NHWC),
                   params=((0, 0), (1, 1), (1, 1)), groups=3, math=_lib.TENSOR_OP_MATH)
    for name, value in changes.items():
        assert geo.conv_key(**dict(base, **{name: value})) != k0, name


def _perf(algo, status=0, memory=0, math=_lib.FMA_MATH):
    return types.SimpleNamespace(algo=algo, status=status, memory=memory, mathType=math)


def test_choose_algo_ranks_limit_and_math():
    perfs = [_perf(1, status=3000), _perf(2, memory=1 << 31), _perf(3, math=1),
             _perf(4, memory=100), _perf(5)]
    assert geo.choose_algo(perfs, 1 << 30) == (3, 0, 1)
    assert geo.choose_algo(perfs, 1 << 30, (_lib.FMA_MATH,)) == (4, 100, _lib.FMA_MATH)
    assert geo.choose_algo(perfs, 50, (_lib.FMA_MATH,)) == (5, 0, _lib.FMA_MATH)
    assert geo.choose_algo(perfs[:3], 1 << 30, (_lib.FMA_MATH,)) is None
    # (real structs too)
    arr = (_lib.AlgoPerf * 2)()
    arr[0].status, arr[1].algo, arr[1].mathType = 9, 7, _lib.FMA_MATH
    assert geo.choose_algo(arr, 0, geo.allowed_math(np.float32, False)) == (7, 0, 3)
    assert geo.allowed_math(np.float32, True) is None
    assert geo.allowed_math(np.float16, False) is None


def test_workspace_lending():
    made = []

    def alloc(n):
        made.append(n)
        return np.empty(n, np.uint8)
    ws = geo.Workspace(alloc, limit=1 << 20)
    assert ws.take(0, 0) is None and made == []
    a = ws.take(0, 100)
    assert a.nbytes == 100 and made == [100]
    assert ws.take(0, 50) is a                   # kept, not remade
    b = ws.take(0, 200)
    assert b.nbytes == 200 and made == [100, 200] and ws.kept_bytes(0) == 200
    assert ws.take(1, 10).nbytes == 10          # another device: its own buffer
    lent = np.empty(1000, np.uint8)
    ws.lend(0, lent)
    assert ws.take(0, 500) is lent and made == [100, 200, 10]
    assert ws.take(0, 5000).nbytes == 5000      # too small a loan: kept buffer grows
    ws.lend(0, None)
    assert ws.take(0, 500) is not lent


class _FakeLib:
    """Records the calls of Backend._algo (cuDNN's heuristics answer: algo 5 on tensor
    cores first, then algo 2 with FMA math and a 4096-byte workspace)."""

    def __init__(self):
        self.calls = []

    def cudnnGetVersion(self):
        return 90000

    def cudnnGetConvolutionForwardAlgorithm_v7(self, h, a, b, conv, c, n, count, perfs):
        self.calls.append('v7')
        perfs[0].algo, perfs[0].mathType = 5, _lib.TENSOR_OP_MATH
        perfs[1].algo, perfs[1].mathType, perfs[1].memory = 2, _lib.FMA_MATH, 4096
        count._obj.value = 2
        return 0

    def cudnnSetConvolutionMathType(self, conv, math):
        self.calls.append(('math', math))
        return 0

    def cudnnGetConvolutionForwardWorkspaceSize(self, h, a, b, conv, c, algo, size):
        self.calls.append(('size', algo))
        size._obj.value = 4096
        return 0


def test_algorithm_chosen_once_per_key_and_math_type_kept():
    fake = _FakeLib()
    be = Backend(fake, 'fake', None)
    conv = types.SimpleNamespace(ptr=None)
    key = geo.conv_key('fwd', np.float32, ((1, 1, 4, 4), (16, 16, 4, 1)),
                       ((1, 1, 3, 3), _lib.NCHW), ((1, 1, 2, 2), (4, 4, 2, 1)),
                       ((0, 0), (1, 1), (1, 1)), 1, _lib.FMA_MATH)
    assert be._algo('fwd', key, None, (1, 2, 3), conv, np.float32) == (2, 4096,
                                                                        _lib.FMA_MATH)
    assert fake.calls == ['v7', ('math', _lib.FMA_MATH), ('size', 2)]
    assert be._algo('fwd', key, None, (1, 2, 3), conv, np.float32) == (2, 4096,
                                                                        _lib.FMA_MATH)
    assert fake.calls[3:] == [('math', _lib.FMA_MATH)]        # cached: no heuristics
    be.tf32 = True                                             # another key: TF32 allowed
    key2 = key[:-1] + (_lib.DEFAULT_MATH,)
    assert be._algo('fwd', key2, None, (1, 2, 3), conv, np.float32)[:1] == (5,)
    assert fake.calls.count('v7') == 2


def test_batchnorm_and_softmax_geometry():
    assert geo.bn_shape((4, 3, 5, 6)) == (4, 3, 30, 1)
    assert geo.bn_shape((4, 3)) == (4, 3, 1, 1)
    assert geo.bn_shape((4, 3, 2, 2, 2)) == (4, 3, 8, 1)
    assert geo.bn_shape((4,)) is None
    assert geo.bn_epsilon(1e-3) == 1e-3
    assert geo.bn_epsilon(-1.0) == _lib.BN_MIN_EPSILON
    assert geo.bn_factor(0.9) == pytest.approx(0.1)
    assert geo.softmax_shape((2, 3, 4), -1) == (6, 4, 1, 1)
    assert geo.softmax_shape((2, 3, 4), 1) == (2, 3, 4, 1)
    assert geo.softmax_shape((2, 3, 4), 0) == (1, 2, 12, 1)


def test_pool_params():
    assert geo.pool_params((2, 3, 8, 8), 'max', (3, 3), (2, 2), (1, 1)) == (
        _lib.POOLING_MAX, (3, 3), (1, 1), (2, 2))
    assert geo.pool_params((2, 3, 8), 'avg_include', (3,), (2,), (1,)) == (
        _lib.POOLING_AVG_INCLUDE_PADDING, (1, 3), (0, 1), (1, 2))
    assert geo.pool_params((2, 3, 8, 8), 'avg_exclude', (2, 2), (2, 2), (0, 0))[0] == \
        _lib.POOLING_AVG_EXCLUDE_PADDING
    assert geo.pool_params((2, 3, 8, 8), 'max', (3, 3), (2, 2), (1, 1), (2, 1)) is None
    assert geo.pool_params((2, 3, 8, 8), 'sum', (3, 3), (2, 2), (1, 1)) is None
    assert geo.pool_params((2, 3, 8, 8), 'max', (2, 2), (2, 2), (2, 0)) is None
    assert geo.pool_out_shape((2, 3, 9, 8), (3, 3), (2, 2), (1, 1)) == (2, 3, 5, 4)


# ---------------------------------------------------- the real library, no GPU
@pytest.fixture(scope='module')
def lib():
    got, path = cudnn._open()
    if got is None:
        pytest.skip(path)
    return got, path


def test_library_loads_and_version(lib):
    got, path = lib
    major, minor, patch = _lib.version(got)
    assert (major, minor) >= cudnn.MIN_VERSION
    assert _lib.parse_version(got.cudnnGetVersion()) == (major, minor, patch)
    assert _lib.cudart_version(got) >= 11000


def test_every_declared_function_resolves(lib):
    raw = ctypes.CDLL(lib[1])          # a fresh handle, nothing declared on it
    names = _lib.function_names()
    for name in names:
        assert getattr(raw, name) is not None, name
    # and every cuDNN function the backend's code names is declared
    import inspect
    import re
    from symgraph.backend.cudnn import core
    text = inspect.getsource(core) + inspect.getsource(cudnn)
    used = set(re.findall(r'\b(cudnn[A-Z][A-Za-z0-9_]*)', text))
    for kind in ('Tensor', 'Filter', 'Convolution', 'Pooling', 'Activation'):
        assert "_Desc(self.lib, '%s')" % kind in text
        used |= {'cudnnCreate%sDescriptor' % kind, 'cudnnDestroy%sDescriptor' % kind}
    assert len(used) >= 35
    assert used <= set(names), sorted(used - set(names))


def test_error_strings(lib):
    got = lib[0]
    assert _lib.error_string(got, 0) == 'CUDNN_STATUS_SUCCESS'
    bad = 2000 if _lib.version(got)[0] >= 9 else 3
    assert _lib.error_string(got, bad) == 'CUDNN_STATUS_BAD_PARAM'
    with pytest.raises(_lib.CudnnError, match='cudnnX failed: CUDNN_STATUS_BAD_PARAM'):
        _lib.check(got, bad, 'cudnnX')
    _lib.check(got, 0, 'fine')


def test_descriptors_agree_with_cudnn_output_shapes(lib):
    """Our output-shape arithmetic against cudnnGetConvolutionNdForwardOutputDim, over
    NCHW and NHWC layouts, groups, dilation, 1-D to 3-D (no GPU needed)."""
    be = Backend(lib[0], lib[1], None)
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(150):
        nd = int(rng.integers(1, 4))
        g = int(rng.choice([1, 2, 3]))
        c, f = g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
        k = tuple(int(v) for v in rng.integers(1, 4, nd))
        s = tuple(int(v) for v in rng.integers(3, 10, nd))
        p = tuple(int(v) for v in rng.integers(0, 2, nd))
        t = tuple(int(v) for v in rng.integers(1, 3, nd))
        d = tuple(int(v) for v in rng.integers(1, 3, nd))
        dtype = np.float32 if rng.random() < 0.7 else np.float64
        if rng.random() < 0.5:
            x = np.zeros((2, c) + s, dtype)
        else:
            x = np.moveaxis(np.zeros((2,) + s + (c,), dtype), -1, 1)
        wbuf = np.zeros((f, c // g) + k, dtype)
        params = geo.conv_params(x.shape, wbuf.shape, p, t, d, g)
        if params is None:
            continue
        xd = be.tensor(x)
        fd, (wdims, fmt) = be.filter(wbuf)
        assert fmt == _lib.NCHW
        conv = be.conv_desc(dtype, params, g, be.math_type(dtype))
        n = len(wdims)
        out = (ctypes.c_int * n)()
        _lib.check(lib[0], lib[0].cudnnGetConvolutionNdForwardOutputDim(
            conv.ptr, xd.ptr, fd.ptr, n, out), 'output dim')
        want = geo.conv_out_shape(x.shape, wbuf.shape, p, t, d)
        want4 = geo.as_4d(want, (1,) * len(want))[0]
        assert tuple(out) == want4, (x.shape, wbuf.shape, p, t, d, g)
        checked += 1
    assert checked > 50


def test_pool_descriptor_agrees_with_cudnn(lib):
    be = Backend(lib[0], lib[1], None)
    rng = np.random.default_rng(2)
    for _ in range(60):
        nd = int(rng.integers(1, 4))
        k = tuple(int(v) for v in rng.integers(1, 4, nd))
        s = tuple(int(v) for v in rng.integers(4, 10, nd))
        p = tuple(int(v) for v in rng.integers(0, 2, nd))
        p = tuple(min(a, b - 1) for a, b in zip(p, k))
        t = tuple(int(v) for v in rng.integers(1, 3, nd))
        x = np.zeros((2, 3) + s, np.float32)
        kind = str(rng.choice(['max', 'avg_include', 'avg_exclude']))
        mode, k2, p2, s2 = geo.pool_params(x.shape, kind, k, t, p)
        pool = be._pool_desc(mode, k2, p2, s2)
        xd = be.tensor(x)
        out = (ctypes.c_int * 4)() if nd < 3 else (ctypes.c_int * 5)()
        _lib.check(lib[0], lib[0].cudnnGetPoolingNdForwardOutputDim(
            pool.ptr, xd.ptr, len(out), out), 'pool output dim')
        want = geo.pool_out_shape(x.shape, k, t, p)
        assert tuple(out) == geo.as_4d(want, (1,) * len(want))[0]


def test_bad_descriptor_raises_with_cudnn_text(lib):
    be = Backend(lib[0], lib[1], None)
    with pytest.raises(_lib.CudnnError, match='CUDNN_STATUS_BAD_PARAM'):
        be.tensor_from(_lib.FLOAT, (2, 3, 4, 5), (0, 0, 0, -1))


class _HostArray(np.ndarray):
    """A NumPy array posing as a CuPy one (``.data.ptr``) for the marshalling test."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__['data'][0])


def _fake_cupy():
    def wrap(a):
        return a.view(_HostArray)
    return types.SimpleNamespace(
        empty=lambda shape, dtype=None: wrap(np.empty(shape, dtype)),
        ones_like=lambda a: wrap(np.ones_like(a)), empty_like=lambda a: wrap(np.empty_like(a)),
        sqrt=np.sqrt, uint8=np.uint8,
        cuda=types.SimpleNamespace(
            Device=lambda: types.SimpleNamespace(id=0),
            get_current_stream=lambda: types.SimpleNamespace(ptr=0)))


def test_computing_calls_marshal_their_arguments(lib):
    """Each computing method reaches its cuDNN function with the declared arguments (a
    wrong count or type would be a ctypes error here) and turns cuDNN's refusal into a
    CudnnError: called with a NULL handle, cuDNN answers BAD_PARAM before touching memory.
    (BatchNorm's inference forward and backward are left out: cuDNN 9.28 dereferences the
    handle there before checking it, a segfault under gdb, so only a GPU run checks them.)"""
    be = Backend(lib[0], lib[1], _fake_cupy())
    be.handle = lambda: ctypes.c_void_p(None)
    rng = np.random.default_rng(0)

    def arr(*shape):
        return rng.random(shape).astype(np.float32).view(_HostArray)
    x, w, y = arr(2, 4, 8, 8), arr(6, 2, 3, 3), arr(2, 6, 8, 8)
    g, b, m, v = arr(4), arr(4), arr(4), arr(4) + 1
    one = (1, 1)
    with pytest.raises(_lib.CudnnError, match='cudnnGetConvolutionForwardAlgorithm_v7'):
        be.conv_forward(x, w, None, one, one, one, 2)
    be._algo = lambda *a: (0, 0, _lib.FMA_MATH)        # past the heuristics
    calls = {
        'cudnnConvolutionForward': lambda: be.conv_forward(x, w, None, one, one, one, 2),
        'cudnnConvolutionBackwardData': lambda: be.conv_backward_data(
            y, w, x.shape, one, one, one, 2),
        'cudnnConvolutionBackwardFilter': lambda: be.conv_backward_weights(
            x, y, w.shape, one, one, one, 2),
        'cudnnBatchNormalizationForwardTraining': lambda: be.batchnorm_forward(
            x, g, b, m, v, 1e-3, 0.9, False, True),
        'cudnnPoolingForward': lambda: be.pool_forward(x, 'max', (3, 3), (2, 2), one),
        'cudnnPoolingBackward': lambda: be.pool_backward(
            x, arr(2, 4, 4, 4), arr(2, 4, 4, 4), 'max', (3, 3), (2, 2), one),
        'cudnnSoftmaxForward': lambda: be.softmax_forward(x, 1, True),
        'cudnnSoftmaxBackward': lambda: be.softmax_backward(x, x, -1, False),
        'cudnnActivationForward': lambda: be.activation_forward(x, 'relu'),
        'cudnnActivationBackward': lambda: be.activation_backward(x, x, x, 'tanh'),
    }
    for name, call in calls.items():
        with pytest.raises(_lib.CudnnError, match=name + ' failed: CUDNN_STATUS_BAD_PARAM'):
            call()


# ---------------------------------------------------------------- routing
@pytest.fixture
def fresh(monkeypatch):
    cudnn.reset()
    yield
    cudnn.reset()


def _records(caplog):
    return [r for r in caplog.records if r.name.startswith('symgraph.backend.cudnn')]


def test_off_switch_loads_nothing(fresh, monkeypatch, caplog):
    monkeypatch.setenv('SYMGRAPH_CUDNN', '0')

    def boom(path):
        raise AssertionError('loaded %s although SYMGRAPH_CUDNN=0' % path)
    monkeypatch.setattr(_lib, 'load', boom)
    with caplog.at_level(logging.INFO, logger='symgraph.backend.cudnn'):
        assert cudnn.kernel('conv_forward') is None
        assert cudnn.kernel('batchnorm_forward') is None
        assert cudnn.backend() is None
    assert cudnn.reason() == 'cuDNN off (SYMGRAPH_CUDNN=0)'
    recs = _records(caplog)
    assert len(recs) == 1 and 'SYMGRAPH_CUDNN=0' in recs[0].getMessage()
    assert "symgraph's CUDA kernels" in recs[0].getMessage()


def test_without_gpu_falls_back_with_one_log_line(fresh, monkeypatch, caplog, lib):
    """The library loads, but there is no usable GPU here (no CuPy, the strict stand-in
    or no device): kernels are None and one line says why."""
    import symgraph.backend.cudnn as mod
    monkeypatch.setattr(mod, '_cupy_with_device', lambda: (None, 'no CUDA device'))
    with caplog.at_level(logging.INFO, logger='symgraph.backend.cudnn'):
        for name in cudnn.KERNELS:
            assert cudnn.kernel(name) is None
        assert cudnn.backend() is None
    recs = _records(caplog)
    assert len(recs) == 1, [r.getMessage() for r in recs]
    assert recs[0].getMessage().startswith('no CUDA device')


def test_real_environment_here_falls_back_once(fresh, caplog):
    """Whatever this machine has (no GPU in the suite's CPU runs, the strict stand-in in
    its GPU phase), asking twice logs once; with a GPU and cuDNN the backend loads."""
    with caplog.at_level(logging.INFO, logger='symgraph.backend.cudnn'):
        first = cudnn.backend()
        assert cudnn.backend() is first
        cudnn.kernel('softmax_forward')
    recs = _records(caplog)
    assert len(recs) == 1
    if first is None:
        assert cudnn.reason() and cudnn.reason() in recs[0].getMessage()


def test_driver_older_than_cudnn_is_refused(fresh, monkeypatch, caplog, lib):
    import symgraph.backend.cudnn as mod
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1,
                                    driverGetVersion=lambda: 1020)      # "CUDA 1.2"
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))
    monkeypatch.setattr(mod, '_cupy_with_device', lambda: (fake, None))
    with caplog.at_level(logging.INFO, logger='symgraph.backend.cudnn'):
        assert cudnn.backend() is None
    assert 'the driver supports 1.2' in cudnn.reason()
    recs = _records(caplog)
    assert len(recs) == 1 and recs[0].levelno == logging.WARNING


def test_unknown_kernel_name():
    with pytest.raises(KeyError, match='no cuDNN kernel'):
        cudnn.kernel('conv_sideways')


def test_activation_routing_table_empty_until_measured():
    calls = []
    be = types.SimpleNamespace(activation_forward=lambda *a: calls.append(a) or 'y',
                               activation_backward=lambda *a: calls.append(a) or 'dx')
    from symgraph.backend.cudnn import routing
    fwd = routing.routed(be, 'activation_forward')
    assert fwd(None, 'relu') is None and calls == []
    routing.ACTIVATION_KINDS = ('relu',)
    try:
        assert fwd(None, 'relu') == 'y' and fwd(None, 'tanh') is None
    finally:
        routing.ACTIVATION_KINDS = ()


# ---------------------------------------------------------------- on a GPU
@pytest.fixture
def gpu():
    """(cupy, backend) on a real GPU with cuDNN; skipped elsewhere (the strict stand-in
    included: cuDNN needs device memory)."""
    from symgraph import cuda
    if not cuda.available():
        pytest.skip('no CUDA GPU visible to CuPy')
    cuda.import_cupy()                  # the backend looks for CuPy among the imported
    cudnn.reset()
    be = cudnn.backend()
    if be is None:
        pytest.skip('no cuDNN backend here: %s' % cudnn.reason())
    return be.cp, be


@pytest.mark.gpu
@pytest.mark.parametrize('seed', range(6))
def test_gpu_conv_matches_our_kernels(gpu, monkeypatch, seed):
    cp, be = gpu
    from symgraph.ops import _conv_impl as ci
    rng = np.random.default_rng(seed)
    nd = 2 if seed < 4 else int(rng.integers(1, 4))
    g = int(rng.choice([1, 2]))
    c, f = g * int(rng.integers(1, 5)), g * int(rng.integers(1, 5))
    k = tuple(int(v) for v in rng.integers(1, 4, nd))
    s = tuple(int(v) for v in rng.integers(5, 12, nd))
    p = tuple(int(v) for v in rng.integers(0, 2, nd))
    t = tuple(int(v) for v in rng.integers(1, 3, nd))
    d = tuple(int(v) for v in rng.integers(1, 3, nd))
    for dtype, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        x = rng.standard_normal((3, c) + s).astype(dtype)
        w = rng.standard_normal((f, c // g) + k).astype(dtype)
        b = rng.standard_normal(f).astype(dtype)
        if geo.conv_params(x.shape, w.shape, p, t, d, g) is None:
            pytest.skip('empty output')
        xc, wc, bc = cp.asarray(x), cp.asarray(w), cp.asarray(b)
        if seed % 2:                                  # channels-last buffer, NCHW view
            xc = cp.moveaxis(cp.ascontiguousarray(cp.moveaxis(xc, 1, -1)), -1, 1)
        y = be.conv_forward(xc, wc, bc, t, p, d, g)
        assert y is not None
        dy = cp.asarray(rng.standard_normal(y.shape).astype(dtype))
        dx = be.conv_backward_data(dy, wc, x.shape, t, p, d, g)
        dw = be.conv_backward_weights(xc, dy, w.shape, t, p, d, g)
        with monkeypatch.context() as m:
            m.setattr(cudnn, 'kernel', lambda name: None)
            y0 = ci.conv_forward(cp, xc, wc, bc, t, p, d, g)
            dx0 = ci.conv_backward_data(cp, dy, wc, x.shape, t, p, d, g)
            dw0 = ci.conv_backward_weight(cp, xc, dy, k, t, p, d, g)
        yn = ci.conv_forward(np, x, w, b, t, p, d, g)
        for got, ours in ((y, y0), (dx, dx0), (dw, dw0)):
            scale = float(abs(cp.asnumpy(ours)).max()) + 1
            np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(ours), rtol=tol,
                                       atol=tol * scale)
        np.testing.assert_allclose(cp.asnumpy(y), yn, rtol=tol, atol=tol * 10)


@pytest.mark.gpu
@pytest.mark.parametrize('shape', [(4, 3, 5, 6), (8, 16), (2, 5, 3, 3, 3), (32, 64, 7, 7)])
def test_gpu_batchnorm_matches_our_kernels(gpu, monkeypatch, shape):
    cp, be = gpu
    from symgraph.ops import norm
    rng = np.random.default_rng(len(shape))
    c = shape[1]
    x = cp.asarray(rng.standard_normal(shape).astype(np.float32) * 3 + 1)
    gamma = cp.asarray(rng.random(c).astype(np.float32) + 0.5)
    beta = cp.asarray(rng.standard_normal(c).astype(np.float32))
    mm0 = rng.standard_normal(c).astype(np.float32)
    mv0 = rng.random(c).astype(np.float32) + 0.5
    dy = cp.asarray(rng.standard_normal(shape).astype(np.float32))
    for fix_gamma in (False, True):
        op = types.SimpleNamespace(eps=1e-3, momentum=0.9, fix_gamma=fix_gamma,
                                   use_global_stats=False)
        mm, mv = cp.asarray(mm0), cp.asarray(mv0)
        y, mean, inv = be.batchnorm_forward(x, gamma, beta, mm, mv, 1e-3, 0.9, fix_gamma,
                                            True)
        dx, dg, db = be.batchnorm_backward(dy, x, gamma, mean, inv, 1e-3, fix_gamma)
        mm1, mv1 = cp.asarray(mm0), cp.asarray(mv0)
        with monkeypatch.context() as m:
            m.setattr(cudnn, 'kernel', lambda name: None)
            y0, mean0, inv0 = norm._gpu_bn_forward(cp, op, x, gamma, beta, mm1, mv1, True)
            dx0, dg0, db0 = norm._gpu_bn_backward(cp, op, dy, x, gamma, mean0, inv0)
        for got, ours in ((y, y0), (mean, mean0), (inv, inv0), (mm, mm1), (mv, mv1),
                          (dx, dx0), (dg, dg0), (db, db0)):
            np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(ours), rtol=2e-4,
                                       atol=2e-4)
        yi, _, _ = be.batchnorm_forward(x, gamma, beta, mm, mv, 1e-3, 0.9, fix_gamma, False)
        g = np.ones(c, np.float32) if fix_gamma else cp.asnumpy(gamma)
        bs = (1, c) + (1,) * (len(shape) - 2)
        want = (cp.asnumpy(x) - cp.asnumpy(mm).reshape(bs)) / np.sqrt(
            cp.asnumpy(mv).reshape(bs) + 1e-3) * g.reshape(bs) + cp.asnumpy(beta).reshape(bs)
        np.testing.assert_allclose(cp.asnumpy(yi), want, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize('kind', ['max', 'avg_include', 'avg_exclude'])
def test_gpu_pooling_matches_numpy(gpu, kind):
    cp, be = gpu
    from symgraph.ops.pooling import Pooling
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    ptype = 'max' if kind == 'max' else 'avg'
    op = Pooling(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type=ptype,
                 count_include_pad=kind != 'avg_exclude')
    want = op.forward(np, [x], [], False)[0]
    y = be.pool_forward(cp.asarray(x), kind, (3, 3), (2, 2), (1, 1))
    np.testing.assert_allclose(cp.asnumpy(y), want, rtol=1e-5, atol=1e-6)
    dy = rng.standard_normal(want.shape).astype(np.float32)
    gwant = op.backward(np, [dy], [x], [want], [], [True])[0]
    dx = be.pool_backward(cp.asarray(x), y, cp.asarray(dy), kind, (3, 3), (2, 2), (1, 1))
    np.testing.assert_allclose(cp.asnumpy(dx), gwant, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize('axis', [-1, 1, 0])
@pytest.mark.parametrize('log', [False, True])
def test_gpu_softmax_matches_numpy(gpu, axis, log):
    cp, be = gpu
    from symgraph.ops import softmax as sm
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32) * 4
    want = (sm.log_softmax if log else sm.softmax)(np, x, axis)
    y = be.softmax_forward(cp.asarray(x), axis, log)
    np.testing.assert_allclose(cp.asnumpy(y), want, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(x.shape).astype(np.float32)
    if log:
        gw = g - np.exp(want) * g.sum(axis=axis, keepdims=True)
    else:
        gw = want * (g - (g * want).sum(axis=axis, keepdims=True))
    dx = be.softmax_backward(y, cp.asarray(g), axis, log)
    np.testing.assert_allclose(cp.asnumpy(dx), gw, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize('kind', ['relu', 'sigmoid', 'tanh'])
def test_gpu_activation_matches_numpy(gpu, kind):
    cp, be = gpu
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    f = {'relu': lambda v: np.maximum(v, 0), 'sigmoid': lambda v: 1 / (1 + np.exp(-v)),
         'tanh': np.tanh}[kind]
    y = be.activation_forward(cp.asarray(x), kind)
    np.testing.assert_allclose(cp.asnumpy(y), f(x), rtol=1e-5, atol=1e-6)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    yv = f(x)
    d = {'relu': (x > 0) * dy, 'sigmoid': dy * yv * (1 - yv), 'tanh': dy * (1 - yv ** 2)}
    dx = be.activation_backward(cp.asarray(x), y, cp.asarray(dy), kind)
    np.testing.assert_allclose(cp.asnumpy(dx), d[kind], rtol=1e-5, atol=1e-6)


def test_operators_fall_back_on_the_stand_in_with_one_line(fresh, caplog):
    """On CuPy without a usable cuDNN (here: the strict CPU stand-in) the operators' helpers
    run symgraph's kernels, and the reason is logged once however often they ask."""
    import os
    import sys
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'cuda')
    if here not in sys.path:
        sys.path.insert(0, here)
    import strict_cupy
    from symgraph.ops import _conv_impl as ci
    from symgraph.ops import softmax as sm
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    one = (1, 1)
    with strict_cupy.installed(1) as cp, \
            caplog.at_level(logging.INFO, logger='symgraph.backend.cudnn'):
        y = ci.conv_forward(cp, cp.asarray(x), cp.asarray(w), None, one, one, one, 1)
        dx = ci.conv_backward_data(cp, y, cp.asarray(w), x.shape, one, one, one, 1)
        op = types.SimpleNamespace(temperature=None, use_length=False, dtype=None, axis=-1)
        assert sm._cudnn_softmax(op, cp, cp.asarray(x), False) is None
        y, dx = cp.asnumpy(y), cp.asnumpy(dx)
    np.testing.assert_allclose(y, ci.conv_forward(np, x, w, None, one, one, one, 1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        dx, ci.conv_backward_data(np, y, w, x.shape, one, one, one, 1), rtol=1e-4, atol=1e-4)
    recs = _records(caplog)
    assert len(recs) == 1, [r.getMessage() for r in recs]
    assert "symgraph's CUDA kernels" in recs[0].getMessage()


# ---------------------------------------------------------------- cudnn_off
def _fake_kernels(monkeypatch):
    """Every cuDNN kernel replaced by a fake that records its name and declines (returns
    None), so the operator still computes with symgraph's own kernels."""
    calls = []

    def fake(name):
        return lambda *a, **k: calls.append(name)
    monkeypatch.setitem(cudnn._state, 'kernels', {n: fake(n) for n in cudnn.KERNELS})
    return calls


def _cudnn_off_run(cudnn_off):
    """Convolution, Deconvolution, BatchNorm (training) and Pooling forward and backward on
    mx.gpu(0): the outputs and gradients as NumPy arrays."""
    import symgraph as mx
    rng = np.random.default_rng(3)
    ctx = mx.gpu(0)
    x = mx.nd.array(rng.standard_normal((2, 3, 6, 6)), ctx=ctx)
    w = mx.nd.array(rng.standard_normal((4, 3, 3, 3)), ctx=ctx)
    wd = mx.nd.array(rng.standard_normal((3, 2, 3, 3)), ctx=ctx)
    gamma, beta = mx.nd.ones((3,), ctx=ctx), mx.nd.zeros((3,), ctx=ctx)
    mean, var = mx.nd.zeros((3,), ctx=ctx), mx.nd.ones((3,), ctx=ctx)
    for a in (x, w, wd, gamma, beta):
        a.attach_grad()
    with mx.autograd.record():
        c = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True, pad=(1, 1),
                              cudnn_off=cudnn_off)
        d = mx.nd.Deconvolution(x, wd, kernel=(3, 3), num_filter=2, no_bias=True,
                                cudnn_off=cudnn_off)
        b = mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False, cudnn_off=cudnn_off)
        p = mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max',
                          cudnn_off=cudnn_off)
        loss = c.sum() + (d * d).sum() + (b * b).sum() + (p * p).sum()
    loss.backward()
    return [a.asnumpy() for a in (c, d, b, p, x.grad, w.grad, wd.grad, gamma.grad)]


@pytest.mark.gpu
def test_cudnn_off_keeps_the_node_off_cudnn(fresh, monkeypatch):
    """Without cudnn_off every operator asks cuDNN (here a fake that declines); with it,
    none does, and the results are the same (symgraph's kernels compute both)."""
    from symgraph.context import num_gpus
    if num_gpus() < 1:
        pytest.skip('needs CuPy with a device (the strict stand-in: SYMGRAPH_STRICT_CUPY=4)')
    calls = _fake_kernels(monkeypatch)
    on = _cudnn_off_run(False)
    assert set(calls) == {'conv_forward', 'conv_backward_data', 'conv_backward_weights',
                          'batchnorm_forward', 'batchnorm_backward', 'pool_forward',
                          'pool_backward'}, calls
    del calls[:]
    off = _cudnn_off_run(True)
    assert calls == []
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)


def test_cudnn_off_in_the_conv_helpers(fresh, monkeypatch):
    """ops/_conv_impl.py's helpers on CuPy arrays (the strict stand-in): cudnn_off=True
    never asks cuDNN, also where the data gradient runs as a convolution."""
    import os
    import sys
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'cuda')
    if here not in sys.path:
        sys.path.insert(0, here)
    import strict_cupy
    from symgraph.ops import _conv_impl as ci
    calls = _fake_kernels(monkeypatch)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    one = (1, 1)
    with strict_cupy.installed(1) as cp:
        xc, wc = cp.asarray(x), cp.asarray(w)
        for off in (True, False):
            y = ci.conv_forward(cp, xc, wc, None, one, one, one, 1, cudnn_off=off)
            ci.conv_backward_data(cp, y, wc, x.shape, one, one, one, 1, cudnn_off=off)
            ci.conv_backward_weight(cp, xc, y, (3, 3), one, one, one, 1, cudnn_off=off)
            if off:
                assert calls == []
    # without cudnn_off: each helper asks once; the declined data gradient runs as a
    # convolution (unit stride), which asks for conv_forward again
    assert calls == ['conv_forward', 'conv_backward_data', 'conv_forward',
                     'conv_backward_weights'], calls


# ---------------------------------------------------------------- TF32 for cuBLAS
@pytest.mark.parametrize('ours, theirs, want', [
    (None, None, '0'),          # MXNet's float32 math by default
    (None, '1', '1'),           # the user's own CUPY_TF32 stays when SYMGRAPH_TF32 is unset
    ('1', None, '1'), ('on', '0', '1'),
    ('0', '1', '0'), ('', '1', '1'),
])
def test_tf32_reaches_cupy(monkeypatch, caplog, ours, theirs, want):
    from symgraph import cuda
    monkeypatch.setattr(cuda, '_TF32_DONE', [])
    for var, value in (('SYMGRAPH_TF32', ours), ('CUPY_TF32', theirs)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    with caplog.at_level(logging.INFO, logger='symgraph.cuda'):
        cuda._tf32_to_cupy()
    import os
    assert os.environ['CUPY_TF32'] == want
    overrides = [r for r in caplog.records if 'overrides CUPY_TF32' in r.getMessage()]
    assert len(overrides) == (theirs is not None and (ours or '').strip() != ''
                              and theirs != want)
    monkeypatch.setenv('SYMGRAPH_TF32', '0' if want == '1' else '1')
    cuda._tf32_to_cupy()                                    # once per process
    assert os.environ['CUPY_TF32'] == want


def test_tf32_bad_value_names_the_variable(monkeypatch):
    from symgraph import cuda
    monkeypatch.setattr(cuda, '_TF32_DONE', [])
    monkeypatch.setenv('SYMGRAPH_TF32', 'fast')
    with pytest.raises(ValueError, match="SYMGRAPH_TF32 must be 0 or 1 .*got 'fast'"):
        cuda._tf32_to_cupy()


@pytest.mark.parametrize('ours, want', [(None, '0'), ('1', '1')])
def test_tf32_is_set_before_cupy_imports(tmp_path, ours, want):
    """A fresh process whose ``cupy`` records CUPY_TF32 at its import: a GPU context (which
    imports CuPy through symgraph.cuda.import_cupy) sets it first."""
    import os
    import subprocess
    import sys
    (tmp_path / 'cupy').mkdir()
    (tmp_path / 'cupy' / '__init__.py').write_text(
        'import os\nAT_IMPORT = os.environ.get("CUPY_TF32")\n')
    env = {k: v for k, v in os.environ.items()
           if k not in ('SYMGRAPH_STRICT_CUPY', 'CUPY_TF32', 'SYMGRAPH_TF32')}
    env['PYTHONPATH'] = str(tmp_path)
    if ours is not None:
        env['SYMGRAPH_TF32'] = ours
    code = ('import symgraph as mx, sys\n'
            'assert "cupy" not in sys.modules\n'
            'from symgraph.context import _cupy\n'
            'print(_cupy().AT_IMPORT)\n')
    out = subprocess.run([sys.executable, '-c', code], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == want
