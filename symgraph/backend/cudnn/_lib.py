"""Finding, loading and declaring cuDNN's legacy C API (``libcudnn.so.9`` / ``.so.8``) with
ctypes.

The numbers below are copied from cuDNN 9's ``cudnn_graph.h`` / ``cudnn_ops.h`` /
``cudnn_cnn.h`` (the ``nvidia-cudnn-cu13`` 9.28 wheel's headers); the enums used here have
the same values in cuDNN 8. Every handle and descriptor is a ``c_void_p``; every function
that returns ``cudnnStatus_t`` is checked by :func:`check`, whose message is
``cudnnGetErrorString``'s. ``libcudnn.so.9`` (the shim that loads ``libcudnn_ops`` /
``libcudnn_cnn`` on demand) exports every function declared here.

What runs without a GPU (and is tested so): loading, ``cudnnGetVersion``,
``cudnnGetCudartVersion``, ``cudnnGetErrorString``, creating and setting descriptors and the
output-shape queries. ``cudnnCreate`` fails there (CUDNN_STATUS_NOT_INITIALIZED), and so
nothing that computes has been executed on a GPU yet (see docs/gpu.md).
"""
import ctypes
import os
import sys
from importlib import metadata

from ... import config

# cudnnDataType_t
FLOAT, DOUBLE, HALF, BFLOAT16 = 0, 1, 2, 9
# cudnnTensorFormat_t (filters)
NCHW, NHWC = 0, 1
# cudnnConvolutionMode_t
CROSS_CORRELATION = 1
# cudnnMathType_t: DEFAULT_MATH lets cuDNN >= 8 use TF32 tensor cores for float32; FMA_MATH
# does not (MXNet's float32 numbers, SYMGRAPH_TF32 unset)
DEFAULT_MATH, TENSOR_OP_MATH, TENSOR_OP_MATH_ALLOW_CONVERSION, FMA_MATH = 0, 1, 2, 3
# cudnnNanPropagation_t
NOT_PROPAGATE_NAN, PROPAGATE_NAN = 0, 1
# cudnnBatchNormMode_t
BATCHNORM_PER_ACTIVATION, BATCHNORM_SPATIAL = 0, 1
#: cudnn_ops.h's CUDNN_BN_MIN_EPSILON (1e-5 before cuDNN 8, 0.0 since): MXNet's
#: cudnn_batch_norm uses max(eps, CUDNN_BN_MIN_EPSILON), and so does :mod:`.core`
BN_MIN_EPSILON = 0.0
# cudnnPoolingMode_t
POOLING_MAX, POOLING_AVG_INCLUDE_PADDING, POOLING_AVG_EXCLUDE_PADDING = 0, 1, 2
POOLING_MAX_DETERMINISTIC = 3
# cudnnSoftmaxAlgorithm_t / cudnnSoftmaxMode_t
SOFTMAX_ACCURATE, SOFTMAX_LOG = 1, 2
SOFTMAX_MODE_INSTANCE, SOFTMAX_MODE_CHANNEL = 0, 1
# cudnnActivationMode_t
ACTIVATION = {'sigmoid': 0, 'relu': 1, 'tanh': 2, 'clipped_relu': 3, 'elu': 4}
#: CUDNN_DIM_MAX
DIM_MAX = 8

#: the shared library's file names, newest soname first
SONAMES = ('libcudnn.so.9', 'libcudnn.so.8')
#: the wheels that install it (the ``cudnn13`` / ``cudnn12`` extras of setup.cfg)
DISTRIBUTIONS = ('nvidia-cudnn-cu13', 'nvidia-cudnn-cu12')
#: where those wheels put the library, relative to a site-packages folder
WHEEL_DIR = os.path.join('nvidia', 'cudnn', 'lib')
#: system folders tried after the wheels (the dynamic loader's own path comes last)
SYSTEM_DIRS = ('/usr/local/cuda/lib64', '/usr/lib/x86_64-linux-gnu', '/usr/lib64',
               '/usr/local/lib')


class AlgoPerf(ctypes.Structure):
    """``cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t`` (one layout for the three)."""
    _fields_ = [('algo', ctypes.c_int), ('status', ctypes.c_int), ('time', ctypes.c_float),
                ('memory', ctypes.c_size_t), ('determinism', ctypes.c_int),
                ('mathType', ctypes.c_int), ('reserved', ctypes.c_int * 3)]


class CudnnError(RuntimeError):
    """A cuDNN call returned a status other than CUDNN_STATUS_SUCCESS."""

    def __init__(self, what, status, text=None):
        super().__init__('%s failed: %s (status %d)' % (what, text or 'cuDNN error', status))
        self.status = status


def error_string(lib, status):
    """``cudnnGetErrorString(status)`` as text (it needs no GPU)."""
    raw = lib.cudnnGetErrorString(status)
    return (raw or b'').decode('ascii', 'replace')


def check(lib, status, what):
    """Raise :class:`CudnnError` (with cuDNN's own name for ``status``) unless it is 0."""
    if status:
        raise CudnnError(what, status, error_string(lib, status))


def parse_version(v):
    """(major, minor, patch) of ``cudnnGetVersion()``: 9.x encodes
    major * 10000 + minor * 100 + patch, 8.x and older major * 1000 + minor * 100 + patch."""
    v = int(v)
    if v >= 90000:
        return (v // 10000, v % 10000 // 100, v % 100)
    return (v // 1000, v % 1000 // 100, v % 100)


def candidates():
    """Paths (or bare sonames, for the dynamic loader) to try for the library, in order.

    ``SYMGRAPH_CUDNN_LIB`` (an explicit file) alone when set; else the files the installed
    ``nvidia-cudnn-cu13`` / ``-cu12`` wheels recorded, then ``nvidia/cudnn/lib`` under every
    ``sys.path`` folder (a ``pip install --target`` folder on PYTHONPATH), then the system
    folders of :data:`SYSTEM_DIRS`, then the bare sonames (LD_LIBRARY_PATH, ld.so.cache).
    """
    explicit = config.path('CUDNN_LIB')
    if explicit:
        return [explicit]
    out = []
    for dist in DISTRIBUTIONS:
        try:
            files = metadata.distribution(dist).files or ()
        except metadata.PackageNotFoundError:
            continue
        found = {os.path.basename(str(f)): f for f in files}
        out += [os.path.normpath(str(found[s].locate())) for s in SONAMES if s in found]
    for entry in sys.path:
        out += [os.path.join(os.path.abspath(entry or os.curdir), WHEEL_DIR, s)
                for s in SONAMES]
    out += [os.path.join(d, s) for d in SYSTEM_DIRS for s in SONAMES]
    out += list(SONAMES)
    seen = set()
    return [p for p in out if not (p in seen or seen.add(p))]


_VP = ctypes.c_void_p
_P = ctypes.POINTER
_I = ctypes.c_int
_IA = _P(ctypes.c_int)          # const int dimA[]
_D = ctypes.c_double
_SZ = ctypes.c_size_t
_SIGNATURES = {
    # name: (argtypes, restype); restype None means cudnnStatus_t (checked by the caller)
    'cudnnGetVersion': ((), _SZ),
    'cudnnGetCudartVersion': ((), _SZ),
    'cudnnGetErrorString': ((_I,), ctypes.c_char_p),
    'cudnnCreate': ((_P(_VP),), None),
    'cudnnDestroy': ((_VP,), None),
    'cudnnSetStream': ((_VP, _VP), None),
    'cudnnCreateTensorDescriptor': ((_P(_VP),), None),
    'cudnnSetTensorNdDescriptor': ((_VP, _I, _I, _IA, _IA), None),
    'cudnnDestroyTensorDescriptor': ((_VP,), None),
    'cudnnCreateFilterDescriptor': ((_P(_VP),), None),
    'cudnnSetFilterNdDescriptor': ((_VP, _I, _I, _I, _IA), None),
    'cudnnDestroyFilterDescriptor': ((_VP,), None),
    'cudnnCreateConvolutionDescriptor': ((_P(_VP),), None),
    'cudnnSetConvolutionNdDescriptor': ((_VP, _I, _IA, _IA, _IA, _I, _I), None),
    'cudnnSetConvolutionGroupCount': ((_VP, _I), None),
    'cudnnSetConvolutionMathType': ((_VP, _I), None),
    'cudnnDestroyConvolutionDescriptor': ((_VP,), None),
    'cudnnGetConvolutionNdForwardOutputDim': ((_VP, _VP, _VP, _I, _IA), None),
    'cudnnGetConvolutionForwardAlgorithm_v7': (
        (_VP, _VP, _VP, _VP, _VP, _I, _P(_I), _P(AlgoPerf)), None),
    'cudnnGetConvolutionBackwardDataAlgorithm_v7': (
        (_VP, _VP, _VP, _VP, _VP, _I, _P(_I), _P(AlgoPerf)), None),
    'cudnnGetConvolutionBackwardFilterAlgorithm_v7': (
        (_VP, _VP, _VP, _VP, _VP, _I, _P(_I), _P(AlgoPerf)), None),
    'cudnnGetConvolutionForwardWorkspaceSize': ((_VP, _VP, _VP, _VP, _VP, _I, _P(_SZ)), None),
    'cudnnGetConvolutionBackwardDataWorkspaceSize': (
        (_VP, _VP, _VP, _VP, _VP, _I, _P(_SZ)), None),
    'cudnnGetConvolutionBackwardFilterWorkspaceSize': (
        (_VP, _VP, _VP, _VP, _VP, _I, _P(_SZ)), None),
    'cudnnConvolutionForward': (
        (_VP, _VP, _VP, _VP, _VP, _VP, _VP, _I, _VP, _SZ, _VP, _VP, _VP), None),
    'cudnnConvolutionBackwardData': (
        (_VP, _VP, _VP, _VP, _VP, _VP, _VP, _I, _VP, _SZ, _VP, _VP, _VP), None),
    'cudnnConvolutionBackwardFilter': (
        (_VP, _VP, _VP, _VP, _VP, _VP, _VP, _I, _VP, _SZ, _VP, _VP, _VP), None),
    'cudnnBatchNormalizationForwardTraining': (
        (_VP, _I, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _D, _VP, _VP, _D, _VP, _VP),
        None),
    'cudnnBatchNormalizationForwardInference': (
        (_VP, _I, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _D), None),
    'cudnnBatchNormalizationBackward': (
        (_VP, _I, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _D,
         _VP, _VP), None),
    'cudnnCreatePoolingDescriptor': ((_P(_VP),), None),
    'cudnnSetPoolingNdDescriptor': ((_VP, _I, _I, _I, _IA, _IA, _IA), None),
    'cudnnGetPoolingNdForwardOutputDim': ((_VP, _VP, _I, _IA), None),
    'cudnnDestroyPoolingDescriptor': ((_VP,), None),
    'cudnnPoolingForward': ((_VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP), None),
    'cudnnPoolingBackward': ((_VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP),
                             None),
    'cudnnSoftmaxForward': ((_VP, _I, _I, _VP, _VP, _VP, _VP, _VP, _VP), None),
    'cudnnSoftmaxBackward': ((_VP, _I, _I, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP), None),
    'cudnnCreateActivationDescriptor': ((_P(_VP),), None),
    'cudnnSetActivationDescriptor': ((_VP, _I, _I, _D), None),
    'cudnnDestroyActivationDescriptor': ((_VP,), None),
    'cudnnActivationForward': ((_VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP), None),
    'cudnnActivationBackward': ((_VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP),
                                None),
}


def function_names():
    """The names of every cuDNN function this backend declares (and calls)."""
    return sorted(_SIGNATURES)


def load(path):
    """The ``ctypes.CDLL`` at ``path`` with every function of :data:`_SIGNATURES` declared.

    Raises OSError when the file cannot be loaded or lacks one of the functions.
    """
    lib = ctypes.CDLL(path)
    for name, (argtypes, restype) in _SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise OSError('%s has no function %s' % (path, name)) from None
        fn.argtypes = list(argtypes)
        fn.restype = ctypes.c_int if restype is None else restype
    return lib


def version(lib):
    """(major, minor, patch) of a loaded library (``cudnnGetVersion``: no GPU needed)."""
    return parse_version(lib.cudnnGetVersion())


def cudart_version(lib):
    """The CUDA runtime version the library was built for (12090: CUDA 12.9)."""
    return int(lib.cudnnGetCudartVersion())


def int_array(values):
    """A ``const int[]`` argument."""
    values = [int(v) for v in values]
    return (ctypes.c_int * len(values))(*values)
