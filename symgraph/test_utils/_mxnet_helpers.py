"""The helpers of MXNet 1.9.1's unit tests that ``mx.test_utils`` hands on by star import.

After MXNet 1.9.1's ``python/mxnet/test_utils.py``: optimizer comparison
(``compare_optimizer``), statistical checks of random generators (``verify_generator``,
``chi_square_check``, ``mean_check``, ``var_check``, ``gen_buckets_probs_with_ppf``), test
data makers and the platform probes (``is_aarch64_run``, ``is_cd_run``).
"""
import bz2
import copy
import json
import os
import platform
import zipfile

import numpy as np

from ..io import DataIter
from .. import random as _random
from . import assert_almost_equal, default_context, download

try:
    import scipy.stats as ss
except ImportError:
    ss = None

__all__ = ['effective_dtype', 'random_uniform_arrays', 'DummyIter',
           'gen_buckets_probs_with_ppf', 'mean_check', 'var_check', 'chi_square_check',
           'verify_generator', 'compare_ndarray_tuple', 'compare_optimizer',
           'same_symbol_structure', 'collapse_sum_like', 'is_cd_run', 'is_aarch64_run',
           'has_tvm_ops', 'is_op_runnable', 'assert_allclose', 'checkShapes',
           'create_2d_tensor', 'create_vector', 'get_identity_mat', 'get_identity_mat_batch',
           'rand_coord_2d', 'assign_each', 'assign_each2', 'get_zip_data', 'get_bz2_data',
           'new_matrix_with_real_eigvals_2d', 'new_matrix_with_real_eigvals_nd',
           'new_orthonormal_matrix_2d', 'new_sym_matrix_with_real_eigvals_2d',
           'new_sym_matrix_with_real_eigvals_nd', 'download_model']


def effective_dtype(dat):
    """The dtype whose tolerances apply to ``dat`` (its own: symgraph's GPU path does not
    trim float32 GEMM inputs to TF32, which is why MXNet may answer float16 there)."""
    return np.dtype(dat.dtype)


def random_uniform_arrays(*shapes, **kwargs):
    """NumPy arrays uniform in ``[low, high)`` (keywords ``low``, ``high``, ``dtype``)."""
    low = kwargs.pop('low', 0.0)
    high = kwargs.pop('high', 1.0)
    dtype = kwargs.pop('dtype', np.float32)
    if kwargs:
        raise TypeError('random_uniform_arrays: unexpected keywords %s' % sorted(kwargs))
    arrays = [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


class DummyIter(DataIter):
    """An iterator that returns the first batch of ``real_iter`` for ever (speed tests)."""

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The first batch of the real iterator; never raises StopIteration."""
        return self.the_batch


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets ``(ppf(i/n), ppf((i+1)/n))`` and their
    probabilities, for :func:`chi_square_check`."""
    if nbuckets <= 0:
        raise ValueError('gen_buckets_probs_with_ppf: nbuckets must be > 0, not %r'
                         % (nbuckets,))
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``generator(nsamples)`` lies within 3 standard errors of ``mu``."""
    samples = np.array(generator(nsamples))
    sample_mean = samples.mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < sample_mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of ``generator(nsamples)`` is within 3 standard errors
    of ``sigma ** 2``."""
    samples = np.array(generator(nsamples))
    sample_var = samples.var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < sample_var < sigma ** 2 + bound)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``generator`` against bucket probabilities.

    Parameters
    ----------
    generator : callable
        ``generator(n)`` returns n i.i.d. samples.
    buckets : list
        ``(low, high)`` ranges in ascending order (continuous), or the values (discrete).
    probs : list of float
        The probability of each bucket.

    Returns
    -------
    p : float
        The p value; observed and expected counts per bucket follow.

    Raises
    ------
    ImportError
        Without SciPy (MXNet's test needs scipy.stats too).
    """
    if ss is None:
        raise ImportError('scipy is not available. Please check if the scipy python '
                          'bindings are installed.')
    if not isinstance(buckets, list):
        raise TypeError('chi_square_check: buckets must be a list, not %s'
                        % type(buckets).__name__)
    if len(probs) != len(buckets):
        raise ValueError('chi_square_check: %d probabilities for %d buckets'
                         % (len(probs), len(buckets)))
    samples = generator(nsamples)
    continuous = isinstance(buckets[0], (list, tuple))
    if continuous:
        edges = np.zeros((len(buckets) * 2,), dtype=np.float32)
        for i, (low, high) in enumerate(buckets):
            if low > high or (i < len(buckets) - 1 and high > buckets[i + 1][0]):
                raise ValueError('chi_square_check: buckets must ascend without overlap, '
                                 'bucket %d is %r' % (i, buckets[i]))
            edges[2 * i], edges[2 * i + 1] = low, high
        ids = np.searchsorted(edges, samples, side='right') // 2
    else:
        ids = np.array(samples)
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = np.zeros(shape=len(buckets), dtype=np.int64)
    for i, bucket in enumerate(buckets):
        observed[i] = (ids == (i if continuous else bucket)).sum()
    # SciPy >= 1.9 refuses expected counts that do not sum to the observed total, which
    # MXNet's truncated integer counts rarely do: the test statistic takes them rescaled
    _, p = ss.chisquare(f_obs=observed, f_exp=expected * (observed.sum() / expected.sum()))
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Repeat :func:`chi_square_check` ``nrepeat`` times; at least ``success_rate`` of the
    p values must exceed ``alpha``. Returns the p values.

    Raises
    ------
    AssertionError
        Too few tests passed (the p values and counts are in the message).
    """
    results = [chi_square_check(generator=generator, buckets=buckets, probs=probs,
                                nsamples=nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in results]
    if (np.array(p_values) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            'Generator test fails, Chi-square p=%s, obs_freq=%s, expected_freq=%s.'
            '\nbuckets=%s, probs=%s' % (p_values, [r[1] for r in results],
                                        [r[2] for r in results], buckets, probs))
    return p_values


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """Assert two (nested tuples of) arrays are almost equal; None on either side passes."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def _compare_pair(shape, dtype, stype, ctx, density=None):
    """(dense copy, array) of compare_optimizer: uniform dense, or random sparse."""
    if stype == 'default':
        a = _random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        return a.copyto(ctx), a
    if stype not in ('row_sparse', 'csr'):
        raise ValueError('compare_optimizer: unknown storage type %r' % (stype,))
    from ._sparse import rand_sparse_ndarray
    a = rand_sparse_ndarray(shape, stype, density=density, dtype=dtype, ctx=ctx)[0]
    return a.copyto(ctx).tostype('default'), a


def compare_optimizer(opt1, opt2, shape, dtype, w_stype='default', g_stype='default',
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Update the same random weight with ``opt1`` and ``opt2`` once; assert that states
    and weights agree. A list of shapes compares ``opt1`` one tensor at a time with a
    multi-tensor ``opt2``.

    Sparse ``w_stype``/``g_stype`` ('row_sparse', 'csr'): ``opt2`` gets random sparse
    arrays (a weight of density 1), ``opt1`` their dense copies, as MXNet's.
    """
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError('compare_optimizer: ntensors=%d needs a list of shapes' % ntensors)
        w1, w2 = _compare_pair(shape, dtype, w_stype, ctx, density=1)
        g1, g2 = _compare_pair(shape, dtype, g_stype, ctx)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2, g2 = copy.deepcopy(w1), copy.deepcopy(g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1, sym2):
    """Whether two symbols' JSON nodes have the same operators, node by node."""
    nodes1 = json.loads(sym1.tojson())['nodes']
    nodes2 = json.loads(sym2.tojson())['nodes']
    return all(n1['op'] == n2['op'] for n1, n2 in zip(nodes1, nodes2))


def collapse_sum_like(a, shape):
    """Sum NumPy array ``a`` over the axes that ``shape`` broadcasts along."""
    if len(a.shape) < len(shape):
        raise ValueError('collapse_sum_like: %s has fewer axes than %s' % (a.shape, shape))
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[i + lead]:
            if s != 1:
                raise ValueError('collapse_sum_like: %s does not broadcast to %s'
                                 % (shape, a.shape))
            axes.append(i + lead)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def is_cd_run():
    """Whether the tests run in MXNet's continuous-delivery job (``CD_JOB=1``)."""
    return os.environ.get('CD_JOB', 0) == '1'


def is_aarch64_run():
    """Whether this machine is aarch64."""
    return platform.machine() == 'aarch64'


def has_tvm_ops():
    """False: symgraph has no TVM-generated operators."""
    return False


def is_op_runnable():
    """True: every operator symgraph registers runs on the CPU."""
    return True


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``numpy.testing.assert_allclose`` of two arrays (NDArrays are converted)."""
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def _np(a):
    return a.asnumpy() if hasattr(a, 'asnumpy') else np.asarray(a)


def checkShapes(a, b):  # noqa: N802  (MXNet's name)
    """Assert two arrays have the same shape."""
    if a.shape != b.shape:
        raise AssertionError('Shape mismatch: %s vs %s' % (a.shape, b.shape))


def create_2d_tensor(rows, columns, dtype=np.int64):
    """A (rows, columns) NDArray whose row i holds i."""
    from .. import ndarray as nd
    a = np.arange(0, rows).reshape(rows, 1)
    return nd.array(np.broadcast_to(a, shape=(a.shape[0], columns)), dtype=dtype)


def create_vector(size, dtype=np.int64):
    """The NDArray ``arange(size)``."""
    from .. import ndarray as nd
    return nd.array(np.arange(0, size), dtype=dtype)


def get_identity_mat(size):
    """The (size, size) identity as an NDArray."""
    from .. import ndarray as nd
    return nd.array(np.identity(size))


def get_identity_mat_batch(size):
    """A batch of one (size, size) identity: shape (1, size, size)."""
    from .. import ndarray as nd
    return nd.array(np.identity(size)).expand_dims(0)


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point in ``[x_low, x_high] x [y_low, y_high]``."""
    return np.random.randint(x_low, x_high + 1), np.random.randint(y_low, y_high + 1)


def assign_each(the_input, function):
    """``function`` applied to every element of a NumPy array (a new float array)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function)(the_input)


def assign_each2(input1, input2, function):
    """``function(a, b)`` over two same-shaped NumPy arrays."""
    if input1.shape != input2.shape:
        raise ValueError('assign_each2: shapes %s and %s differ' % (input1.shape, input2.shape))
    if function is None:
        return np.array(input1)
    return np.vectorize(function)(input1, input2)


def get_zip_data(data_dir, url, data_origin_name):
    """Download the zip file at ``url`` into ``data_dir`` and extract it there."""
    data_origin_name = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_origin_name):
        download(url, dirname=data_dir, overwrite=False)
        with zipfile.ZipFile(data_origin_name) as zf:
            zf.extractall(data_dir)


_MODEL_URL = 'http://data.mxnet.io/models/'
#: MXNet 1.9.1's ``download_model`` table: name -> (symbol path, params path) under
#: _MODEL_URL
_MODELS = {
    'imagenet1k-inception-bn': ('imagenet/inception-bn/Inception-BN-symbol.json',
                                'imagenet/inception-bn/Inception-BN-0126.params'),
    'imagenet1k-resnet-18': ('imagenet/resnet/18-layers/resnet-18-symbol.json',
                             'imagenet/resnet/18-layers/resnet-18-0000.params'),
    'imagenet1k-resnet-34': ('imagenet/resnet/34-layers/resnet-34-symbol.json',
                             'imagenet/resnet/34-layers/resnet-34-0000.params'),
    'imagenet1k-resnet-50': ('imagenet/resnet/50-layers/resnet-50-symbol.json',
                             'imagenet/resnet/50-layers/resnet-50-0000.params'),
    'imagenet1k-resnet-101': ('imagenet/resnet/101-layers/resnet-101-symbol.json',
                              'imagenet/resnet/101-layers/resnet-101-0000.params'),
    'imagenet1k-resnet-152': ('imagenet/resnet/152-layers/resnet-152-symbol.json',
                              'imagenet/resnet/152-layers/resnet-152-0000.params'),
    'imagenet1k-resnext-50': ('imagenet/resnext/50-layers/resnext-50-symbol.json',
                              'imagenet/resnext/50-layers/resnext-50-0000.params'),
    'imagenet1k-resnext-101': ('imagenet/resnext/101-layers/resnext-101-symbol.json',
                               'imagenet/resnext/101-layers/resnext-101-0000.params'),
    'imagenet1k-resnext-101-64x4d': (
        'imagenet/resnext/101-layers/resnext-101-64x4d-symbol.json',
        'imagenet/resnext/101-layers/resnext-101-64x4d-0000.params'),
    'imagenet11k-resnet-152': ('imagenet-11k/resnet-152/resnet-152-symbol.json',
                               'imagenet-11k/resnet-152/resnet-152-0000.params'),
    'imagenet11k-place365ch-resnet-152': ('imagenet-11k-place365-ch/resnet-152-symbol.json',
                                          'imagenet-11k-place365-ch/resnet-152-0000.params'),
    'imagenet11k-place365ch-resnet-50': ('imagenet-11k-place365-ch/resnet-50-symbol.json',
                                         'imagenet-11k-place365-ch/resnet-50-0000.params'),
}


def download_model(model_name, dst_dir='./', meta_info=None):
    """Download a checkpoint from data.mxnet.io (MXNet 1.9.1's ``download_model``):
    ``(path prefix, epoch)`` of the files written into ``dst_dir``, or ``(None, 0)`` for
    a name not in ``meta_info`` (``{name: {'symbol': url, 'params': url}}``; default
    MXNet's table of ImageNet models)."""
    if meta_info is None:
        meta_info = {k: {'symbol': _MODEL_URL + s, 'params': _MODEL_URL + p}
                     for k, (s, p) in _MODELS.items()}
    if model_name not in meta_info:
        return None, 0
    os.makedirs(dst_dir, exist_ok=True)
    meta = dict(meta_info[model_name])
    if 'symbol' not in meta or 'params' not in meta:
        raise KeyError('download_model: meta_info[%r] needs a symbol and a params url'
                       % model_name)
    prefix = os.path.join(dst_dir, model_name)
    download(meta['symbol'], prefix + '-symbol.json')
    params = prefix + '-0000.params'
    download(meta['params'], params)
    return prefix, 0


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Download the bz2 file at ``url`` into ``data_dir`` and decompress it to
    ``data_name`` (the compressed file is removed afterwards), unless that exists."""
    data_name = os.path.join(data_dir, data_name)
    data_origin_name = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_name):
        download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
        with bz2.BZ2File(data_origin_name, 'rb') as bz_file, open(data_name, 'wb') as fout:
            for line in bz_file:
                fout.write(line)
        os.remove(data_origin_name)


def new_matrix_with_real_eigvals_2d(n):
    """A random (n, n) matrix with real eigenvalues (a similarity transform of a diagonal)."""
    shape = (n, n)
    q = np.random.normal(size=shape)
    q = q / np.linalg.norm(q, axis=0)
    d = np.diag(np.random.normal(size=n))
    return np.dot(np.dot(q, d), np.linalg.inv(q))


def new_matrix_with_real_eigvals_nd(shape):
    """A batch of matrices with real eigenvalues; ``shape`` ends in (n, n)."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]) \
        .reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random (n, n) orthonormal matrix (Q of a QR decomposition)."""
    return np.linalg.qr(np.random.normal(size=(n, n)))[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric (n, n) matrix."""
    q = new_orthonormal_matrix_2d(n)
    return np.dot(np.dot(q, np.diag(np.random.normal(size=n))), q.T)


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A batch of random symmetric matrices; ``shape`` ends in (n, n)."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]) \
        .reshape(shape)
