"""Errors and small shared utilities (MXNet's ``mxnet.base``)."""
from __future__ import annotations

import contextlib
import ctypes
import difflib
import inspect
import os
import sys

import numpy as _np

__all__ = ['SymgraphError', 'MXNetError', 'ShapeError', 'TypeInferenceError',
           'BindError', 'ArgumentError', 'NameCollisionError', 'ParameterError',
           'ArgumentTypeError', 'UnknownNameError', 'UnknownOperatorError', 'MissingFileError',
           'UsageError',
           'NotSupportedError', 'close_names', 'rewrap', 'user_location', 'string_types',
           'numeric_types', 'integer_types', 'mx_real_t', 'py_str', 'NotImplementedForSymbol',
           'atomic_write', 'bfloat16', 'as_dtype', 'is_bfloat16', 'MX_BFLOAT16', 'mx_type']

# MXNet's type tuples: numpy scalars count as numbers (metrics return them)
string_types = (str,)
integer_types = (int, _np.int32, _np.int64)
numeric_types = (float, int, _np.generic)
#: MXNet's default real type
mx_real_t = _np.float32


_BFLOAT16 = []
#: MXNet's NumPy spelling of bfloat16 (``mxnet.contrib.amp``'s and its tests'): what
#: ``NDArray.dtype`` and ``Symbol.infer_type`` give for bfloat16, as MXNet's do
MX_BFLOAT16 = _np.dtype([('bfloat16', _np.uint16)])


def bfloat16():
    """NumPy's dtype for bfloat16: ``ml_dtypes.bfloat16`` (JAX's; NumPy has none).

    ml_dtypes is imported at the first call, not with the package: its import costs about
    0.6 s, as much as the rest of ``import symgraph``."""
    if not _BFLOAT16:
        import ml_dtypes        # noqa: lazily, see above
        _BFLOAT16.append(_np.dtype(ml_dtypes.bfloat16))
    return _BFLOAT16[0]


def as_dtype(t):
    """``np.dtype(t)``, knowing the name ``'bfloat16'`` before ml_dtypes is imported, and
    MXNet's own spelling of the type, ``np.dtype([('bfloat16', np.uint16)])``."""
    if type(t) is str:
        return bfloat16() if t == 'bfloat16' else _np.dtype(t)
    d = _np.dtype(t)
    if d.names is not None and d.names == ('bfloat16',):
        return bfloat16()
    return d


def is_bfloat16(t):
    """Whether ``t`` (a dtype, None, or anything ``np.dtype`` reads) is bfloat16, without
    importing ml_dtypes (no bfloat16 array exists before something imported it)."""
    if t is None:
        return False
    if isinstance(t, str):
        return t.strip() == 'bfloat16'
    if isinstance(t, type):         # a scalar type: ml_dtypes.bfloat16 itself
        return t.__name__ == 'bfloat16' and t.__module__.startswith('ml_dtypes')
    if isinstance(t, _np.dtype) and t.names == ('bfloat16',):      # MXNet's spelling
        return True
    if _BFLOAT16:
        return t == _BFLOAT16[0]
    return isinstance(t, _np.dtype) and t.kind == 'V' and t.name == 'bfloat16'


def mx_type(t):
    """What MXNet's API gives for dtype ``t`` (``NDArray.dtype``, ``infer_type``): the
    NumPy scalar type (``np.float32``), and for bfloat16 :data:`MX_BFLOAT16`."""
    t = _np.dtype(t)
    return MX_BFLOAT16 if t.kind == 'V' and is_bfloat16(t) else t.type


def py_str(x):
    """``str`` of bytes from the C API (UTF-8); a ``str`` is returned as is."""
    return x.decode('utf-8') if isinstance(x, (bytes, bytearray)) else x


#: MXNet's ctypes names for its C API (``mxnet.base``), for code that imports them: the
#: types are the same aliases; symgraph has no C library, so a call through ``_LIB``
#: raises NotSupportedError naming the function
SymbolHandle = NDArrayHandle = ctypes.c_void_p
mx_uint = ctypes.c_uint


def c_str(string):
    """A ``char*`` of ``string`` (MXNet's ``c_str``)."""
    return ctypes.c_char_p(string.encode('utf-8'))


class _NoCLibrary:
    """``mxnet.base._LIB`` where there is no libmxnet: every function raises."""

    def __getattr__(self, name):
        if name.startswith('__'):       # introspection (doctest's __wrapped__, copy, pickle)
            raise AttributeError(name)
        raise NotSupportedError('symgraph has no C library: MXNet C API function %s is not '
                                'available' % name)


_LIB = _NoCLibrary()


def check_call(ret):
    """MXNet's check of a C API return code: nonzero raises MXNetError."""
    if ret != 0:
        raise MXNetError('C API call failed with code %r' % (ret,))


def data_dir_default():
    """MXNet's default data directory: ``%APPDATA%/mxnet`` on Windows, else ``~/.mxnet``."""
    if sys.platform.startswith('win'):
        return os.path.join(os.environ.get('APPDATA', ''), 'mxnet')
    return os.path.join(os.path.expanduser('~'), '.mxnet')


def data_dir():
    """The data directory (datasets, models): ``$MXNET_HOME``, else :func:`data_dir_default`."""
    return os.getenv('MXNET_HOME', data_dir_default())


def _as_list(obj):
    """``obj`` if it is a list or tuple, else ``[obj]``."""
    if isinstance(obj, (list, tuple)):
        return obj
    return [obj]


class SymgraphError(Exception):
    """Base error of symgraph; also exported as ``MXNetError``."""


MXNetError = SymgraphError


class ShapeError(SymgraphError, ValueError):
    """Shapes that do not fit an operator (raised by shape inference and binding)."""


class TypeInferenceError(SymgraphError, TypeError):
    """Data types that do not fit an operator."""


class BindError(SymgraphError, ValueError):
    """Arrays given to ``bind`` that do not fit the symbol."""


class ArgumentError(SymgraphError, ValueError):
    """A value given to symgraph that does not fit (``except ValueError`` catches it)."""


class NameCollisionError(ArgumentError):
    """Two different Variables of one graph with the same name (two ``fc1_weight`` from two
    layers both named ``fc1``): binding by name could not tell them apart."""


class ParameterError(ArgumentError):
    """An operator parameter with a bad value, a bad combination of them, or missing one."""


class ArgumentTypeError(SymgraphError, TypeError):
    """A wrong kind of object: a Symbol where an NDArray goes, an NDArray into ``mx.sym``."""


class UnknownNameError(SymgraphError, KeyError):
    """An unknown name (operator, op_type, parameter, input, keyword); the message lists
    the valid names.  ``except KeyError`` catches it; ``str()`` is the plain message (a bare
    KeyError would quote it)."""

    def __str__(self):
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class UnknownOperatorError(UnknownNameError, AttributeError):
    """An operator name that is not registered; also an ``AttributeError``, so that
    ``hasattr(mx.sym, name)`` and ``getattr(mx.nd, name, None)`` keep working."""


def close_names(name, valid, n=3):
    """Up to ``n`` names of ``valid`` that look like ``name`` (for 'did you mean')."""
    return difflib.get_close_matches(str(name), [str(v) for v in valid], n=n)


def rewrap(err, prefix, whole=False):
    """``err`` (a symgraph error) again, of the same class, its message led by ``prefix``
    (replaced by it if ``whole``); ``SymgraphError`` when the class cannot be built from a
    message."""
    msg = prefix if whole else '%s: %s' % (prefix, err)
    try:
        new = type(err)(msg)
    except TypeError:
        new = SymgraphError(msg)
    return new


class MissingFileError(SymgraphError, FileNotFoundError):
    """A file to load that does not exist."""


class UsageError(SymgraphError, RuntimeError):
    """A call that does not fit the object's state (backward before forward, a closed
    iterator, a missing parameter at bind): a ``RuntimeError``, as MXNet raises there."""


class NotSupportedError(SymgraphError, NotImplementedError):
    """Something MXNet has that symgraph does not implement (sparse storage, ...)."""


class NotImplementedForSymbol(SymgraphError, NotImplementedError):
    """A function that exists for NDArray only, called on a Symbol (MXNet's message)."""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__ if inspect.isroutine(function) else str(function)
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = 'Function {}'.format(self.function)
        if self.alias:
            msg += ' (namely operator "{}")'.format(self.alias)
        if self.args:
            msg += ' with arguments ({})'.format(', '.join(self.args))
        msg += ' is not implemented for Symbol and only available in NDArray.'
        return msg


_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_PKG_ROOT = os.path.dirname(_PKG_DIR)
_INTERNAL_DIRS = None


def _internal_dirs():
    global _INTERNAL_DIRS
    if _INTERNAL_DIRS is None:
        import importlib.util
        dirs = [_PKG_DIR]
        for sub in ('symgraph.ops', 'symgraph.cuda'):   # located, not imported
            spec = importlib.util.find_spec(sub)
            if spec is not None and spec.submodule_search_locations:
                dirs.extend(spec.submodule_search_locations)
        _INTERNAL_DIRS = tuple(os.path.abspath(d) for d in dirs)
    return _INTERNAL_DIRS


_IS_INTERNAL = {}


def _internal(filename):
    """Whether code in ``filename`` belongs to symgraph (cached; paths normalised)."""
    r = _IS_INTERNAL.get(filename)
    if r is None:
        real = os.path.realpath(filename)
        r = filename.startswith('<frozen') or any(
            real.startswith(os.path.realpath(d) + os.sep) for d in _internal_dirs())
        _IS_INTERNAL[filename] = r
    return r


def user_location():
    """``'file:line'`` of the first frame outside symgraph: where the user made a node."""
    f = sys._getframe(1)
    while f is not None:
        if not _internal(f.f_code.co_filename):
            return '%s:%d' % (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return '<unknown>'


def flatten_nested(args, leaf_type, what, leaf_format=lambda leaf: 0):
    """``(flat list, format)`` of a nested list/tuple of ``leaf_type`` objects, as MXNet's
    control-flow helpers (``_flatten``) make them; ``leaf_format`` gives a leaf's format
    (0: one item; n > 1: a leaf standing for n items). :func:`regroup_nested` undoes it."""
    if isinstance(args, leaf_type):
        return [args], int(leaf_format(args))
    if not isinstance(args, (list, tuple)):
        raise TypeError('%s must be (nested) list of %s, but got %s of type %s'
                        % (what, leaf_type.__name__, str(args), str(type(args))))
    flat, fmts = [], []
    for i in args:
        arg, fmt = flatten_nested(i, leaf_type, what, leaf_format)
        flat.extend(arg)
        fmts.append(fmt)
    return flat, fmts


def regroup_nested(args, fmt):
    """``(nested value, rest of args)``: the structure ``fmt`` of :func:`flatten_nested`
    rebuilt from the front of ``args``."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    ret = []
    for i in fmt:
        res, args = regroup_nested(args, i)
        ret.append(res)
    return ret, args


@contextlib.contextmanager
def atomic_write(path, mode='wb', encoding='utf-8'):
    """Write the file ``path`` all at once or not at all: a context manager giving a file
    object (``mode`` ``'wb'``, or ``'w'`` for text in ``encoding`` with ``\\n`` line ends).

    What is written goes to a temporary file in the same folder (``.<name>.<random>.tmp``),
    which is flushed, fsynced and renamed over ``path`` when the block ends without an
    exception. A process killed while saving (Ctrl-C, the OOM killer, a preempted job)
    leaves the complete old file or the complete new one under ``path``, never a truncated
    one; an exception in the block removes the temporary file and leaves ``path`` as it
    was. (A process killed outright can leave its temporary file behind, never the final
    name half written.) The new file gets the permissions a plain ``open`` would give it.
    Checkpoints (``mx.nd.save``, ``save_checkpoint``, ``Symbol.save``, optimizer states)
    are written through this.
    """
    if mode not in ('w', 'wb'):
        raise ValueError("atomic_write: mode must be 'w' or 'wb', got %r" % (mode,))
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    if not name:
        raise IsADirectoryError('atomic_write: %r names a folder, not a file' % path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_BINARY', 0)
    for _ in range(100):
        tmp = os.path.join(folder, '.%s.%s.tmp' % (name, os.urandom(4).hex()))
        try:
            # 0o666 and the umask, as open() would create the file (mkstemp gives 0o600)
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError('atomic_write: no free temporary name beside %r' % path)
    try:
        text = mode == 'w'
        with os.fdopen(fd, mode, **({'encoding': encoding, 'newline': ''} if text else {})) \
                as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # the rename itself reaches the disk with the folder's entry (POSIX; not on Windows)
    with contextlib.suppress(OSError, AttributeError):
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
