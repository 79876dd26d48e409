"""Testing helpers with MXNet's names (``mx.test_utils``).

MXNet's module has no ``__all__``, so ``from mxnet.test_utils import *`` hands on every
public name it holds, the modules it imports (``np``, ``sys``, ``os``, ``time``, ...)
included, and MXNet's unit tests rely on that; this package has no ``__all__`` either and
imports the same names. The helpers of MXNet's unit tests that compare optimizers, check
random generators and build test data are in ``_mxnet_helpers.py``.
"""
import bz2  # noqa: F401  (star-exported as MXNet's module does)
import contextlib
import errno  # noqa: F401
import functools
import gzip
import hashlib
import json  # noqa: F401
import logging
import numbers
import os
import platform  # noqa: F401
import shutil
import struct
import sys
import tarfile
import tempfile
import time  # noqa: F401
import traceback
import urllib.request
import zipfile  # noqa: F401
from collections import OrderedDict  # noqa: F401
from contextlib import contextmanager  # noqa: F401

import numpy as np
import numpy.random as rnd  # noqa: F401
import numpy.testing as npt  # noqa: F401

import symgraph as mx  # noqa: F401  (the package, as MXNet's ``import mxnet as mx``)
from ..base import data_dir, ArgumentError, ArgumentTypeError, MissingFileError, \
    NotSupportedError
from ..context import Context, current_context, num_gpus  # noqa: F401
from .. import io
from ..ndarray import NDArray, array
from ..symbol import Symbol
from ..util import use_np, getenv, setenv, get_cuda_compute_capability  # noqa: F401
from ..runtime import Features  # noqa: F401

try:
    import scipy.stats as ss
except ImportError:             # MXNet's module sets it to None as well
    ss = None
try:
    import requests  # noqa: F401
except ImportError:
    requests = None

def default_context():
    """The context tests run on: :func:`set_default_context`'s, else the current one."""
    return current_context()


def set_default_context(ctx):
    """Make ``ctx`` the default context, for tests and for arrays made without one (as
    MXNet's does)."""
    from ..context import _set_default_context
    _set_default_context(ctx)


def default_dtype():
    return np.float32


def _tol_table(floats):
    table = dict(zip((np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)),
                     floats))
    table.update({np.dtype(t): 0 for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32,
                                           np.int64, np.uint64)})
    return table


def default_rtols():
    """Relative tolerance per dtype (MXNet 1.9.1's)."""
    return _tol_table((1e-2, 1e-4, 1e-5))


def default_atols():
    """Absolute tolerance per dtype (MXNet 1.9.1's)."""
    return _tol_table((1e-1, 1e-3, 1e-20))


def default_numeric_eps():
    """Finite-difference step per dtype (MXNet 1.9.1's)."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def get_tolerance(dat, tol, default_tol):
    """``tol`` if a number, else its (or the default) entry for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = np.dtype(dat.dtype)
    return (tol or {}).get(dtype, default_tol[dtype])


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing ``x`` with ``y``: the looser of their dtypes'."""
    x, y = (np.array(v) if isinstance(v, numbers.Number) else v for v in (x, y))
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def _np(a):
    return a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)


def same(a, b):
    return np.array_equal(_np(a), _np(b))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``a`` and ``b`` are close (broadcasting unless ``use_broadcast=False``)."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _np(a), _np(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Assert closeness as MXNet 1.9.1 does: tolerances by dtype unless given (a number or
    a dict by dtype), shapes broadcast unless ``use_broadcast=False``; the report names the
    worst element."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _np(a), _np(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError('shape mismatch: %s %s vs %s %s' % (names[0], a.shape, names[1],
                                                                 b.shape))
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b, err_msg='%s vs %s' % tuple(names))
        return
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        raise AssertionError('shape mismatch: %s %s vs %s %s'
                             % (names[0], a.shape, names[1], b.shape)) from None
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan,
                               err_msg='%s vs %s (rtol=%g, atol=%g)'
                               % (names[0], names[1], rtol, atol))


def almost_equal_ignore_nan(a, b, rtol=None, atol=None):
    a, b = np.copy(_np(a)), np.copy(_np(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan] = 0
    b[nan] = 0
    return almost_equal(a, b, rtol, atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=('a', 'b')):
    a, b = np.copy(_np(a)), np.copy(_np(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError('%s was not raised' % exception_type.__name__)


def random_arrays(*shapes):
    """Standard-normal float32 arrays of ``shapes`` (a 0-d array for ``()``)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_ndarray(shape, stype='default', density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A dense NDArray of standard-normal values (as MXNet's); a sparse ``stype``: the
    array of :func:`rand_sparse_ndarray`."""
    if stype != 'default':
        return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                   modifier_func=modifier_func,
                                   shuffle_csr_indices=shuffle_csr_indices,
                                   distribution=distribution, ctx=ctx)[0]
    arr = array(random_arrays(shape), ctx=ctx, dtype=dtype or default_dtype())
    if modifier_func is not None:
        arr = array(modifier_func(arr.asnumpy()), ctx=ctx, dtype=arr.dtype)
    return arr


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return (np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1),
            np.random.randint(low, dim2 + 1))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce ``dat`` over ``axis`` one axis at a time with ``numpy_reduce_func``."""
    axes = [axis] if isinstance(axis, int) else (list(axis) if axis is not None
                                                 else list(range(dat.ndim)))
    ret = dat
    for i in reversed(sorted(axes)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axes:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Bind NumPy ``inputs``, run forward, return the output(s) as NumPy arrays."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: array(v) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def _location(sym, location, ctx, dtype):
    if isinstance(location, dict):
        missing = set(sym.list_arguments()) - set(location)
        if missing:
            raise ArgumentError('location lacks arguments %s' % sorted(missing))
        location = {k: location[k] for k in sym.list_arguments()}
    else:
        location = dict(zip(sym.list_arguments(), location))
    return {k: array(_np(v), ctx=ctx, dtype=_dtype_of(v, dtype)) for k, v in location.items()}


def _dtype_of(v, dtype):
    # dtype='asnumpy' (or None) keeps each array's own dtype, as MXNet
    return _np(v).dtype if dtype is None or (isinstance(dtype, str) and dtype == 'asnumpy') \
        else dtype


def _aux(sym, aux_states, ctx, dtype):
    if aux_states is None:
        return None
    if isinstance(aux_states, dict):
        return {k: array(_np(v), ctx=ctx, dtype=_dtype_of(v, dtype))
                for k, v in aux_states.items()}
    return {k: array(_np(v), ctx=ctx, dtype=_dtype_of(v, dtype))
            for k, v in zip(sym.list_auxiliary_states(), aux_states)}


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float64, projection=None):
    """Central differences of ``sum(output * projection)`` at ``location`` (projection
    all ones by default: the sum of the outputs)."""
    grads = {}
    if projection is None:
        projection = [np.ones(o.shape) for o in executor.outputs]
    base_aux = {k: v.asnumpy() for k, v in executor.aux_dict.items()}

    def f():
        for k, v in base_aux.items():
            executor.aux_dict[k][:] = v
        outs = executor.forward(is_train=use_forward_train)
        return sum(float((o.asnumpy().astype(np.float64) * p).sum())
                   for o, p in zip(outs, projection))
    for name, arr in location.items():
        x = executor.arg_dict[name]
        v = x.asnumpy().astype(dtype)
        g = np.zeros_like(v)
        flat, gflat = v.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            x[:] = v
            fp = f()
            flat[i] = old - eps
            x[:] = v
            fm = f()
            flat[i] = old
            gflat[i] = (fp - fm) / (2 * eps)
        x[:] = v
        grads[name] = g
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32):
    """Compare the symbolic gradient of ``sum(out * random projection)`` with central
    differences, as MXNet's test utility does; the step and the tolerances follow the
    dtype unless given (float32 by default, as MXNet; float64 is more exact)."""
    ctx = ctx or default_context()
    loc = _location(sym, location, ctx, dtype)
    aux = _aux(sym, aux_states, ctx, dtype)
    if grad_nodes is None:
        grad_nodes = [k for k in sym.list_arguments()]
    if isinstance(grad_nodes, dict):
        reqs = {k: grad_nodes.get(k, 'null') for k in sym.list_arguments()}
    else:
        reqs = {k: ('write' if k in grad_nodes else 'null') for k in sym.list_arguments()}
    bad = sorted(k for k in grad_nodes if reqs.get(k) not in ('write', 'add', 'null'))
    if bad:
        raise ValueError('check_numeric_gradient: invalid grad_req for %s (write, add or null; '
                         'arguments are %s)' % (bad, sym.list_arguments()))
    # as MXNet: the gradient arrays of grad_nodes start random, so that 'add' must add to
    # them and 'null' must leave them alone
    orig = {k: np.random.normal(0, 0.01, size=loc[k].shape) for k in grad_nodes}
    grads = {k: array(orig[k] if k in orig else np.zeros(v.shape), ctx=ctx, dtype=v.dtype)
             for k, v in loc.items()}
    exe = sym.bind(ctx, loc, args_grad=grads, grad_req=reqs, aux_states=aux)
    base_aux = {k: v.asnumpy() for k, v in exe.aux_dict.items()}
    outs = exe.forward(is_train=use_forward_train)
    eps = get_tolerance(outs[0], numeric_eps, default_numeric_eps())
    rng = np.random.RandomState(1234)
    proj = [rng.normal(0, 1, o.shape) for o in outs]
    heads = [array(p, ctx=ctx, dtype=o.dtype) for p, o in zip(proj, outs)]
    exe.backward(heads)
    symbolic = {k: (grads[k] if exe.grad_dict.get(k) is None else exe.grad_dict[k]).asnumpy()
                for k in grad_nodes}
    for k, v in base_aux.items():
        exe.aux_dict[k][:] = v
    numeric = numeric_grad(exe, {k: loc[k] for k in grad_nodes if reqs[k] != 'null'},
                           eps=eps, use_forward_train=use_forward_train, dtype=np.float64,
                           projection=proj)
    for name in grad_nodes:
        sym_grad = symbolic[name]
        if reqs[name] == 'null':       # the gradient array is left as it was
            want, got = orig[name].astype(sym_grad.dtype), sym_grad
        else:
            want = numeric[name].astype(sym_grad.dtype)
            got = sym_grad - orig[name].astype(sym_grad.dtype) if reqs[name] == 'add' \
                else sym_grad
        assert_almost_equal(want, got, rtol, atol,
                            names=('NUMERICAL_%s' % name, 'BACKWARD_%s' % name))


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Bind ``location``, run forward (inference), compare with ``expected``; returns the
    executor's outputs (NDArrays), as MXNet."""
    ctx = ctx or default_context()
    loc = _location(sym, location, ctx, dtype)
    aux = _aux(sym, aux_states, ctx, dtype)
    exe = sym.bind(ctx, loc, aux_states=aux)
    outs = exe.forward(is_train=False)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, o, e in zip(sym.list_outputs(), outs, expected):
        assert_almost_equal(e, o, rtol, atol, names=('EXPECTED_%s' % name, 'FORWARD_%s' % name),
                            equal_nan=equal_nan)
    return outs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Bind, run a training forward and backward with ``out_grads``, compare gradients;
    returns the gradient NDArrays by name, as MXNet."""
    ctx = ctx or default_context()
    loc = _location(sym, location, ctx, dtype)
    aux = _aux(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    grads = {k: array(np.zeros(v.shape), ctx=ctx, dtype=v.dtype) for k, v in loc.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    exe = sym.bind(ctx, loc, args_grad=grads, grad_req=grad_req, aux_states=aux)
    exe.forward(is_train=True)
    if out_grads is not None:
        if isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in sym.list_outputs()]
        out_grads = [array(_np(g), ctx=ctx, dtype=_dtype_of(g, dtype)) for g in out_grads]
    exe.backward(out_grads)
    for name, e in expected.items():
        if grad_req.get(name, 'write') == 'null':
            continue
        assert_almost_equal(e, exe.grad_dict[name], rtol, atol,
                            names=('EXPECTED_%s' % name, 'BACKWARD_%s' % name),
                            equal_nan=equal_nan)
    return {k: v for k, v in exe.grad_dict.items() if v is not None}


# ----------------------------------------------------------------- helpers MXNet tests use
def random_sample(population, k):
    """``k`` elements of ``population`` in random order (NumPy's global random state)."""
    if not 0 <= k <= len(population):
        raise ArgumentError('random_sample: k=%r is not in [0, len(population)=%d]'
                            % (k, len(population)))
    population_copy = population[:]
    np.random.shuffle(population_copy)
    return population_copy[0:k]


def retry(n):
    """Decorator: run a stochastic test up to ``n`` times until it passes (an
    AssertionError on the last try is raised)."""
    if not (isinstance(n, int) and n > 0):
        raise ArgumentError('retry: n must be a positive int, not %r' % (n,))

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
        return wrapper
    return decorate


def set_env_var(key, val, default_val=""):
    """Set the environment variable ``key`` to ``val``; return its previous value (or
    ``default_val`` when it was unset)."""
    prev_val = os.environ.get(key, default_val)
    os.environ[key] = val
    return prev_val


@contextlib.contextmanager
def environment(*args):
    """Set environment variables for a ``with`` block or a decorated function, restoring
    them afterwards (even on error); a value of None unsets the variable.

    Parameters
    ----------
    *args
        ``(name, value)``, or one dict ``{name: value}``.

    Examples
    --------
    >>> import os
    >>> with environment('SYMGRAPH_DOC_EXAMPLE', '1'):
    ...     os.environ['SYMGRAPH_DOC_EXAMPLE']
    '1'
    >>> 'SYMGRAPH_DOC_EXAMPLE' in os.environ
    False
    """
    if len(args) == 1 and isinstance(args[0], dict):
        env_vars = args[0]
    elif len(args) == 2:
        env_vars = {args[0]: args[1]}
    else:
        raise ArgumentTypeError('environment: expecting one dict arg or two args: env var name and '
                                'value, got %d args' % len(args))

    def set_environ(env_var_dict):
        for name, value in env_var_dict.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    snapshot = {x: os.environ.get(x) for x in env_vars}
    set_environ(env_vars)
    try:
        yield
    finally:
        set_environ(snapshot)


@contextlib.contextmanager
def discard_stderr():
    """Discard what is written to the stderr file descriptor (C code included) inside the
    block; where stderr has no file descriptor, nothing is discarded."""
    with open(os.devnull, 'w') as bit_bucket:
        try:
            stderr_fileno = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            # stderr replaced by an object without a descriptor (e.g. captured)
            yield
            return
        sys.stderr.flush()
        old_stderr = os.dup(stderr_fileno)
        try:
            os.dup2(bit_bucket.fileno(), stderr_fileno)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(old_stderr, stderr_fileno)
            os.close(old_stderr)


def same_array(array1, array2):
    """Whether two NDArrays share memory (checked by writing into ``array1``)."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def list_gpus():
    """``range(n)`` over the n visible GPUs (empty without CuPy or a GPU)."""
    return range(num_gpus())


def get_etol(etol=None):
    """The error-rate threshold of :func:`assert_almost_equal_with_err` (default 0)."""
    return 0 if etol is None else etol


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=('a', 'b'),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like :func:`assert_almost_equal`, but with ``etol > 0`` a fraction of up to ``etol``
    of the elements may differ.

    Raises
    ------
    AssertionError
        Naming the error rate, the tolerances and the worst element.
    """
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan,
                            mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _np(a), _np(b)
    equals = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    err = 1 - np.count_nonzero(equals) / equals.size
    if err > etol:
        viol = np.abs(a - b) / (atol + rtol * np.abs(b))
        viol = np.where(np.isnan(viol), np.inf, viol)
        index = tuple(int(i) for i in np.unravel_index(np.argmax(viol), viol.shape))
        raise AssertionError(
            'Error rate %f exceeds etol=%f (rtol=%e, atol=%e): %d of %d elements differ; '
            'largest violation %f at %s: %s=%f, %s=%f'
            % (err, etol, rtol, atol, equals.size - np.count_nonzero(equals), equals.size,
               viol[index], index, names[0], a[index], names[1], b[index]))


def check_consistency(sym, ctx_list, scale=1.0, grad_req='write', arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Check that a symbol gives the same outputs and gradients on several contexts and
    dtypes (MXNet 1.9.1's procedure).

    Parameters
    ----------
    sym : Symbol or list of Symbol
        One symbol for all entries of ``ctx_list``, or one per entry.
    ctx_list : list of dict
        Each ``{'ctx': Context, <input>: shape, ..., 'type_dict': {<input>: dtype}}``: the
        keyword arguments of ``simple_bind``.
    scale : float
        Scale of the random inputs (normal, or uniform in +-0.92*scale with ``use_uniform``).
    grad_req : str, list or dict
    arg_params, aux_params : dict of str -> array, optional
        Inputs to use instead of random ones (aux states default to 0).
    rtol, atol : float or dict by dtype, optional
    raise_on_err : bool
        Raise the first mismatch; otherwise print it and go on.
    ground_truth : dict, optional
        Expected outputs and gradients by name; default: those of the most precise entry.
    equal_nan, use_uniform, rand_type
        As MXNet.

    Returns
    -------
    dict
        The ground truth used (outputs and gradients by name).
    """
    if len(ctx_list) <= 1:
        raise ArgumentError('check_consistency needs at least 2 entries in ctx_list, got %d'
                            % len(ctx_list))
    if isinstance(sym, Symbol):
        sym = [sym] * len(ctx_list)
    elif len(sym) != len(ctx_list):
        raise ArgumentError('check_consistency: %d symbols for %d contexts'
                            % (len(sym), len(ctx_list)))
    output_names = sym[0].list_outputs()
    arg_names = sym[0].list_arguments()
    exe_list = []
    for s, ctx in zip(sym, ctx_list):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise ArgumentError('check_consistency: the symbols differ in arguments or outputs: '
                                '%s %s vs %s %s' % (arg_names, output_names, s.list_arguments(),
                                                    s.list_outputs()))
        exe_list.append(s.simple_bind(grad_req=grad_req, **ctx))

    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params

    def smaller_dtype(dt1, dt2):
        """The least precise of two dtypes."""
        return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2

    # random inputs in a deterministic (sorted) order, for reproducibility
    for n, arr in sorted(exe_list[0].arg_dict.items()):
        if n not in arg_params:
            if use_uniform:
                arg_params[n] = np.random.uniform(low=-0.92 * scale, high=0.92 * scale,
                                                  size=arr.shape).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=arr.shape,
                                                 scale=scale).astype(rand_type)
    for n in exe_list[0].aux_dict:
        if n not in aux_params:
            aux_params[n] = 0
    for exe in exe_list:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == 'add':
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = np.zeros(arr.shape, dtype=arr.dtype)

    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exe_list]
    gt_idx = int(np.argmax(dtypes))     # the first entry of the most precise output dtype
    gt = ground_truth
    if gt is None:
        gt = exe_list[gt_idx].output_dict.copy()
        if grad_req != 'null':
            gt.update(exe_list[gt_idx].grad_dict)

    def compare(what, i, name, arr, gtarr, rt, at):
        try:
            assert_almost_equal(arr, gtarr, rtol=rt, atol=at, equal_nan=equal_nan,
                                names=('%s ctx %d' % (name, i), '%s ctx %d' % (name, gt_idx)))
        except AssertionError as e:
            print('%s Err: ctx %d vs ctx %d at %s' % (what, i, gt_idx, name))
            traceback.print_exc()
            if raise_on_err:
                raise e
            print(str(e))

    for exe in exe_list:
        exe.forward(is_train=False)
    for i, exe in enumerate(exe_list):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names, exe.outputs):
            compare('Predict', i, name, arr, gt[name], rtol, atol)

    if grad_req != 'null':
        for exe in exe_list:
            exe.forward(is_train=True)
        # the first executor's outputs, in the least precise dtype, are every head gradient
        least_precise = [out.dtype for out in exe_list[0].outputs]
        for exe in exe_list:
            least_precise = [smaller_dtype(out.dtype, dt)
                             for out, dt in zip(exe.outputs, least_precise)]
        golden = [out.asnumpy().astype(dt) for out, dt in zip(exe_list[0].outputs,
                                                              least_precise)]
        for exe in exe_list:
            exe.backward([array(g, ctx=out.context, dtype=out.dtype)
                          for g, out in zip(golden, exe.outputs)])
        for i, exe in enumerate(exe_list):
            if i == gt_idx:
                continue
            for name, arr in zip(output_names + arg_names, exe.outputs + exe.grad_arrays):
                if gt[name] is None:
                    if arr is not None:
                        raise AssertionError('%s: ctx %d has a gradient where ctx %d has '
                                             'none' % (name, i, gt_idx))
                    continue
                gtarr = gt[name]
                rt, at = rtol, atol
                # float16 data: compare float32 gradients (BatchNorm's gamma) as float16
                small_arr = smaller_dtype(arr.dtype, dtypes[i])
                small_gt = smaller_dtype(gtarr.dtype, dtypes[gt_idx])
                if small_arr != arr.dtype or small_gt != gtarr.dtype:
                    rt, at = get_tols(arr.astype(small_arr), gtarr.astype(small_gt), rtol, atol)
                compare('Train', i, name, arr, gtarr, rt, at)
    return gt


# ------------------------------------------------------------------------------ datasets
# (downloads into MXNet's cache directory $MXNET_HOME/datasets, checked by SHA-1)
#: SHA-1 of the dataset files on MXNet's Gluon repository (those of mxnet.gluon.data.vision)
_SHA1 = {
    'mnist/train-images-idx3-ubyte.gz': '6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d',
    'mnist/train-labels-idx1-ubyte.gz': '2a80914081dc54586dbdf242f9805a6b8d2a15fc',
    'mnist/t10k-images-idx3-ubyte.gz': 'c3a25af1f52dad7f726cce8cacb138654b760d48',
    'mnist/t10k-labels-idx1-ubyte.gz': '763e7fa3757d93b0cdec073cef058b2004252c17',
    'cifar10/cifar-10-binary.tar.gz': 'fab780a1e191a7eda0f345501ccd62d20f7ed891',
}


def _repo_file_url(namespace, filename):
    """URL of a file on the Gluon repository (``$MXNET_GLUON_REPO`` overrides it, as MXNet)."""
    repo = os.environ.get('MXNET_GLUON_REPO',
                          'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/')
    if not repo.endswith('/'):
        repo += '/'
    return '%sgluon/dataset/%s/%s' % (repo, namespace, filename)


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file's content is ``sha1_hash``."""
    sha1 = hashlib.sha1()
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def download(url, fname=None, dirname=None, overwrite=False, retries=5, sha1_hash=None):
    """Download ``url`` (http, https, file) into a file, as MXNet's ``test_utils.download``.

    Parameters
    ----------
    url : str
    fname : str, optional
        File name (default: the last part of the URL); joined to ``dirname`` when given.
    dirname : str, optional
        Directory, created if missing (default: the directory of ``fname``).
    overwrite : bool
        Download even if the file exists (with the right SHA-1, when one is given).
    retries : int
        Attempts before the last error is raised.
    sha1_hash : str, optional
        Expected SHA-1 of the content; a mismatch counts as a failed attempt.

    Returns
    -------
    str
        The file name.
    """
    if not (isinstance(retries, int) and retries >= 0):
        raise ArgumentError('Number of retries should be at least 0, got %r' % (retries,))
    if fname is None:
        fname = url.split('/')[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname and not os.path.exists(dirname):
        logging.info('create directory %s', dirname)
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname) and (sha1_hash is None
                                                    or check_sha1(fname, sha1_hash)):
        logging.info("%s exists, skipping download", fname)
        return fname
    attempts = max(retries, 1)
    for attempt in range(attempts):
        tmp = None
        try:
            with urllib.request.urlopen(url) as r, tempfile.NamedTemporaryFile(
                    'wb', dir=dirname or '.', prefix='.download-', delete=False) as f:
                tmp = f.name
                shutil.copyfileobj(r, f, 1 << 20)
            if sha1_hash is not None and not check_sha1(tmp, sha1_hash):
                raise ArgumentError('File %s downloaded from %s has the wrong content: SHA-1 is '
                                    'not %s (the download may be incomplete or the file '
                                    'outdated)' % (fname, url, sha1_hash))
            os.replace(tmp, fname)
            break
        except (OSError, ValueError) as e:
            if tmp is not None and os.path.exists(tmp):
                os.remove(tmp)
            left = attempts - attempt - 1
            if left == 0:
                raise
            print("download failed, retrying, {} attempt{} left"
                  .format(left, 's' if left > 1 else ''))
    logging.info("downloaded %s into %s successfully", url, fname)
    return fname


def _dataset_file(namespace, filename):
    """A dataset file in ``$MXNET_HOME/datasets/<namespace>``, downloaded once and checked."""
    return download(_repo_file_url(namespace, filename),
                    dirname=os.path.join(data_dir(), 'datasets', namespace),
                    sha1_hash=_SHA1['%s/%s' % (namespace, filename)])


def _read_mnist(label_name, image_name):
    with gzip.open(_dataset_file('mnist', label_name)) as flbl:
        struct.unpack(">II", flbl.read(8))
        label = np.frombuffer(flbl.read(), dtype=np.int8)
    with gzip.open(_dataset_file('mnist', image_name), 'rb') as fimg:
        _, _, rows, cols = struct.unpack(">IIII", fimg.read(16))
        image = np.frombuffer(fimg.read(), dtype=np.uint8).reshape(len(label), rows, cols)
        image = image.reshape(image.shape[0], 1, rows, cols).astype(np.float32) / 255
    return label, image


def get_mnist():
    """MNIST as NumPy arrays, downloaded once into ``$MXNET_HOME/datasets/mnist``
    (``~/.mxnet`` by default) and checked by SHA-1.

    Returns
    -------
    dict
        ``train_data`` (60000, 1, 28, 28) float32 in [0, 1], ``train_label`` (60000,) int8,
        ``test_data``, ``test_label``: MXNet's layout and dtypes.
    """
    train_lbl, train_img = _read_mnist('train-labels-idx1-ubyte.gz',
                                       'train-images-idx3-ubyte.gz')
    test_lbl, test_img = _read_mnist('t10k-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz')
    return {'train_data': train_img, 'train_label': train_lbl,
            'test_data': test_img, 'test_label': test_lbl}


def get_mnist_ubyte():
    """Write the four MNIST idx files (uncompressed, as ``MNISTIter`` reads them) into
    ``./data``, from the checked downloads of :func:`get_mnist`."""
    os.makedirs('data', exist_ok=True)
    for name in ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte',
                 't10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte'):
        target = os.path.join('data', name)
        if not os.path.exists(target):
            with gzip.open(_dataset_file('mnist', name + '.gz'), 'rb') as src, \
                    open(target + '.part', 'wb') as dst:
                shutil.copyfileobj(src, dst)
            os.replace(target + '.part', target)


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """MNIST training and validation iterators (``mx.io.MNISTIter``) over the idx files that
    :func:`get_mnist_ubyte` writes into ``./data``, as MXNet's: the training one shuffles,
    and ``input_shape`` of 3 dimensions gives images, otherwise flat rows.

    Returns
    -------
    (MNISTIter, MNISTIter)
        The training and the validation iterator.
    """
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    train = io.MNISTIter(image='data/train-images-idx3-ubyte',
                         label='data/train-labels-idx1-ubyte', input_shape=input_shape,
                         batch_size=batch_size, shuffle=True, flat=flat, num_parts=num_parts,
                         part_index=part_index)
    val = io.MNISTIter(image='data/t10k-images-idx3-ubyte', label='data/t10k-labels-idx1-ubyte',
                       input_shape=input_shape, batch_size=batch_size, flat=flat,
                       num_parts=num_parts, part_index=part_index)
    return train, val


def _extract(archive, root):
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, 'data_filter'):
            tar.extractall(root, filter='data')
            return
        for m in tar.getmembers():
            path = os.path.realpath(os.path.join(root, m.name))
            if not path.startswith(os.path.realpath(root) + os.sep) or m.issym() or m.islnk():
                raise ArgumentError('%s: refusing to extract %r outside %s'
                                    % (archive, m.name, root))
        tar.extractall(root)


def get_cifar10():
    """CIFAR-10 as NumPy arrays: the binary archive of MXNet's Gluon repository, downloaded
    once into ``$MXNET_HOME/datasets/cifar10``, checked by SHA-1 and unpacked.

    MXNet's ``get_cifar10`` fetches RecordIO files for ``ImageRecordIter`` into ``./data``
    and returns nothing; symgraph has no RecordIO reader, so it returns the arrays.

    Returns
    -------
    dict
        ``train_data`` (50000, 3, 32, 32) float32 in [0, 1], ``train_label`` (50000,) int32,
        ``test_data`` (10000, 3, 32, 32), ``test_label``.
    """
    root = os.path.join(data_dir(), 'datasets', 'cifar10')
    names = ['data_batch_%d.bin' % i for i in range(1, 6)] + ['test_batch.bin']

    def find(name):
        for d in (root, os.path.join(root, 'cifar-10-batches-bin')):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
        return None

    if any(find(n) is None for n in names):
        _extract(_dataset_file('cifar10', 'cifar-10-binary.tar.gz'), root)
        missing = [n for n in names if find(n) is None]
        if missing:
            raise MissingFileError('the CIFAR-10 archive in %s lacks %s' % (root, missing))

    def read(batch_names):
        raw = np.concatenate([np.fromfile(find(n), dtype=np.uint8).reshape(-1, 3072 + 1)
                              for n in batch_names])
        return (raw[:, 1:].reshape(-1, 3, 32, 32).astype(np.float32) / 255,
                raw[:, 0].astype(np.int32))

    train_data, train_label = read(names[:5])
    test_data, test_label = read(names[5:])
    return {'train_data': train_data, 'train_label': train_label,
            'test_data': test_data, 'test_label': test_label}


from ._mxnet_helpers import *  # noqa: E402,F401,F403
from ._sparse import rand_sparse_ndarray  # noqa: E402
