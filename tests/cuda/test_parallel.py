"""Ring all-reduce: the schedule, the NumPy backend, the emulated kernel, CuPy."""
import numpy as np
import pytest

from symgraph import cuda
from symgraph import dist
from symgraph.cuda import loader

DEVICES = [1, 2, 3, 5]
TOL = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-14}


def _buffers(n, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shape).astype(dtype) for _ in range(n)]


def _check(result, originals, dtype):
    want = np.sum([a.astype(np.float64) for a in originals], axis=0)
    for r in result:
        # every device ends with the same bits: the gather copies one result around
        np.testing.assert_array_equal(r, result[0])
    np.testing.assert_allclose(result[0].astype(np.float64), want,
                               rtol=TOL[dtype], atol=TOL[dtype] * len(originals))


@pytest.mark.parametrize('n', range(1, 8))
@pytest.mark.parametrize('length', [0, 1, 2, 5, 7, 13, 64])
def test_schedule_counts_each_contribution_once(n, length):
    """Device k starts with 2**k: exactly 2**n - 1 everywhere means no loss, no double add."""
    bufs = [np.full(length, 2.0 ** k) for k in range(n)]
    dist.NumpyRing().run(bufs, dist.ring_schedule(n, length))
    for b in bufs:
        np.testing.assert_array_equal(b, 2.0 ** n - 1)


@pytest.mark.parametrize('n', range(1, 8))
@pytest.mark.parametrize('length', [1, 6, 11, 100])
def test_schedule_shape(n, length):
    steps = dist.ring_schedule(n, length)
    bounds = [length * k // n for k in range(n + 1)]
    rounds = sorted({s.round for s in steps})
    assert rounds == list(range(2 * (n - 1)))  # every round moves every non-empty chunk
    for s in steps:
        assert s.dst == (s.src + 1) % n and 0 <= s.start < s.stop <= length
        assert (s.start, s.stop) in zip(bounds, bounds[1:])  # whole chunks, uneven allowed
        assert s.phase == ('reduce' if s.round < n - 1 else 'gather')
    for r in rounds:
        same = [s for s in steps if s.round == r]
        # a round: each device sends at most once and receives at most once ...
        assert len({s.src for s in same}) == len(same) == len({s.dst for s in same})
        # ... and no chunk it writes is read by another step of the same round
        for a in same:
            for b in same:
                if a is not b and a.dst == b.src:
                    assert a.stop <= b.start or b.stop <= a.start
    # chunk sizes differ by at most one
    sizes = np.diff(bounds)
    assert sizes.max() - sizes.min() <= 1
    assert len(steps) == 2 * (n - 1) * np.count_nonzero(sizes)


def test_schedule_examples():
    assert dist.ring_schedule(1, 10) == []
    assert dist.ring_schedule(3, 0) == []
    steps = dist.ring_schedule(3, 7)  # chunks [0, 2), [2, 4), [4, 7)
    assert steps[0] == dist.Step('reduce', 0, 0, 1, 0, 2)
    assert steps[3] == dist.Step('reduce', 1, 0, 1, 4, 7)
    assert steps[6] == dist.Step('gather', 2, 0, 1, 2, 4)
    with pytest.raises(ValueError):
        dist.ring_schedule(0, 4)


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('length', [1, 7, 31, 1001])
@pytest.mark.parametrize('n', DEVICES)
def test_allreduce_numpy(n, length, dtype):
    originals = _buffers(n, length, dtype, seed=length)
    bufs = [a.copy() for a in originals]
    out = dist.allreduce(bufs)
    assert all(o is b for o, b in zip(out, bufs))  # in place
    _check(out, originals, dtype)


def test_allreduce_keeps_shape():
    originals = _buffers(3, (4, 5, 3), np.float32)
    bufs = [a.copy() for a in originals]
    dist.allreduce(bufs)
    assert bufs[1].shape == (4, 5, 3)
    _check(bufs, originals, np.float32)


def test_allreduce_errors():
    with pytest.raises(ValueError):
        dist.allreduce([])
    with pytest.raises(ValueError, match='shape'):
        dist.allreduce([np.zeros(3), np.zeros(4)])
    with pytest.raises(TypeError, match='float16'):
        dist.allreduce([np.zeros(3, np.int32)] * 2)
    with pytest.raises(ValueError, match='contiguous'):
        dist.allreduce([np.zeros(6)[::2], np.zeros(6)[::2]])


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('length', [1, 7, 10, 1001])
@pytest.mark.parametrize('n', DEVICES)
def test_allreduce_with_emulated_kernel(emu, n, length, dtype):
    """The schedule driving the ring_add kernel (emulated) = the NumPy ring, bit for bit."""
    originals = _buffers(n, length, dtype, seed=7 * length)
    by_kernel = [a.copy() for a in originals]
    ring = dist.NumpyRing(add=lambda dst, src: loader.ring_add(dst, src, backend=emu))
    dist.allreduce(by_kernel, backend=ring)
    by_numpy = dist.allreduce([a.copy() for a in originals])
    for k, b in zip(by_kernel, by_numpy):
        np.testing.assert_array_equal(k, b)
    _check(by_kernel, originals, dtype)


_no_gpu = pytest.mark.skipif(not cuda.available(), reason='needs CuPy and a CUDA GPU')


@pytest.mark.gpu
@_no_gpu
@pytest.mark.parametrize('spread', [True, False], ids=['spread', 'one-gpu'])
@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('n', DEVICES)
def test_allreduce_cupy(n, dtype, spread):
    """N logical devices: spread over the GPUs there are (several per GPU if needed), or
    all on GPU 0, where each rank still has its own stream (on the strict stand-in a
    missing barrier between rounds then fails here even with one device)."""
    cupy = cuda.import_cupy()
    gpus = cupy.cuda.runtime.getDeviceCount() if spread else 1
    originals = _buffers(n, 100003, dtype, seed=n)
    bufs = []
    for k, a in enumerate(originals):
        with cupy.cuda.Device(k % gpus):
            bufs.append(cupy.asarray(a))
    out = dist.allreduce(bufs)
    assert all(o is b for o, b in zip(out, bufs))
    _check([cupy.asnumpy(b) for b in bufs], originals, dtype)
    # the same schedule on the host gives the same bits
    host = dist.allreduce([a.copy() for a in originals])
    np.testing.assert_array_equal(cupy.asnumpy(bufs[0]), host[0])
