"""NDArray behaviours MXNet 1.9.1's own tests/python/unittest/test_ndarray.py relies on
(issue 29): pickling in MXNet's format, np-shape semantics of saved files, from_numpy's
shared memory, NumPy arrays as parameters, contiguous basic slices. MXNet-made bytes come
from tests/golden/make_mxnet_parity_opA.py."""
import json
import os
import pickle
from itertools import combinations_with_replacement, permutations

import numpy as np
import pytest

import symgraph as mx

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                      'data', 'mxnet_parity_opA.json')


@pytest.fixture(scope='module')
def golden():
    with open(GOLDEN) as f:
        return json.load(f)


ARRAYS = {
    'arange_2x3_float32': lambda: mx.nd.arange(6).reshape((2, 3)),
    'int64_3': lambda: mx.nd.array([1, -2, 3], dtype='int64'),
    'float64_scalarlike': lambda: mx.nd.array([2.5], dtype='float64'),
    'uint8_2x2': lambda: mx.nd.array([[0, 255], [7, 8]], dtype='uint8'),
}


@pytest.mark.parametrize('name', sorted(ARRAYS))
def test_getstate_writes_mxnet_bytes(golden, name):
    state = ARRAYS[name]().__getstate__()
    assert set(state) == {'handle'} and isinstance(state['handle'], bytearray)
    assert bytes(state['handle']).hex() == golden['pickle'][name]


@pytest.mark.parametrize('name', sorted(ARRAYS))
def test_setstate_reads_mxnet_bytes(golden, name):
    want = ARRAYS[name]()
    got = mx.nd.zeros((1,))
    got.__setstate__({'handle': bytearray(bytes.fromhex(golden['pickle'][name]))})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    got[:] = 1      # writable, its own memory
    assert (got.asnumpy() == 1).all()


def test_pickle_round_trip_and_gpu_saved_state_loads_on_cpu():
    a = mx.nd.array(np.random.RandomState(0).rand(3, 4))
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    # MXNet's test: arange(1) saved on gpu(0) (dev_type 2) loads where no GPU is
    gpu_state = bytearray(b'\xc9\xfa\x93\xf9' + bytes(4) + b'\x01\x00\x00\x00\x01'
                          + bytes(7) + b'\x02' + bytes(11) + bytes(4))
    c = mx.nd.arange(3)
    c.__setstate__({'handle': gpu_state})
    assert c.shape == (1,) and c.asnumpy()[0] == 0
    if mx.context.num_gpus() == 0:
        assert c.context == mx.cpu()


def test_setstate_refuses_bad_state():
    a = mx.nd.zeros((1,))
    with pytest.raises(mx.MXNetError, match='truncated'):
        a.__setstate__({'handle': bytearray(b'\xc9\xfa\x93\xf9\x00')})
    with pytest.raises(ValueError, match='handle'):
        a.__setstate__({'data': 1})


def test_np_shape_files_load_only_in_their_semantics(tmp_path):
    f = str(tmp_path / 'arrays')
    legacy = [mx.nd.array(np.arange(6).reshape(2, 3)), mx.nd.zeros((2, 1))]
    mx.nd.save(f, legacy)
    with mx.np_shape(True):
        with pytest.raises(mx.MXNetError, match='np-shape semantics off'):
            mx.nd.load(f)
    assert [a.shape for a in mx.nd.load(f)] == [(2, 3), (2, 1)]
    with mx.np_shape(True):
        scalar = [mx.nd.array(np.array(3.0)), mx.nd.array(np.zeros((0, 4)))]
        mx.nd.save(f, scalar)
        got = mx.nd.load(f)
        assert [a.shape for a in got] == [(), (0, 4)]
        assert got[0].asnumpy() == 3.0
    with open(f, 'rb') as fh:
        assert fh.read()[24:28] == b'\xca\xfa\x93\xf9'     # MXNet's V3 record magic
    with pytest.raises(mx.MXNetError, match='np-shape semantics on'):
        mx.nd.load(f)
    with open(f, 'rb') as fh:
        with pytest.raises(mx.MXNetError, match='np-shape'):
            mx.nd.load_frombuffer(fh.read())


def test_from_numpy_shares_memory_and_locks_the_numpy_array():
    a = np.array([[1, 2], [3, 4], [5, 6]], dtype='float32')
    m = mx.nd.from_numpy(a)
    with pytest.raises(ValueError):
        a[2, 1] = 0
    m[2, 1] = 100
    assert a[2, 1] == 100
    # a second zero-copy NDArray of the same (now read-only) array writes through too
    m2 = mx.nd.from_numpy(a)
    m2[0, 0] = -1
    assert a[0, 0] == -1 and m[0, 0].asscalar() == -1
    # memory that is not NumPy's own (bytes) stays read-only
    b = mx.nd.from_numpy(np.frombuffer(b'abcd', dtype=np.uint8))
    with pytest.raises(ValueError):
        b[0] = 1
    with pytest.raises(ValueError):
        mx.nd.from_numpy(np.ones((2, 3)).T)
    c = np.ones(3)
    mx.nd.from_numpy(c, zero_copy=False)[0] = 5
    assert c[0] == 1 and c.flags.writeable


def test_numpy_array_as_a_parameter():
    x = mx.nd.array(np.arange(3).reshape(1, 3))
    want = np.broadcast_to(np.arange(3), (4, 3))
    np.testing.assert_array_equal(mx.nd.broadcast_to(x, shape=np.array([4, 3])).asnumpy(), want)
    np.testing.assert_array_equal(x.broadcast_to(shape=np.array([4, 3])).asnumpy(), want)


def test_basic_indexing_slice_is_contiguous_matches_numpy():
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    slices = [slice(None), slice(2), slice(1, 3), slice(None, None, 2), slice(0, 1),
              slice(None, None, -1), slice(3, None, -2), slice(5, 5)]
    f = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    for idx in combinations_with_replacement(slices, 4):
        for slc in permutations(idx):
            assert f(slc, x.shape) == x[slc].flags.contiguous, slc
    with pytest.raises(ValueError, match='2 slices'):
        f((slice(None),) * 2, (2, 3, 4))


def _zipf_prob(classes, range_max):
    classes = np.asarray(classes, np.float64)
    return (np.log(classes + 2) - np.log(classes + 1)) / np.log(range_max + 1)


def test_rand_zipfian_ndarray_and_symbol():
    range_max, n = 20, 20000
    mx.random.seed(7)
    true = mx.nd.array([0, 3, 19], dtype='int32')
    sampled, count_true, count_sampled = mx.nd.contrib.rand_zipfian(true, n, range_max)
    assert sampled.dtype == np.int64 and sampled.shape == (n,)
    assert count_true.dtype == np.float64 and count_sampled.dtype == np.float64
    s = sampled.asnumpy()
    assert s.min() >= 0 and s.max() < range_max
    np.testing.assert_allclose(count_true.asnumpy(), _zipf_prob([0, 3, 19], range_max) * n)
    np.testing.assert_allclose(count_sampled.asnumpy(), _zipf_prob(s, range_max) * n)
    # the draws follow the distribution (4 sigma of a binomial count per class)
    freq = np.bincount(s, minlength=range_max)
    p = _zipf_prob(np.arange(range_max), range_max)
    assert (np.abs(freq - n * p) < 4 * np.sqrt(n * p * (1 - p)) + 1).all()
    outs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(mx.sym.var('t'), 50, range_max)))
    got = outs.bind(mx.cpu(), {'t': true}).forward()
    assert [o.shape for o in got] == [(50,), (3,), (50,)]
    np.testing.assert_allclose(got[2].asnumpy(), _zipf_prob(got[0].asnumpy(), range_max) * 50)
    with pytest.raises(ValueError, match='range_max'):
        mx.nd.contrib.rand_zipfian(true, 5, 0)
    with pytest.raises(TypeError, match='Symbol'):
        mx.sym.contrib.rand_zipfian(true, 5, 3)


def test_cached_op_runs_a_symbol_on_ndarrays():
    sym = mx.sym.Convolution(kernel=(3, 3), num_filter=10) + 2
    op = mx.nd.CachedOp(sym)
    rng = np.random.RandomState(0)
    data = mx.nd.array(rng.rand(3, 4, 6, 6))
    weight = mx.nd.array(rng.rand(10, 4, 3, 3))
    bias = mx.nd.array(rng.rand(10))
    grads = [mx.nd.zeros(a.shape) for a in (data, weight, bias)]
    exe = sym.bind(mx.cpu(), args=[data.copy(), weight.copy(), bias.copy()], args_grad=grads)
    want = exe.forward(is_train=True)[0].asnumpy()
    o1 = op(data, weight, bias)
    np.testing.assert_allclose(o1.asnumpy(), want, rtol=1e-5)
    o2 = mx.nd.zeros(o1.shape)
    assert op(data, weight, bias, out=o2) is o2
    np.testing.assert_allclose(o2.asnumpy(), want, rtol=1e-5)
    # the gradients are the executor's, and a retained graph runs backward twice
    exe.backward(mx.nd.ones(o1.shape) * 2)
    weight.attach_grad()
    bias.attach_grad()
    with mx.autograd.record():
        o = op(data, weight, bias) * 2
    o.backward(retain_graph=True)
    np.testing.assert_allclose(weight.grad.asnumpy(), grads[1].asnumpy(), rtol=1e-4)
    o.backward()
    np.testing.assert_allclose(bias.grad.asnumpy(), grads[2].asnumpy(), rtol=1e-5)
    with pytest.raises(ValueError, match='takes 3'):
        op(data, weight)
    with pytest.raises(TypeError, match='unexpected keyword'):
        op(data, weight, bias, foo=1)


def test_cached_op_updates_auxiliary_states_in_place():
    sym = mx.sym.BatchNorm(mx.sym.var('x'), name='bn', momentum=0.5, fix_gamma=False)
    assert sym.list_inputs() == ['x', 'bn_gamma', 'bn_beta', 'bn_moving_mean',
                                 'bn_moving_var']
    x = mx.nd.array(np.arange(12.0).reshape(4, 3))
    gamma, beta = mx.nd.ones((3,)), mx.nd.zeros((3,))
    mean, var = mx.nd.zeros((3,)), mx.nd.ones((3,))
    with mx.autograd.train_mode():
        y = mx.nd.CachedOp(sym)(x, gamma, beta, mean, var)
    xs = x.asnumpy()
    np.testing.assert_allclose(mean.asnumpy(), 0.5 * xs.mean(0), rtol=1e-6)
    np.testing.assert_allclose(y.asnumpy(), (xs - xs.mean(0)) / np.sqrt(xs.var(0) + 1e-3),
                               rtol=1e-4, atol=1e-5)


def test_zeros_and_ones_take_scalar_and_zero_size_shapes_under_np_shape():
    for fn in (mx.nd.zeros, mx.nd.ones):
        for shape in ((), (0, 1, 3, 0)):
            with pytest.raises(mx.MXNetError, match='mx.np_shape'):
                fn(shape=shape)
    with mx.np_shape():
        one = mx.nd.ones(shape=())
        assert one.shape == () and one.asnumpy() == 1
        empty = mx.nd.zeros((0, 1, 0, 4), dtype='int32')
        assert empty.shape == (0, 1, 0, 4) and empty.dtype == np.int32
        with pytest.raises(mx.MXNetError, match='non-negative'):
            mx.nd.ones((2, -1))


def test_writes_autograd_cannot_follow_are_refused_while_recording():
    def attempt(key, y_grad=True, x_grad=False):
        x = mx.nd.zeros((3, 4))
        y = mx.nd.ones((3, 4)) if key in (None, Ellipsis) or key == slice(None) \
            else mx.nd.ones((3, 4))[key].copy()
        if y_grad:
            y.attach_grad()
        if x_grad:
            x.attach_grad()
        with mx.autograd.record():
            x[key] = y
        return x
    # as MXNet 1.9.1: a whole-array copy is fine, part of one is refused for a followed value
    # (ValueError, with MXNet's message)
    for key in (slice(None), Ellipsis, None):
        assert (attempt(key).asnumpy() == 1).all()
    for key in (0, (0, 1), slice(0, 2)):
        with pytest.raises(mx.MXNetError, match='Inplace operations'):
            attempt(key)
        assert (attempt(key, y_grad=False).asnumpy().sum() > 0)
        with pytest.raises(mx.MXNetError, match='Inplace operations'):
            attempt(key, y_grad=False, x_grad=True)
    # outside record() anything goes
    x = mx.nd.zeros((2,))
    x.attach_grad()
    x[0] = 5
    assert x.asnumpy()[0] == 5
