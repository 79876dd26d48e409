"""The engine, per-thread streams and cached primitives of the oneDNN backend.

Lifetimes: a cached :class:`Primitive` owns its oneDNN memory objects, which never own data;
:meth:`Primitive.execute` points every one of them at the NumPy array passed for that
argument, runs and waits, so the arrays (held by the caller's frame for the whole call) outlive
every use the library makes of them. Nothing outside a call points at NumPy memory that could
be freed: a memory object keeps a stale address between calls but is never executed without
being pointed anew.
"""
import ctypes
import threading

import numpy as np

from . import _lib
from ._lib import check

_VP = ctypes.c_void_p


def strided_desc(lib, shape, strides=None):
    """A float32 ``dnnl_memory_desc_t`` for ``shape`` with element ``strides`` (C order
    when None). The caller destroys it."""
    shape = tuple(int(s) for s in shape)
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        strides = tuple(reversed(strides))
    md = _VP()
    check(lib.dnnl_memory_desc_create_with_strides(ctypes.byref(md), len(shape),
                                                   _lib.Dims(*shape), _lib.F32,
                                                   _lib.Dims(*strides)),
          'dnnl_memory_desc_create_with_strides%s' % (shape,))
    return md


class Primitive:
    """A oneDNN primitive with one memory object per execution argument.

    Parameters
    ----------
    backend : Backend
    pd : c_void_p
        its primitive descriptor (owned from now on).
    args : sequence of int
        the DNNL_ARG_* indices it is executed with, in the order :meth:`execute` takes
        arrays.
    """

    def __init__(self, backend, pd, args):
        lib = self.lib = backend.lib
        self.pd = pd
        self.handle = _VP()
        self.mems = []
        try:
            check(lib.dnnl_primitive_create(ctypes.byref(self.handle), pd),
                  'dnnl_primitive_create')
            for a in args:
                md = lib.dnnl_primitive_desc_query_md(pd, _lib.QUERY_EXEC_ARG_MD, a)
                if not md:
                    raise _lib.DnnlError('query of argument %d' % a, 2)
                mem = _VP()
                check(lib.dnnl_memory_create(ctypes.byref(mem), md, backend.engine, None),
                      'dnnl_memory_create')
                self.mems.append(mem)
        except Exception:
            self.close()
            raise
        self.exec_args = (_lib.ExecArg * len(args))(
            *[_lib.ExecArg(a, m) for a, m in zip(args, self.mems)])
        self.nargs = len(args)

    def execute(self, stream, arrays):
        """Run on ``arrays`` (C-contiguous float32, one per argument, in ``args`` order)
        and wait for completion. The arrays must stay referenced until this returns, which
        the caller's own references guarantee."""
        lib = self.lib
        for mem, a in zip(self.mems, arrays):
            check(lib.dnnl_memory_set_data_handle(mem, a.ctypes.data),
                  'dnnl_memory_set_data_handle')
        check(lib.dnnl_primitive_execute(self.handle, stream, self.nargs, self.exec_args),
              'dnnl_primitive_execute')
        check(lib.dnnl_stream_wait(stream), 'dnnl_stream_wait')

    def close(self):
        """Destroy the memory objects, the primitive and its descriptor."""
        lib = self.lib
        for m in self.mems:
            lib.dnnl_memory_destroy(m)
        self.mems = []
        if self.handle:
            lib.dnnl_primitive_destroy(self.handle)
            self.handle = _VP()
        if self.pd:
            lib.dnnl_primitive_desc_destroy(self.pd)
            self.pd = None


class BackendCore:
    """A loaded library, its CPU engine, one stream and one primitive cache per thread.

    Attributes
    ----------
    version : tuple of int
        (major, minor, patch) of the library.
    path : str
        the file loaded.
    calls : dict
        how many times each operation ran through oneDNN (tests check the path was taken).
    """

    def __init__(self, lib, path):
        self.lib = lib
        self.path = path
        self.version = _lib.version(lib)
        self.engine = _VP()
        check(lib.dnnl_engine_create(ctypes.byref(self.engine), _lib.ENGINE_CPU, 0),
              'dnnl_engine_create')
        self._local = threading.local()
        self.calls = {}

    def _thread(self):
        t = self._local
        if getattr(t, 'stream', None) is None:
            stream = _VP()
            check(self.lib.dnnl_stream_create(ctypes.byref(stream), self.engine,
                                              _lib.STREAM_DEFAULT_FLAGS),
                  'dnnl_stream_create')
            t.stream, t.cache = stream, {}
        return t

    def run(self, key, build, arrays):
        """Execute the primitive cached under ``key`` (made by ``build()`` -> (pd, args)
        on first use; None caches "not supported") on ``arrays``; False when unsupported."""
        t = self._thread()
        prim = t.cache.get(key, 0)
        if prim == 0:
            try:
                pd, args = build()
                prim = Primitive(self, pd, args)
            except _lib.DnnlError:
                prim = None
            t.cache[key] = prim
        if prim is None:
            return False
        prim.execute(t.stream, arrays)
        self.calls[key[0]] = self.calls.get(key[0], 0) + 1
        return True

    def cached(self):
        """How many primitives (or refusals) this thread has cached."""
        return len(self._thread().cache)


def as_f32(a):
    """``a`` as a C-contiguous float32 array (no copy when it already is one)."""
    return np.ascontiguousarray(a, dtype=np.float32)
