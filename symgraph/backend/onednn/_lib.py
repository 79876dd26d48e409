"""Finding, loading and declaring oneDNN 3.x's C API (``libdnnl.so.3``) with ctypes.

The numbers below are copied from oneDNN 3.2's ``dnnl_types.h`` / ``dnnl_common_types.h``
(they are stable across 3.x: the API only appends). Every handle is a ``c_void_p``; every
function that returns ``dnnl_status_t`` is checked by :func:`check`.
"""
import ctypes
import os
import sys
from importlib import metadata

from ... import config

# dnnl_status_t
STATUS = {0: 'success', 1: 'out_of_memory', 2: 'invalid_arguments', 3: 'unimplemented',
          4: 'last_impl_reached', 5: 'runtime_error', 6: 'not_required'}
# dnnl_data_type_t
F32 = 3
# dnnl_engine_kind_t
ENGINE_CPU = 1
# dnnl_stream_flags_t
STREAM_DEFAULT_FLAGS = 1
# dnnl_prop_kind_t
FORWARD_TRAINING = 64
FORWARD_INFERENCE = 96
BACKWARD_DATA = 160
BACKWARD_WEIGHTS = 192
BACKWARD = 128
# dnnl_normalization_flags_t
USE_GLOBAL_STATS = 0x1
USE_SCALE = 0x2
USE_SHIFT = 0x4
#: relu applied to the output (forward) and to the output's gradient (backward, from a
#: workspace the training forward writes)
FUSE_NORM_RELU = 0x8
# dnnl_data_type_t (continued)
S32 = 4
U8 = 6
# dnnl_alg_kind_t
CONVOLUTION_DIRECT = 0x1
ELTWISE_RELU = 0x20
ELTWISE_TANH = 0x21
ELTWISE_ELU = 0x22
ELTWISE_SOFT_RELU = 0x27
ELTWISE_LOGISTIC = 0x29
ELTWISE_GELU_ERF = 0x31
#: relu whose backward reads the forward output (dst) instead of its input
ELTWISE_RELU_USE_DST_FOR_BWD = 0x100
POOLING_MAX = 0x1ff
POOLING_AVG_INCLUDE_PADDING = 0x2ff
POOLING_AVG_EXCLUDE_PADDING = 0x3ff
LRN_ACROSS_CHANNELS = 0xaff
SOFTMAX_ACCURATE = 0x30000
SOFTMAX_LOG = 0x30001
BINARY_ADD = 0x1fff0
# execution argument indices (DNNL_ARG_*)
ARG_SRC = 1
#: a binary primitive's second source (its first is ARG_SRC)
ARG_SRC_1 = 2
ARG_DST = 17
ARG_WORKSPACE = 64
ARG_WEIGHTS = 33
ARG_BIAS = 41
ARG_DIFF_SRC = 129
ARG_DIFF_DST = 145
ARG_DIFF_WEIGHTS = 161
ARG_DIFF_BIAS = 169
ARG_MEAN = 49
ARG_VARIANCE = 50
ARG_SCALE = 51
ARG_SHIFT = 52
ARG_DIFF_SCALE = 255
ARG_DIFF_SHIFT = 256
# dnnl_format_tag_t
FORMAT_TAG_ANY = 1
# dnnl_query_t
QUERY_EXEC_ARG_MD = 255
QUERY_IMPL_INFO_STR = 8
MAX_NDIMS = 12

#: the shared library's file names, newest soname first
SONAMES = ('libdnnl.so.3', 'libdnnl.so')
#: the distributions that install it (the first is symgraph's dependency)
DISTRIBUTIONS = ('onednn-cpu-gomp', 'onednn')

Dims = ctypes.c_int64 * MAX_NDIMS


class Version(ctypes.Structure):
    """``dnnl_version_t``."""
    _fields_ = [('major', ctypes.c_int), ('minor', ctypes.c_int), ('patch', ctypes.c_int),
                ('hash', ctypes.c_char_p), ('cpu_runtime', ctypes.c_uint),
                ('gpu_runtime', ctypes.c_uint)]


class ExecArg(ctypes.Structure):
    """``dnnl_exec_arg_t``: an argument index and a memory object."""
    _fields_ = [('arg', ctypes.c_int), ('memory', ctypes.c_void_p)]


class DnnlError(RuntimeError):
    """A oneDNN call returned a status other than success."""

    def __init__(self, what, status):
        super().__init__('%s failed: %s (status %d)' % (what, STATUS.get(status, '?'),
                                                          status))
        self.status = status


def check(status, what):
    """Raise :class:`DnnlError` unless ``status`` is dnnl_success."""
    if status:
        raise DnnlError(what, status)


def candidates():
    """Paths to try for the library, in order.

    ``SYMGRAPH_ONEDNN_LIB`` (an explicit file) first, then the files the installed
    ``onednn-cpu-gomp`` / ``onednn`` wheels recorded (they install into ``<prefix>/lib``),
    then ``<sys.prefix>/lib``.
    """
    out = []
    explicit = config.path('ONEDNN_LIB')
    if explicit:
        return [explicit]
    for dist in DISTRIBUTIONS:
        try:
            files = metadata.distribution(dist).files or ()
        except metadata.PackageNotFoundError:
            continue
        found = {os.path.basename(str(f)): f for f in files}
        out += [os.path.normpath(str(found[s].locate())) for s in SONAMES if s in found]
    out += [os.path.join(sys.prefix, 'lib', s) for s in SONAMES]
    seen = set()
    return [p for p in out if not (p in seen or seen.add(p))]


_VP = ctypes.c_void_p
_P = ctypes.POINTER
_SIGNATURES = {
    # name: (argtypes, restype); restype None means dnnl_status_t (checked by the caller)
    'dnnl_version': ((), _P(Version)),
    'dnnl_engine_create': ((_P(_VP), ctypes.c_int, ctypes.c_size_t), None),
    'dnnl_engine_destroy': ((_VP,), None),
    'dnnl_stream_create': ((_P(_VP), _VP, ctypes.c_uint), None),
    'dnnl_stream_wait': ((_VP,), None),
    'dnnl_stream_destroy': ((_VP,), None),
    'dnnl_memory_desc_create_with_strides': ((_P(_VP), ctypes.c_int, Dims, ctypes.c_int,
                                              Dims), None),
    'dnnl_memory_desc_create_with_tag': ((_P(_VP), ctypes.c_int, Dims, ctypes.c_int,
                                          ctypes.c_int), None),
    'dnnl_memory_desc_destroy': ((_VP,), None),
    'dnnl_memory_desc_equal': ((_VP, _VP), ctypes.c_int),
    'dnnl_memory_desc_get_size': ((_VP,), ctypes.c_size_t),
    'dnnl_memory_create': ((_P(_VP), _VP, _VP, _VP), None),
    'dnnl_memory_set_data_handle': ((_VP, _VP), None),
    'dnnl_memory_destroy': ((_VP,), None),
    'dnnl_convolution_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int, _VP, _VP, _VP, _VP, Dims, Dims, Dims,
         Dims, _VP), None),
    'dnnl_convolution_backward_data_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, _VP, _VP, _VP, Dims, Dims, Dims, Dims, _VP, _VP), None),
    'dnnl_convolution_backward_weights_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, _VP, _VP, _VP, _VP, Dims, Dims, Dims, Dims, _VP, _VP),
        None),
    'dnnl_matmul_primitive_desc_create': ((_P(_VP), _VP, _VP, _VP, _VP, _VP, _VP), None),
    'dnnl_batch_normalization_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, _VP, _VP, ctypes.c_float, ctypes.c_uint, _VP), None),
    'dnnl_batch_normalization_backward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, _VP, _VP, _VP, ctypes.c_float, ctypes.c_uint, _VP, _VP),
        None),
    'dnnl_pooling_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int, _VP, _VP, Dims, Dims, Dims, Dims, Dims,
         _VP), None),
    'dnnl_pooling_backward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, _VP, _VP, Dims, Dims, Dims, Dims, Dims, _VP, _VP), None),
    'dnnl_eltwise_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int, _VP, _VP, ctypes.c_float, ctypes.c_float,
         _VP), None),
    'dnnl_eltwise_backward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, _VP, _VP, _VP, ctypes.c_float, ctypes.c_float, _VP, _VP),
        None),
    'dnnl_binary_primitive_desc_create': ((_P(_VP), _VP, ctypes.c_int, _VP, _VP, _VP, _VP),
                                          None),
    'dnnl_softmax_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int, _VP, _VP, ctypes.c_int, _VP), None),
    'dnnl_softmax_backward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, _VP, _VP, _VP, ctypes.c_int, _VP, _VP), None),
    'dnnl_lrn_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int, _VP, _VP, ctypes.c_int64, ctypes.c_float,
         ctypes.c_float, ctypes.c_float, _VP), None),
    'dnnl_primitive_attr_create': ((_P(_VP),), None),
    'dnnl_primitive_attr_destroy': ((_VP,), None),
    'dnnl_primitive_attr_set_post_ops': ((_VP, _VP), None),
    'dnnl_post_ops_create': ((_P(_VP),), None),
    'dnnl_post_ops_destroy': ((_VP,), None),
    'dnnl_post_ops_append_sum': ((_VP, ctypes.c_float, ctypes.c_int32, ctypes.c_int), None),
    'dnnl_post_ops_append_eltwise': ((_VP, ctypes.c_int, ctypes.c_float, ctypes.c_float),
                                     None),
    'dnnl_reorder_primitive_desc_create': ((_P(_VP), _VP, _VP, _VP, _VP, _VP), None),
    'dnnl_primitive_desc_query_md': ((_VP, ctypes.c_int, ctypes.c_int), _VP),
    'dnnl_primitive_desc_query': ((_VP, ctypes.c_int, ctypes.c_int, _VP), None),
    'dnnl_primitive_desc_destroy': ((_VP,), None),
    'dnnl_primitive_create': ((_P(_VP), _VP), None),
    'dnnl_primitive_execute': ((_VP, _VP, ctypes.c_int, _P(ExecArg)), None),
    'dnnl_primitive_destroy': ((_VP,), None),
}


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


#: dnnl_cpu_isa_t masks: an ISA value holds every bit of the ISAs below it
ISA_AVX2_VNNI = 0xf
ISA_AVX512_CORE_VNNI = 0x67
ISA_AVX512_CORE_BF16 = 0xe7


def effective_isa(lib):
    """oneDNN's ``dnnl_get_effective_cpu_isa()`` (what it dispatches to on this CPU, under
    ``ONEDNN_MAX_CPU_ISA``), or 0 where the library lacks the function."""
    fn = getattr(lib, 'dnnl_get_effective_cpu_isa', None)
    if fn is None:
        return 0
    fn.argtypes = []
    fn.restype = ctypes.c_int
    return int(fn())


def has_vnni(isa):
    """Whether oneDNN's int8 dot products use VNNI here: without it (plain AVX2/AVX-512)
    its u8 x s8 kernels add pairs of products in saturating 16 bits (vpmaddubsw), which
    is not the exact int32 sum MXNet's quantized operators define."""
    return (isa & ISA_AVX2_VNNI) == ISA_AVX2_VNNI or \
        (isa & ISA_AVX512_CORE_VNNI) == ISA_AVX512_CORE_VNNI


def has_bf16(isa):
    """Whether oneDNN has its native bfloat16 kernels here (AVX-512 BF16 or above)."""
    return (isa & ISA_AVX512_CORE_BF16) == ISA_AVX512_CORE_BF16


def impl_name(lib, pd):
    """The name of the implementation a primitive descriptor chose ('brgconv:avx2',
    'ref:any', ...)."""
    out = ctypes.c_char_p()
    check(lib.dnnl_primitive_desc_query(pd, QUERY_IMPL_INFO_STR, 0, ctypes.byref(out)),
          'dnnl_primitive_desc_query(impl_info_str)')
    return (out.value or b'').decode('ascii', 'replace')


def version(lib):
    """(major, minor, patch) of a loaded library."""
    v = lib.dnnl_version().contents
    return (v.major, v.minor, v.patch)
