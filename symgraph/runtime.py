"""``mx.runtime``: which features this installation has, after MXNet 1.9.1's runtime.py.

MXNet reports the features its library was compiled with; symgraph reports, under MXNet's
32 feature names and in MXNet's order, what it can use here: ``CUDA``/``CUDA_RTC`` when CuPy
imports, ``MKLDNN``/``OPENMP`` when the oneDNN backend loaded, the CPU's SSE/AVX flags,
``LAPACK``/``BLAS_OPEN`` through NumPy, ``DIST_KVSTORE`` when mpi4py is installed,
``INT64_TENSOR_SIZE`` (NumPy indexes with 64-bit integers), ``PROFILER`` (mx.profiler). The
rest (cuDNN, NCCL, TensorRT, OpenCV, Caffe, TVM operators, ...) symgraph does not have.
"""
import collections
import importlib.util

from . import opdef

__all__ = ['Feature', 'feature_list', 'Features']

#: MXNet 1.9.1's feature names, in its order (libinfo.h)
FEATURE_NAMES = (
    'CUDA', 'CUDNN', 'NCCL', 'CUDA_RTC', 'TENSORRT', 'CPU_SSE', 'CPU_SSE2', 'CPU_SSE3',
    'CPU_SSE4_1', 'CPU_SSE4_2', 'CPU_SSE4A', 'CPU_AVX', 'CPU_AVX2', 'OPENMP', 'SSE', 'F16C',
    'JEMALLOC', 'BLAS_OPEN', 'BLAS_ATLAS', 'BLAS_MKL', 'BLAS_APPLE', 'LAPACK', 'MKLDNN',
    'OPENCV', 'CAFFE', 'PROFILER', 'DIST_KVSTORE', 'CXX14', 'INT64_TENSOR_SIZE',
    'SIGNAL_HANDLER', 'DEBUG', 'TVM_OP')
#: feature -> the /proc/cpuinfo flag that shows it
_CPU_FLAGS = {'CPU_SSE': 'sse', 'CPU_SSE2': 'sse2', 'CPU_SSE3': 'pni', 'CPU_SSE4_1': 'sse4_1',
              'CPU_SSE4_2': 'sse4_2', 'CPU_SSE4A': 'sse4a', 'CPU_AVX': 'avx',
              'CPU_AVX2': 'avx2', 'F16C': 'f16c'}


class Feature(collections.namedtuple('Feature', ['name', 'enabled'])):
    """One feature: ``name`` and whether it is ``enabled``; prints as MXNet's (✔/✖ name)."""
    __slots__ = ()

    def __repr__(self):
        return '%s %s' % ('\u2714' if self.enabled else '\u2716', self.name)


def _cpu_flags():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('flags'):
                    return set(line.split(':', 1)[1].split())
    except OSError:
        pass
    return set()


def _installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def feature_list():
    """The :class:`Feature` list, in MXNet's order."""
    flags = _cpu_flags()
    onednn = opdef.cpu_backend() is not None
    cuda = _installed('cupy')
    enabled = {'CUDA': cuda, 'CUDA_RTC': cuda, 'OPENMP': onednn, 'MKLDNN': onednn,
               'BLAS_OPEN': True, 'LAPACK': True, 'DIST_KVSTORE': _installed('mpi4py'),
               'CXX14': False, 'INT64_TENSOR_SIZE': True, 'PROFILER': True}
    enabled.update({name: flag in flags for name, flag in _CPU_FLAGS.items()})
    return [Feature(name, bool(enabled.get(name, False))) for name in FEATURE_NAMES]


class Features(collections.OrderedDict):
    """Feature name -> :class:`Feature`, one instance per process (as MXNet's).

    Examples
    --------
    >>> f = Features()
    >>> f is Features(), 'CUDA' in f, len(f)
    (True, True, 32)
    """
    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super().__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):
        """Filled once by ``__new__``; a second ``Features()`` must not empty it."""

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` (any case) is enabled.

        Raises
        ------
        RuntimeError
            For a name that is not a feature (MXNet raises RuntimeError too).
        """
        feature_name = feature_name.upper()
        if feature_name not in self:
            raise RuntimeError("Feature '{}' is unknown, known features are: {}".format(
                feature_name, list(self.keys())))
        return self[feature_name].enabled
