"""The cuDNN backend's calls on CuPy arrays: :class:`Backend`.

NOT YET EXECUTED ON A GPU. This module was written on a machine without one: its
descriptor building and the library's prototypes are tested there (descriptors and output
shapes against the real ``libcudnn.so.9``), but every call that computes
(``cudnnConvolutionForward`` ...) and ``cudnnCreate`` itself first run in the GPU suite
(``bench/run_gpu.sh cudnn``: tests/backend/test_cudnn.py's ``gpu`` tests compare each
method with symgraph's own CUDA kernels). Until that has passed, treat numbers from here as
unverified.

Each method takes channels-first CuPy arrays (views of channels-last buffers too: the
tensor descriptors carry the strides) and returns the result, or None where cuDNN does not
take the case (dtype, layout, padding...): the operator then runs symgraph's kernels.
Handles are made lazily, one per (device, stream); convolution algorithms are chosen once
per shape key by cuDNN's ``_v7`` heuristics and kept with their workspace size.
"""
import ctypes
import threading

import numpy as np

from . import _lib, geometry as geo

__all__ = ['Backend']

_VP = ctypes.c_void_p


class _Desc:
    """A cuDNN descriptor destroyed with this object."""
    __slots__ = ('ptr', '_destroy')

    def __init__(self, lib, kind):
        self.ptr = _VP()
        _lib.check(lib, getattr(lib, 'cudnnCreate%sDescriptor' % kind)(ctypes.byref(self.ptr)),
                   'cudnnCreate%sDescriptor' % kind)
        self._destroy = getattr(lib, 'cudnnDestroy%sDescriptor' % kind)

    def __del__(self):
        if self.ptr:
            self._destroy(self.ptr)
            self.ptr = _VP()


class Backend:
    """cuDNN through ``lib`` (a loaded, declared CDLL) for CuPy module ``cupy``."""

    def __init__(self, lib, path, cupy, tf32=False, workspace_limit=1 << 30):
        self.lib, self.path, self.cp = lib, path, cupy
        self.version = _lib.version(lib)
        self.tf32 = bool(tf32)
        self._handles = {}
        self._algos = {}
        self._lock = threading.Lock()
        self.workspace = geo.Workspace(lambda n: cupy.empty(n, dtype=cupy.uint8),
                                       workspace_limit)

    # ------------------------------------------------------------------ handles
    def _where(self):
        cp = self.cp
        return cp.cuda.Device().id, cp.cuda.get_current_stream().ptr

    def handle(self):
        """The handle of the current device and stream (made on first use)."""
        key = self._where()
        h = self._handles.get(key)
        if h is None:
            with self._lock:
                h = self._handles.get(key)
                if h is None:
                    h = _VP()
                    _lib.check(self.lib, self.lib.cudnnCreate(ctypes.byref(h)), 'cudnnCreate')
                    _lib.check(self.lib, self.lib.cudnnSetStream(h, _VP(key[1] or None)),
                               'cudnnSetStream')
                    self._handles[key] = h
        return h

    def close(self):
        """Destroy every handle (for tests and process exit)."""
        with self._lock:
            for h in self._handles.values():
                self.lib.cudnnDestroy(h)
            self._handles.clear()

    # -------------------------------------------------------------- descriptors
    def tensor(self, a, shape=None):
        """A tensor descriptor of array ``a`` (viewed as ``shape``, C order, when given),
        or None."""
        if shape is None:
            got = geo.tensor_desc(a.dtype, a.shape, a.strides)
        else:
            if not a.flags.c_contiguous:
                return None
            strides = tuple(int(np.prod(shape[i + 1:])) * a.itemsize
                            for i in range(len(shape)))
            got = geo.tensor_desc(a.dtype, shape, strides)
        if got is None:
            return None
        return self.tensor_from(*got)

    def tensor_from(self, dt, dims, strides):
        d = _Desc(self.lib, 'Tensor')
        _lib.check(self.lib, self.lib.cudnnSetTensorNdDescriptor(
            d.ptr, dt, len(dims), _lib.int_array(dims), _lib.int_array(strides)),
            'cudnnSetTensorNdDescriptor(%s, %s)' % (dims, strides))
        return d

    def filter(self, w):
        """A filter descriptor of ``w`` (F, C/g, *K), or None (strides cuDNN cannot take)."""
        dt = geo.DTYPES.get(np.dtype(w.dtype))
        s = geo.elem_strides(w.strides, w.itemsize)
        if dt is None or s is None:
            return None
        got = geo.as_4d(w.shape, s)
        fmt = None if got is None else geo.filter_format(*got)
        if fmt is None:
            return None
        return self.filter_from(dt, fmt, got[0]), (got[0], fmt)

    def filter_from(self, dt, fmt, dims):
        d = _Desc(self.lib, 'Filter')
        _lib.check(self.lib, self.lib.cudnnSetFilterNdDescriptor(
            d.ptr, dt, fmt, len(dims), _lib.int_array(dims)),
            'cudnnSetFilterNdDescriptor(%s)' % (dims,))
        return d

    def conv_desc(self, dtype, params, groups, math):
        pad, stride, dilate = params
        d = _Desc(self.lib, 'Convolution')
        # compute type: float for half and float data (MXNet's default), double for double
        ct = _lib.DOUBLE if np.dtype(dtype) == np.float64 else _lib.FLOAT
        _lib.check(self.lib, self.lib.cudnnSetConvolutionNdDescriptor(
            d.ptr, len(pad), _lib.int_array(pad), _lib.int_array(stride),
            _lib.int_array(dilate), _lib.CROSS_CORRELATION, ct),
            'cudnnSetConvolutionNdDescriptor')
        _lib.check(self.lib, self.lib.cudnnSetConvolutionGroupCount(d.ptr, int(groups)),
                   'cudnnSetConvolutionGroupCount')
        _lib.check(self.lib, self.lib.cudnnSetConvolutionMathType(d.ptr, int(math)),
                   'cudnnSetConvolutionMathType')
        return d

    def math_type(self, dtype):
        """The math type set on a convolution before asking for algorithms: FMA for float32
        without TF32 (no tensor cores, MXNet's numbers), tensor cores otherwise."""
        if np.dtype(dtype) == np.float32 and not self.tf32:
            return _lib.FMA_MATH
        if np.dtype(dtype) == np.float64:
            return _lib.DEFAULT_MATH
        return _lib.TENSOR_OP_MATH

    def _scalars(self, dtype):
        t = ctypes.c_double if np.dtype(dtype) == np.float64 else ctypes.c_float
        one, zero = t(1.0), t(0.0)
        return one, zero, ctypes.addressof(one), ctypes.addressof(zero)

    # ------------------------------------------------------------- convolution
    _FIND = {'fwd': 'cudnnGetConvolutionForwardAlgorithm_v7',
             'bwd_data': 'cudnnGetConvolutionBackwardDataAlgorithm_v7',
             'bwd_filter': 'cudnnGetConvolutionBackwardFilterAlgorithm_v7'}
    _SIZE = {'fwd': 'cudnnGetConvolutionForwardWorkspaceSize',
             'bwd_data': 'cudnnGetConvolutionBackwardDataWorkspaceSize',
             'bwd_filter': 'cudnnGetConvolutionBackwardFilterWorkspaceSize'}

    def _algo(self, direction, key, h, descs, conv, dtype):
        """(algo, workspace bytes) for ``key``: cuDNN's heuristic ranking filtered by the
        workspace limit and the math types allowed, chosen once per key."""
        got = self._algos.get(key)
        if got is not None:
            if got:        # this call's descriptor was made with the default math type
                _lib.check(self.lib, self.lib.cudnnSetConvolutionMathType(conv.ptr, got[2]),
                           'cudnnSetConvolutionMathType')
            return got
        n = 16
        perfs = (_lib.AlgoPerf * n)()
        count = ctypes.c_int()
        a, b, c = descs          # in the order the direction's functions take them
        _lib.check(self.lib, getattr(self.lib, self._FIND[direction])(
            h, a, b, conv.ptr, c, n, ctypes.byref(count), perfs), self._FIND[direction])
        pick = geo.choose_algo(perfs[:count.value], self.workspace.limit,
                               geo.allowed_math(dtype, self.tf32))
        if pick is None:
            self._algos[key] = False
            return False
        algo, _, math = pick
        _lib.check(self.lib, self.lib.cudnnSetConvolutionMathType(conv.ptr, math),
                   'cudnnSetConvolutionMathType')
        size = ctypes.c_size_t()
        _lib.check(self.lib, getattr(self.lib, self._SIZE[direction])(
            h, a, b, conv.ptr, c, algo, ctypes.byref(size)), self._SIZE[direction])
        got = self._algos[key] = (algo, int(size.value), math)
        return got

    def _conv_setup(self, x, w, y, pad, stride, dilate, groups):
        params = geo.conv_params(x.shape, w.shape, pad, stride, dilate, groups)
        if params is None or not (x.dtype == w.dtype == y.dtype):
            return None
        xd, fd, yd = self.tensor(x), self.filter(w), self.tensor(y)
        if xd is None or fd is None or yd is None:
            return None
        math = self.math_type(x.dtype)
        conv = self.conv_desc(x.dtype, params, groups, math)
        return xd, fd, yd, conv, params, math

    def _key(self, direction, x, wkey, y, params, groups, math):
        sx = geo.elem_strides(x.strides, x.itemsize)
        sy = geo.elem_strides(y.strides, y.itemsize)
        return geo.conv_key(direction, x.dtype, (x.shape, sx), wkey, (y.shape, sy), params,
                            groups, math)

    def _out(self, shape, dtype, out):
        if out is not None and tuple(out.shape) == tuple(shape) and out.dtype == dtype:
            return out
        return self.cp.empty(shape, dtype=dtype)

    def conv_forward(self, x, w, b, stride, pad, dilate, groups, out=None):
        """Cross-correlation of x (N, C, *S) with w (F, C/g, *K) plus bias b (F,) or None,
        into ``out`` when it fits; None where cuDNN does not take the case."""
        params = geo.conv_params(x.shape, w.shape, pad, stride, dilate, groups)
        if params is None:
            return None
        y = self._out(geo.conv_out_shape(x.shape, w.shape, pad, stride, dilate), x.dtype, out)
        setup = self._conv_setup(x, w, y, pad, stride, dilate, groups)
        if setup is None:
            return None
        xd, (fd, wkey), yd, conv, params, math = setup
        h = self.handle()
        key = self._key('fwd', x, wkey, y, params, groups, math)
        got = self._algo('fwd', key, h, (xd.ptr, fd.ptr, yd.ptr), conv, x.dtype)
        if not got:
            return None
        algo, nbytes, _ = got
        ws = self.workspace.take(self._where()[0], nbytes)
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnConvolutionForward(
            h, p1, xd.ptr, x.data.ptr, fd.ptr, w.data.ptr, conv.ptr, algo,
            None if ws is None else ws.data.ptr, nbytes, p0, yd.ptr, y.data.ptr),
            'cudnnConvolutionForward')
        if b is not None:
            y += b.reshape((1, -1) + (1,) * (y.ndim - 2))
        return y

    def conv_backward_data(self, dy, w, xshape, stride, pad, dilate, groups, out=None):
        """Gradient of :meth:`conv_forward` with respect to x of ``xshape``, or None."""
        params = geo.conv_params(tuple(xshape), w.shape, pad, stride, dilate, groups)
        if params is None or geo.conv_out_shape(xshape, w.shape, pad, stride,
                                                dilate) != tuple(dy.shape):
            return None
        dx = self._out(tuple(xshape), dy.dtype, out)
        setup = self._conv_setup(dx, w, dy, pad, stride, dilate, groups)
        if setup is None:
            return None
        dxd, (fd, wkey), dyd, conv, params, math = setup
        h = self.handle()
        key = self._key('bwd_data', dx, wkey, dy, params, groups, math)
        got = self._algo('bwd_data', key, h, (fd.ptr, dyd.ptr, dxd.ptr), conv, dy.dtype)
        if not got:
            return None
        algo, nbytes, _ = got
        ws = self.workspace.take(self._where()[0], nbytes)
        one, zero, p1, p0 = self._scalars(dy.dtype)
        _lib.check(self.lib, self.lib.cudnnConvolutionBackwardData(
            h, p1, fd.ptr, w.data.ptr, dyd.ptr, dy.data.ptr, conv.ptr, algo,
            None if ws is None else ws.data.ptr, nbytes, p0, dxd.ptr, dx.data.ptr),
            'cudnnConvolutionBackwardData')
        return dx

    def conv_backward_weights(self, x, dy, wshape, stride, pad, dilate, groups, out=None):
        """Gradient of :meth:`conv_forward` with respect to w of ``wshape``, or None."""
        params = geo.conv_params(x.shape, tuple(wshape), pad, stride, dilate, groups)
        if params is None or geo.conv_out_shape(x.shape, wshape, pad, stride,
                                                dilate) != tuple(dy.shape):
            return None
        dw = self._out(tuple(wshape), x.dtype, out)
        setup = self._conv_setup(x, dw, dy, pad, stride, dilate, groups)
        if setup is None:
            return None
        xd, (fd, wkey), dyd, conv, params, math = setup
        h = self.handle()
        key = self._key('bwd_filter', x, wkey, dy, params, groups, math)
        got = self._algo('bwd_filter', key, h, (xd.ptr, dyd.ptr, fd.ptr), conv, x.dtype)
        if not got:
            return None
        algo, nbytes, _ = got
        ws = self.workspace.take(self._where()[0], nbytes)
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnConvolutionBackwardFilter(
            h, p1, xd.ptr, x.data.ptr, dyd.ptr, dy.data.ptr, conv.ptr, algo,
            None if ws is None else ws.data.ptr, nbytes, p0, fd.ptr, dw.data.ptr),
            'cudnnConvolutionBackwardFilter')
        return dw

    # --------------------------------------------------------------- BatchNorm
    def _bn_descs(self, x, gamma):
        shape4 = geo.bn_shape(x.shape)
        if shape4 is None or not x.flags.c_contiguous or x.dtype not in geo.DTYPES:
            return None
        # the scale/bias/mean/var descriptor: float for half and float data, else double
        pdt = np.float64 if x.dtype == np.float64 else np.float32
        if gamma.dtype != pdt:
            return None
        xd = self.tensor(x, shape4)
        pd = self.tensor_from(geo.DTYPES[np.dtype(pdt)], (1, shape4[1], 1, 1),
                              (shape4[1], 1, 1, 1))
        return xd, pd

    def batchnorm_forward(self, x, gamma, beta, moving_mean, moving_var, eps, momentum,
                          fix_gamma, is_train, out=None):
        """MXNet's BatchNorm forward (channel axis 1): (y, mean, inv_std), or None.

        Training updates the running statistics as symgraph's kernels do (MXNet's CPU and
        CUDA BatchNorm: the biased batch variance), not cuDNN's own update (the unbiased
        one, which MXNet's cudnn_batch_norm gives): cuDNN is called without running statistics
        (NULL: it leaves them alone) and they are updated here from its saved mean and
        inverse std. fix_gamma uses a scale of ones (MXNet's cuDNN BatchNorm writes 1 into gamma).
        """
        descs = self._bn_descs(x, gamma)
        if descs is None:
            return None
        xd, pd = descs
        cp = self.cp
        y = self._out(x.shape, x.dtype, out)
        if not y.flags.c_contiguous:
            y = cp.empty(x.shape, dtype=x.dtype)
        eps = geo.bn_epsilon(eps)
        scale = cp.ones_like(gamma) if fix_gamma else gamma
        one, zero, p1, p0 = self._scalars(x.dtype)
        h = self.handle()
        if is_train:
            mean = cp.empty_like(gamma)
            inv = cp.empty_like(gamma)
            _lib.check(self.lib, self.lib.cudnnBatchNormalizationForwardTraining(
                h, _lib.BATCHNORM_SPATIAL, p1, p0, xd.ptr, x.data.ptr, xd.ptr, y.data.ptr,
                pd.ptr, scale.data.ptr, beta.data.ptr, 0.0, None, None, eps, mean.data.ptr,
                inv.data.ptr),
                'cudnnBatchNormalizationForwardTraining')
            m = float(momentum)
            var = 1.0 / (inv * inv) - eps
            moving_mean *= m
            moving_mean += (1.0 - m) * mean
            moving_var *= m
            moving_var += (1.0 - m) * var
            return y, mean, inv
        _lib.check(self.lib, self.lib.cudnnBatchNormalizationForwardInference(
            h, _lib.BATCHNORM_SPATIAL, p1, p0, xd.ptr, x.data.ptr, xd.ptr, y.data.ptr,
            pd.ptr, scale.data.ptr, beta.data.ptr, moving_mean.data.ptr,
            moving_var.data.ptr, eps), 'cudnnBatchNormalizationForwardInference')
        return y, moving_mean.copy(), 1.0 / cp.sqrt(moving_var + eps)

    def batchnorm_backward(self, dy, x, gamma, mean, inv, eps, fix_gamma, out=None):
        """(dx, dgamma, dbeta) of the training forward from its saved mean and inverse std,
        or None (dgamma is 0 under fix_gamma, as MXNet's)."""
        descs = self._bn_descs(x, gamma)
        if descs is None or not dy.flags.c_contiguous or dy.dtype != x.dtype:
            return None
        xd, pd = descs
        cp = self.cp
        dx = self._out(x.shape, x.dtype, out)
        if not dx.flags.c_contiguous:
            dx = cp.empty(x.shape, dtype=x.dtype)
        dgamma, dbeta = cp.empty_like(gamma), cp.empty_like(gamma)
        scale = cp.ones_like(gamma) if fix_gamma else gamma
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnBatchNormalizationBackward(
            self.handle(), _lib.BATCHNORM_SPATIAL, p1, p0, p1, p0, xd.ptr, x.data.ptr,
            xd.ptr, dy.data.ptr, xd.ptr, dx.data.ptr, pd.ptr, scale.data.ptr,
            dgamma.data.ptr, dbeta.data.ptr, geo.bn_epsilon(eps), mean.data.ptr,
            inv.data.ptr), 'cudnnBatchNormalizationBackward')
        if fix_gamma:
            dgamma.fill(0)
        return dx, dgamma, dbeta

    # ----------------------------------------------------------------- pooling
    def _pool_desc(self, mode, kernel, pad, stride):
        d = _Desc(self.lib, 'Pooling')
        _lib.check(self.lib, self.lib.cudnnSetPoolingNdDescriptor(
            d.ptr, mode, _lib.NOT_PROPAGATE_NAN, len(kernel), _lib.int_array(kernel),
            _lib.int_array(pad), _lib.int_array(stride)), 'cudnnSetPoolingNdDescriptor')
        return d

    def pool_forward(self, x, kind, kernel, stride, pad, out=None):
        """Pooling of x (N, C, *S) with symmetric ``pad`` ('max', 'avg_include',
        'avg_exclude'), or None."""
        got = geo.pool_params(x.shape, kind, kernel, stride, pad)
        if got is None:
            return None
        mode, k2, p2, s2 = got
        y = self._out(geo.pool_out_shape(x.shape, kernel, stride, pad), x.dtype, out)
        xd, yd = self.tensor(x), self.tensor(y)
        if xd is None or yd is None:
            return None
        pool = self._pool_desc(mode, k2, p2, s2)
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnPoolingForward(
            self.handle(), pool.ptr, p1, xd.ptr, x.data.ptr, p0, yd.ptr, y.data.ptr),
            'cudnnPoolingForward')
        return y

    def pool_backward(self, x, y, dy, kind, kernel, stride, pad, out=None):
        """The pooling's data gradient from its input x, output y and dy, or None."""
        got = geo.pool_params(x.shape, kind, kernel, stride, pad)
        if got is None or y.shape != dy.shape:
            return None
        mode, k2, p2, s2 = got
        dx = self._out(x.shape, x.dtype, out)
        xd, yd, dyd, dxd = self.tensor(x), self.tensor(y), self.tensor(dy), self.tensor(dx)
        if None in (xd, yd, dyd, dxd):
            return None
        pool = self._pool_desc(mode, k2, p2, s2)
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnPoolingBackward(
            self.handle(), pool.ptr, p1, yd.ptr, y.data.ptr, dyd.ptr, dy.data.ptr, xd.ptr,
            x.data.ptr, p0, dxd.ptr, dx.data.ptr), 'cudnnPoolingBackward')
        return dx

    # ----------------------------------------------------------------- softmax
    def softmax_forward(self, x, axis, log=False):
        """softmax (or log_softmax) of a C-order x along ``axis``, or None."""
        if not x.flags.c_contiguous or x.dtype not in geo.DTYPES or x.size == 0:
            return None
        shape4 = geo.softmax_shape(x.shape, axis)
        y = self.cp.empty(x.shape, dtype=x.dtype)
        xd = self.tensor(x, shape4)
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnSoftmaxForward(
            self.handle(), _lib.SOFTMAX_LOG if log else _lib.SOFTMAX_ACCURATE,
            _lib.SOFTMAX_MODE_CHANNEL, p1, xd.ptr, x.data.ptr, p0, xd.ptr, y.data.ptr),
            'cudnnSoftmaxForward')
        return y

    def softmax_backward(self, y, dy, axis, log=False):
        """The data gradient of :meth:`softmax_forward` from its output y, or None."""
        if not (y.flags.c_contiguous and dy.flags.c_contiguous) or dy.dtype != y.dtype \
                or y.dtype not in geo.DTYPES or y.size == 0:
            return None
        shape4 = geo.softmax_shape(y.shape, axis)
        dx = self.cp.empty(y.shape, dtype=y.dtype)
        d = self.tensor(y, shape4)
        one, zero, p1, p0 = self._scalars(y.dtype)
        _lib.check(self.lib, self.lib.cudnnSoftmaxBackward(
            self.handle(), _lib.SOFTMAX_LOG if log else _lib.SOFTMAX_ACCURATE,
            _lib.SOFTMAX_MODE_CHANNEL, p1, d.ptr, y.data.ptr, d.ptr, dy.data.ptr, p0, d.ptr,
            dx.data.ptr), 'cudnnSoftmaxBackward')
        return dx

    # -------------------------------------------------------------- activation
    def _act_desc(self, kind, coef=0.0):
        d = _Desc(self.lib, 'Activation')
        _lib.check(self.lib, self.lib.cudnnSetActivationDescriptor(
            d.ptr, _lib.ACTIVATION[kind], _lib.NOT_PROPAGATE_NAN, float(coef)),
            'cudnnSetActivationDescriptor')
        return d

    def activation_forward(self, x, kind, coef=0.0):
        """relu / sigmoid / tanh (elu with alpha ``coef``) of a C-order x, or None."""
        if kind not in _lib.ACTIVATION or not x.flags.c_contiguous \
                or x.dtype not in geo.DTYPES or x.size == 0:
            return None
        y = self.cp.empty(x.shape, dtype=x.dtype)
        d = self.tensor(x, (1, x.size, 1, 1))
        act = self._act_desc(kind, coef)
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnActivationForward(
            self.handle(), act.ptr, p1, d.ptr, x.data.ptr, p0, d.ptr, y.data.ptr),
            'cudnnActivationForward')
        return y

    def activation_backward(self, x, y, dy, kind, coef=0.0):
        """dy * f'(x) from the input x and output y, or None."""
        if kind not in _lib.ACTIVATION or not all(a.flags.c_contiguous for a in (x, y, dy)) \
                or x.dtype not in geo.DTYPES or x.size == 0:
            return None
        dx = self.cp.empty(x.shape, dtype=x.dtype)
        d = self.tensor(x, (1, x.size, 1, 1))
        act = self._act_desc(kind, coef)
        one, zero, p1, p0 = self._scalars(x.dtype)
        _lib.check(self.lib, self.lib.cudnnActivationBackward(
            self.handle(), act.ptr, p1, d.ptr, y.data.ptr, d.ptr, dy.data.ptr, d.ptr,
            x.data.ptr, p0, d.ptr, dx.data.ptr), 'cudnnActivationBackward')
        return dx
