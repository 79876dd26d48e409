"""The engine, per-thread streams and cached primitives of the oneDNN backend.

A primitive is created with the layouts oneDNN prefers (``format_tag_any``: blocked layouts
such as nChw16c, where its fast kernels run); each argument whose chosen layout differs from
the plain C-order array the caller holds gets a cached reorder primitive and a cached
internal buffer, so the NumPy side only ever sees plain (N, C, *S) arrays.

The internal buffers are not the primitive's own: every call is synchronous (it waits for
the stream), so all primitives of a thread share one growing workspace of 64-byte aligned
slots (:meth:`BackendCore.workspace`), as MXNet's convolutions share their scratch space;
the cached primitives then cost no activation-sized memory each. While an executor lends
the thread scratch memory (:meth:`BackendCore.lend`: the part of its buffers free during
the step), the internal buffers are carved from that instead, and the workspace does not
grow.

Constant arguments (inference weights, ``'const'`` in the argument list) are the exception:
their reordered copy lives in a buffer the :class:`Primitive` owns, made again only when
the caller's token changes (the weights were changed), so a cached primitive reorders them
once.

Lifetimes: no other memory object owns data. :meth:`Primitive.execute` points every one of them
-- at the caller's arrays, and at the workspace slots, which it holds in its own frame --
before it runs, and waits for the stream before it returns, so every array the library
touches outlives the use; a slot replaced by a larger one is freed only after the call that
replaced it has finished with it. Between calls a memory object keeps a stale address but is
never executed without being pointed anew.
"""
import ctypes
import threading
import weakref

import numpy as np

from . import _lib
from ._lib import check
from ... import config

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


def any_desc(lib, shape):
    """A float32 ``dnnl_memory_desc_t`` for ``shape`` whose layout the primitive chooses.
    The caller destroys it."""
    shape = tuple(int(s) for s in shape)
    md = _VP()
    check(lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), len(shape),
                                               _lib.Dims(*shape), _lib.F32,
                                               _lib.FORMAT_TAG_ANY),
          'dnnl_memory_desc_create_with_tag%s' % (shape,))
    return md


#: the memory orders of activations the backend reads and writes besides C order
CHANNELS_LAST = 'channels_last'


def channels_last_strides(shape):
    """Element strides of (N, C, *S) laid out channels last ((N, *S, C) in memory)."""
    shape = tuple(int(s) for s in shape)
    strides = [0] * len(shape)
    strides[1] = 1
    acc = max(shape[1], 1)
    for i in range(len(shape) - 1, 1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    strides[0] = acc
    return tuple(strides)


def channels_last_desc(lib, shape):
    """A float32 descriptor of (N, C, *S) laid out channels last (NWC, NHWC, NDHWC): the
    layout oneDNN's fast convolution and pooling kernels take besides the blocked ones."""
    return strided_desc(lib, shape, channels_last_strides(shape))


def layout_of(a):
    """``CHANNELS_LAST`` when ``a`` (a float32 array of 3 to 5 dimensions) lies channels
    last and not also in C order, else None (C order, or anything else)."""
    if a.ndim < 3 or a.ndim > 5 or a.flags.c_contiguous or a.dtype != np.float32:
        return None
    key = (a.shape, a.strides)
    got = _LAYOUTS.get(key, 0)
    if got == 0:
        want = channels_last_strides(a.shape)
        got = CHANNELS_LAST if all(s == 4 * w for s, w, n in zip(a.strides, want, a.shape)
                                   if n > 1) else None
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        _LAYOUTS[key] = got
    return got


#: (shape, strides) -> layout_of's answer (the executors ask for the same few, often)
_LAYOUTS = {}


def activation(a):
    """(``a`` as float32, its layout): a channels-last array as it lies, anything else as
    a C-contiguous array (a copy where it is not one)."""
    if layout_of(a) == CHANNELS_LAST:
        return a, CHANNELS_LAST
    return as_f32(a), None


def dense(a):
    """Whether ``a`` is a float32 array lying densely in C order or channels last: its
    memory, from the address of its first element, is then its values in memory order,
    which elementwise primitives take as one 1-D array (``a`` itself is handed to them:
    a flattened view would be a new object each call, whose address costs a
    ``ctypes`` query, 2-3 us, where :func:`address` remembers the executor's arrays)."""
    return a.dtype == np.float32 and (a.flags.c_contiguous or layout_of(a) == CHANNELS_LAST)


def same_or_apart(a, b):
    """Whether dense arrays ``a`` and ``b`` are the very same memory or share none: an
    elementwise kernel reads each vector before it writes it, so its output may be one
    of its inputs, but not a shifted overlap of it."""
    return not np.may_share_memory(a, b) or (address(a) == address(b)
                                              and a.nbytes == b.nbytes)


def act_desc(lib, shape, layout):
    """The descriptor of an activation of ``shape`` in ``layout`` (None: C order)."""
    return channels_last_desc(lib, shape) if layout == CHANNELS_LAST \
        else strided_desc(lib, shape)


def dest_layout(out, shape):
    """The layout of ``out`` (None: C order) when it can take a float32 activation of
    ``shape`` as it lies (see :func:`act_dest`), else None: a caller's buffer lying
    channels last gets its result written so."""
    return layout_of(out) if isinstance(out, np.ndarray) and out.dtype == np.float32 \
        and out.shape == tuple(shape) and out.flags.writeable else None


def act_dest(out, shape, layout):
    """``out`` when it can take a float32 activation of ``shape`` lying in ``layout`` (a
    writeable float32 array of that shape and layout), else a new such array."""
    if isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == tuple(shape) \
            and out.flags.writeable and (layout_of(out) == layout if layout is not None
                                         else out.flags.c_contiguous):
        return out
    return empty_act(shape, layout)


def empty_act(shape, layout):
    """An uninitialised float32 array of logical ``shape`` lying in ``layout``."""
    shape = tuple(shape)
    if layout != CHANNELS_LAST:
        return np.empty(shape, np.float32)
    nd = len(shape)
    perm = (0,) + tuple(range(2, nd)) + (1,)
    inv = (0, nd - 1) + tuple(range(1, nd - 1))
    return np.empty(tuple(shape[i] for i in perm), np.float32).transpose(inv)


class Primitive:
    """A oneDNN primitive, its memory objects and the reorders to and from plain arrays.

    Parameters
    ----------
    backend : BackendCore
    pd : c_void_p
        its primitive descriptor (owned from now on, even when this raises).
    args : sequence of (int, c_void_p, bool)
        (DNNL_ARG_* index, the plain memory descriptor of the caller's array, whether the
        argument is an output), in the order :meth:`execute` takes arrays. The descriptors
        stay the caller's.
    """

    def __init__(self, backend, pd, args):
        lib = self.lib = backend.lib
        self.pd = pd
        self.handle = _VP()
        self.mems = []           # every memory object (destroyed by close)
        self.user = []           # per argument: the memory object of the caller's array
        self.sizes = []          # per argument: bytes of the caller's array
        self.inner = []          # [(memory object, bytes)] in the primitive's layouts
        self.reorders = []       # [(primitive, pd, exec args, is_output)]
        self.const = []          # [(reorder exec, owned buffer)] of constant arguments
        self.inout_src = []      # memory objects of the arrays 'inout' arguments start from
        self.token = None        # what the constant buffers were last reordered from
        self.const_reorders = 0  # how many times they were (tests check the cache holds)
        try:
            check(lib.dnnl_primitive_create(ctypes.byref(self.handle), pd),
                  'dnnl_primitive_create')
            exec_args = []
            for spec in args:
                arg, plain, is_out = spec[:3]
                inout_md = plain
                if isinstance(is_out, tuple):       # ('inout', descriptor of its source)
                    is_out, inout_md = is_out
                const = len(spec) > 3 and spec[3] == 'const'
                chosen = lib.dnnl_primitive_desc_query_md(pd, _lib.QUERY_EXEC_ARG_MD, arg)
                if not chosen:
                    raise _lib.DnnlError('query of argument %d' % arg, 2)
                if plain is None:       # the caller's buffer has the chosen layout
                    plain = chosen
                self.sizes.append(lib.dnnl_memory_desc_get_size(plain))
                user = self._memory(backend, plain, None)
                self.user.append(user)
                if lib.dnnl_memory_desc_equal(chosen, plain):
                    exec_args.append(_lib.ExecArg(arg, user))
                    continue
                nbytes = lib.dnnl_memory_desc_get_size(chosen)
                if const:
                    # reordered once per token (see execute) into a buffer of its own
                    buf = _aligned(nbytes)
                    inner = self._memory(backend, chosen, buf.ctypes.data)
                    self.const.append((len(self.reorders), buf))
                else:
                    inner = self._memory(backend, chosen, None)
                    self.inner.append((inner, nbytes))
                exec_args.append(_lib.ExecArg(arg, inner))
                if is_out == 'inout':
                    # starts from another array of the caller's (a residual), reordered
                    # straight in: the caller need not copy it into the output first
                    src = self._memory(backend, inout_md, None)
                    self.inout_src.append(src)
                    self._reorder(backend, inout_md, chosen, src, inner, False)
                elif not is_out:
                    self._reorder(backend, plain, chosen, user, inner, 'const' if const
                                  else False)
                if is_out:
                    self._reorder(backend, chosen, plain, inner, user, True)
        except Exception:
            self.close()
            raise
        self.exec_args = (_lib.ExecArg * len(exec_args))(*exec_args)
        self.nargs = len(exec_args)
        # the largest internal buffer takes slot 0, the next slot 1...: slots then hold
        # activations or weights, not both (3 activation-sized slots on the CIFAR ResNet,
        # in argument order, where 2 suffice)
        order = sorted(range(len(self.inner)), key=lambda i: -self.inner[i][1])
        self.slot_index = [order.index(i) for i in range(len(self.inner))]
        self.before = [r for r in self.reorders if r[3] is False]
        self.before_const = [r for r in self.reorders if r[3] == 'const']
        self.after = [r for r in self.reorders if r[3] is True]
        # the memory objects execute points at the caller's arrays, and the address each
        # was last given (None: none yet): an executor hands the same buffers every step,
        # and a call that would set the same address again is skipped
        self.handles = self.user + self.inout_src
        self.pointers = [None] * len(self.handles)
        self.inner_handles = [mem for mem, _ in self.inner]
        self.inner_pointers = [None] * len(self.inner)

    def _memory(self, backend, md, handle):
        mem = _VP()
        check(self.lib.dnnl_memory_create(ctypes.byref(mem), md, backend.engine, handle),
              'dnnl_memory_create')
        self.mems.append(mem)
        return mem

    def _reorder(self, backend, src_md, dst_md, src, dst, is_out):
        lib = self.lib
        rpd, prim = _VP(), _VP()
        check(lib.dnnl_reorder_primitive_desc_create(ctypes.byref(rpd), src_md, backend.engine,
                                                     dst_md, backend.engine, None),
              'dnnl_reorder_primitive_desc_create')
        status = lib.dnnl_primitive_create(ctypes.byref(prim), rpd)
        if status:
            lib.dnnl_primitive_desc_destroy(rpd)
            check(status, 'dnnl_primitive_create (reorder)')
        args = (_lib.ExecArg * 2)(_lib.ExecArg(_lib.ARG_SRC, src),
                                  _lib.ExecArg(_lib.ARG_DST, dst))
        self.reorders.append((prim, rpd, args, is_out))

    def execute(self, thread, arrays, token=None):
        """Run on ``arrays`` (float32, one per argument, in ``args`` order, then the array
        each reordered 'inout' argument starts from: see :attr:`inout_src`) in the calling
        thread's stream and workspace, and wait for completion. The arrays must stay
        referenced until this returns, which the caller's own references guarantee.

        Constant arguments (``'const'``) are reordered into their own buffers only when
        ``token`` differs from the last call's (None: every call): the caller changes the
        token whenever their values may have changed."""
        self.execute_at(thread, map(address, arrays), token)

    def execute_at(self, thread, ptrs, token=None):
        """:meth:`execute` on the arrays at the data addresses ``ptrs`` (an iterable): a
        replay of :meth:`BackendCore.record` passes those of arrays it has found to be the
        very arrays of the recorded call, alive."""
        lib = self.lib
        stream = thread.stream
        set_handle = lib.dnnl_memory_set_data_handle
        slots = None
        if self.inner:
            inner = thread.borrow([n for _, n in self.inner]) if thread.lent is not None \
                else None
            if inner is not None:
                thread.borrowed += 1
            else:
                slots = [thread.workspace(i, n) for i, (_, n)
                         in zip(self.slot_index, self.inner)]
                inner = [ptr for _, ptr in slots]
            _point(set_handle, self.inner_handles, self.inner_pointers, inner)
        _point(set_handle, self.handles, self.pointers, ptrs)
        if self.before_const and (token is None or token != self.token):
            self.token = None
            for prim, _, args, _ in self.before_const:
                check(lib.dnnl_primitive_execute(prim, stream, 2, args), 'reorder')
            self.const_reorders += 1
        for prim, _, args, _ in self.before:
            check(lib.dnnl_primitive_execute(prim, stream, 2, args), 'reorder')
        check(lib.dnnl_primitive_execute(self.handle, stream, self.nargs, self.exec_args),
              'dnnl_primitive_execute')
        for prim, _, args, _ in self.after:
            check(lib.dnnl_primitive_execute(prim, stream, 2, args), 'reorder')
        check(lib.dnnl_stream_wait(stream), 'dnnl_stream_wait')
        if self.before_const:
            self.token = token
        del slots           # only now may a replaced slot be freed

    def impl(self):
        """The implementation oneDNN chose ('brgconv:avx2', 'jit:uni', ...), asked once."""
        name = self.__dict__.get('_impl')
        if name is None:
            try:
                name = _lib.impl_name(self.lib, self.pd) if self.pd else 'closed'
            except _lib.DnnlError:
                name = 'unknown'
            self._impl = name
        return name

    def __del__(self):
        # primitives kept in an executor's state go with it (thread caches live on)
        try:
            self.close()
        except Exception:       # interpreter shutdown: the library may be gone
            pass

    def close(self):
        """Destroy the reorders, the memory objects, the primitive and its descriptor."""
        lib = self.lib
        for prim, rpd, _, _ in self.reorders:
            lib.dnnl_primitive_destroy(prim)
            lib.dnnl_primitive_desc_destroy(rpd)
        self.reorders = []
        for m in self.mems:
            lib.dnnl_memory_destroy(m)
        self.mems = []
        if self.handle:
            lib.dnnl_primitive_destroy(self.handle)
            self.handle = _VP()
        if self.pd:
            lib.dnnl_primitive_desc_destroy(self.pd)
            self.pd = None
        self.inner = []


#: the untimed run (see :meth:`BackendCore.time_primitives`)
_EXECUTE_AT = Primitive.execute_at


def _timed_execute_at(hook, clock):
    """:meth:`Primitive.execute_at` reporting ``hook(implementation, t0, t1)`` after each
    run (its reorders and the wait included), ``t0``/``t1`` readings of ``clock``."""
    def execute_at(self, thread, ptrs, token=None):
        t0 = clock()
        try:
            _EXECUTE_AT(self, thread, ptrs, token)
        finally:
            hook(self.impl(), t0, clock())
    execute_at.__doc__ = _EXECUTE_AT.__doc__
    return execute_at


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
        #: whether :meth:`record` keeps calls for :meth:`replay` (``SYMGRAPH_ONEDNN_REPLAY=0``
        #: at load: not; tests compare both ways)
        self.replays = config.flag('ONEDNN_REPLAY')

    def _thread(self):
        t = self._local
        if getattr(t, 'stream', None) is None:
            stream = _VP()
            check(self.lib.dnnl_stream_create(ctypes.byref(stream), self.engine,
                                              _lib.STREAM_DEFAULT_FLAGS),
                  'dnnl_stream_create')
            t.stream, t.cache = stream, {}
            t.slots = []
            t.workspace = lambda i, n, t=t: _slot(t.slots, i, n)
            t.lent = None
            t.borrowed = 0       # calls whose buffers came from lent scratch (tests)
            t.borrow = lambda sizes, t=t: _carve(t.lent, sizes)
            t.recording = None   # a list while record() runs
        return t

    def reorder_primitive(self, src_md, dst_md, attr=None):
        """A :class:`Primitive` (arguments: source, destination) copying memory laid out
        as ``src_md`` into ``dst_md`` by a oneDNN reorder, which converts the data type
        and layout on the way (``attr``: its attributes, e.g. scales, or None)."""
        pd = _VP()
        check(self.lib.dnnl_reorder_primitive_desc_create(
            ctypes.byref(pd), src_md, self.engine, dst_md, self.engine, attr),
            'dnnl_reorder_primitive_desc_create')
        return Primitive(self, pd, [(_lib.ARG_SRC, src_md, False),
                                    (_lib.ARG_DST, dst_md, True)])

    def primitive(self, key, build, cache=None):
        """The primitive cached under ``key`` in this thread (made by ``build()`` ->
        Primitive on first use), or None when oneDNN refuses (a refusal is cached too).

        ``cache``: a dict of the caller's to keep it in instead of the thread's cache (by
        thread and key), for primitives holding one layer's constant weights: they live
        as long as that dict (a bound executor's state), not for the whole process."""
        t = self._thread()
        store, k = (t.cache, key) if cache is None else (cache, (threading.get_ident(), key))
        prim = store.get(k, 0)
        if prim == 0:
            try:
                prim = build()
            except _lib.DnnlError:
                prim = None
            store[k] = prim
        return prim

    def execute(self, key, prim, arrays, token=None):
        """Run ``prim`` (from :meth:`primitive`) on ``arrays`` and count the call."""
        t = self._thread()
        prim.execute(t, arrays, token)
        if t.recording is not None:
            t.recording.append((key[0], prim, arrays, token))
        self.calls[key[0]] = self.calls.get(key[0], 0) + 1

    def record(self, memo, tag, arrays, run, result):
        """``run()``, a call of this backend that returns an array of ``arrays`` (or a
        tuple of them, or None where it declines), whose primitive calls are kept in
        ``memo`` for :meth:`replay` when it returned ``arrays[result]`` (``result``: an
        index, or a tuple of indexes for a tuple) and every array those calls took is one
        of ``arrays``, none made by the call. A call on the very same arrays then computes
        what this one did (shapes, strides and dtypes are the arrays' own and never
        change, and so are the primitives the call chose), and :meth:`replay` runs its
        primitives again without working the call out anew: an executor hands an
        operator its buffers, weights and gradients every step.

        ``memo`` is the caller's dict (its Step's: the backend keeps no table of its own)
        and ``tag`` names the call in it (which call of the Step's operator); the
        operator's parameters must decide the rest of the call. A call is kept per thread
        (the primitives are this thread's) and per first array. Nothing is kept for a call
        inside another's recording, for one that passed constant arguments (their token is
        the caller's to change), or while an array is not weakly referenceable. Returns
        what ``run()`` returned."""
        t = self._thread()
        if t.recording is not None or not self.replays:
            return run()
        t.recording = calls = []
        try:
            got = run()
        finally:
            t.recording = None
        if got is None or not calls or any(c[3] is not None for c in calls):
            return got      # (constant arguments' tokens are the caller's to change)
        returned, wanted = (got, result) if isinstance(result, tuple) else ((got,), (result,))
        if len(returned) != len(wanted) or any(g is not arrays[i]
                                               for g, i in zip(returned, wanted)):
            return got
        ids = {id(a) for a in arrays if a is not None}
        if any(id(a) not in ids for _, _, used, _ in calls for a in used):
            return got
        try:
            refs = tuple(None if a is None else weakref.ref(a) for a in arrays)
        except TypeError:
            return got
        if len(memo) >= MEMO_LIMIT:
            for k, (r, _) in list(memo.items()):
                if any(x is not None and x() is None for x in r):
                    del memo[k]
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
        kept = [(kind, prim, [address(a) for a in used], token)
                for kind, prim, used, token in calls]
        memo[_site(tag, arrays)] = (refs, kept)
        return got

    def replay(self, memo, tag, arrays):
        """Run again the primitive calls :meth:`record` kept in ``memo`` for call ``tag``
        when ``arrays`` are the very arrays of that call (all alive, by identity) and this
        is the thread that made it; True when it did, False when the caller must make the
        call itself. The primitives run at once: every input must hold this call's values
        before the caller asks."""
        got = memo.get(_site(tag, arrays))
        if got is None or not self.replays:
            return False
        refs, calls = got
        if len(refs) != len(arrays):
            return False
        for r, a in zip(refs, arrays):
            if r is None:
                if a is not None:
                    return False
            elif a is None or r() is not a:    # (a dead reference gives None)
                return False
        t = self._thread()
        counts = self.calls
        for kind, prim, ptrs, token in calls:
            prim.execute_at(t, ptrs, token)
            counts[kind] = counts.get(kind, 0) + 1
        return True

    @staticmethod
    def time_primitives(hook, clock=None):
        """Report every primitive run, in every thread, as ``hook(implementation, t0, t1)``
        (``clock()`` readings around it), or stop doing so (``hook=None``). mx.profiler sets
        it while it runs: the timing lives in a method swapped in for that time, so that
        runs while nobody profiles pay nothing for it."""
        Primitive.execute_at = _EXECUTE_AT if hook is None else _timed_execute_at(hook, clock)

    def run(self, key, build, arrays, token=None):
        """Execute the primitive cached under ``key`` (made by ``build()`` -> Primitive on
        first use; a refusal is cached too) on ``arrays``; False when oneDNN refuses."""
        prim = self.primitive(key, build)
        if prim is None:
            return False
        self.execute(key, prim, arrays, token)
        return True

    def lend(self, buf):
        """Scratch memory the caller lends this thread's primitives (a 1-D uint8 array;
        None takes it back): until then their internal buffers are carved from it when it
        is large enough. The caller keeps ``buf`` alive and unused meanwhile."""
        self._thread().lent = buf

    def workspace_bytes(self):
        """Bytes of this thread's shared workspace."""
        return sum(b.nbytes for b, _ in getattr(self._local, 'slots', ()))

    def cached_primitives(self):
        """{key: Primitive} of this thread's cache (refusals left out)."""
        return {k: p for k, p in self._thread().cache.items() if p is not None}

    def cached(self):
        """How many primitives (or refusals) this thread has cached."""
        return len(self._thread().cache)


#: at most this many calls a memo keeps before those of dead arrays are dropped (a Step
#: that ``mx.nd`` shares among its calls sees new arrays every call)
MEMO_LIMIT = 256


def _site(tag, arrays):
    """The key of a recorded call in its memo: its tag, its first array and the thread, so
    that one Step serving several threads (or arrays) keeps a call for each."""
    return tag, id(arrays[0]) if arrays else None, threading.get_ident()


def _point(set_handle, mems, last, ptrs):
    """Point memory object ``mems[k]`` at address ``ptrs[k]`` where ``last[k]`` (the
    address it was last given) differs, and record it."""
    for k, (mem, ptr) in enumerate(zip(mems, ptrs)):
        if last[k] != ptr:
            status = set_handle(mem, ptr)
            if status:
                check(status, 'dnnl_memory_set_data_handle')
            last[k] = ptr


def _slot(slots, i, nbytes):
    """(array, 64-byte aligned address) of workspace slot ``i``, at least ``nbytes`` from
    that address. A slot only grows; the array it replaces lives on in the caller's frame
    (which holds what this returned) until its call ends."""
    while len(slots) <= i:
        slots.append((np.empty(0, np.uint8), 0))
    buf, ptr = slots[i]
    if buf.nbytes < nbytes + 64:
        buf = np.empty(nbytes + 64, np.uint8)
        ptr = buf.ctypes.data
        ptr += -ptr % 64
        slots[i] = (buf, ptr)
    return buf, ptr


def _aligned(nbytes):
    """A 64-byte aligned uint8 array of ``nbytes`` (a view of a slightly larger one)."""
    buf = np.empty(nbytes + 64, np.uint8)
    off = -buf.ctypes.data % 64
    return buf[off:off + nbytes]


def _carve(buf, sizes):
    """64-byte aligned addresses in ``buf`` (uint8, which the caller keeps alive) of
    ``sizes`` bytes one after another, or None when ``buf`` is too small."""
    start = address(buf)
    ptr = start + -start % 64
    ptrs = []
    for n in sizes:
        ptrs.append(ptr)
        ptr += -(-n // 64) * 64
    if ptr - start > buf.nbytes:
        return None
    return ptrs


#: id(array) -> (weak reference, data address) of arrays given to primitives: the
#: executor hands the same buffers, weights and gradients every step, and ``a.ctypes``
#: costs about 3 us per array
_ADDRESSES = {}


def address(a):
    """The data address of NumPy array ``a`` (cached while ``a`` lives: an array's data
    never moves; ``ndarray.resize`` refuses arrays referenced elsewhere, and the arrays
    here are views or executors' own)."""
    got = _ADDRESSES.get(id(a))
    if got is not None and got[0]() is a:
        return got[1]
    ptr = a.ctypes.data
    try:
        ref = weakref.ref(a)
    except TypeError:
        return ptr
    if len(_ADDRESSES) >= 16384:
        _ADDRESSES.clear()
    _ADDRESSES[id(a)] = (ref, ptr)
    return ptr


def dest(out, shape):
    """``out`` when it can take a float32 result of ``shape`` (a C-contiguous float32 NumPy
    array of that shape), else a new array. Every array a primitive writes is one the
    caller holds for the call, so an ``out`` lives as long as the call (see the module
    notes)."""
    if isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == tuple(shape) \
            and out.flags.c_contiguous and out.flags.writeable:
        return out
    return np.empty(shape, np.float32)


def as_f32(a):
    """``a`` as a C-contiguous float32 array (no copy when it already is one)."""
    return np.ascontiguousarray(a, dtype=np.float32)
