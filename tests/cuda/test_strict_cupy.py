"""The strict CuPy stand-in refuses what CuPy refuses (else the GPU runs on it prove little)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import strict_cupy
from strict_cupy import cupy as cp

KERNEL = r'''
extern "C" __global__ void scale(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
'''


@pytest.fixture(autouse=True)
def four_devices():
    with strict_cupy.installed(4):
        yield


def test_no_implicit_conversion_but_explicit_ones():
    a = cp.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(TypeError, match='Implicit conversion'):
        np.asarray(a)
    assert isinstance(a.get(), np.ndarray) and cp.asnumpy(a).shape == (2, 3)
    assert float(a.sum()) == 15.0 and int(a[1, 2]) == 5 and a[0, 1].item() == 1.0


def test_numpy_arrays_do_not_mix_with_device_arrays():
    a = cp.ones(3)
    host = np.ones(3)
    with pytest.raises(TypeError, match='Unsupported type'):
        a + host
    with pytest.raises(TypeError, match='Unsupported type'):
        cp.maximum(a, host)
    with pytest.raises(TypeError, match='Unsupported type'):
        cp.concatenate([a, host])
    with pytest.raises(ValueError, match='non-scalar numpy.ndarray'):
        a[:] = host
    a[:] = cp.asarray(host) * 2          # the explicit way works
    a[np.array([0])] = 5.0               # NumPy index arrays are converted, as in CuPy
    np.testing.assert_array_equal(a.get(), [5.0, 2.0, 2.0])


def test_numpy_functions_dispatch_to_cupy_ones_only():
    a = cp.arange(4.0)
    assert isinstance(np.exp(a), cp.ndarray) and isinstance(np.concatenate([a, a]), cp.ndarray)
    with pytest.raises(TypeError):
        np.insert(a, 0, 1.0)              # CuPy 14 has no insert


def test_only_cupy_names_and_keywords_exist():
    with pytest.raises(AttributeError, match='geomspace'):
        cp.geomspace
    with pytest.raises(AttributeError, match='errstate'):
        cp.errstate
    with pytest.raises(TypeError, match='order'):
        cp.argsort(cp.ones(3), kind='stable', order=None)
    with pytest.raises(TypeError, match='where'):
        cp.exp(cp.ones(3), where=cp.ones(3, bool))
    with pytest.raises(AttributeError, match='itemset'):
        cp.ones(3).itemset


def test_scalars_stay_on_the_device():
    a = cp.arange(5.0)
    for v in (a.sum(), a[2], cp.max(a), a.mean()):
        assert isinstance(v, cp.ndarray) and v.ndim == 0
    with pytest.raises(TypeError):
        range(a.argmax())                 # no __index__: call int() first
    assert list(range(int(a.argmax()))) == [0, 1, 2, 3]


def test_sorts_are_stable_as_in_cupy():
    keys = cp.asarray(np.repeat(np.arange(3.0), 40)[::-1].copy())
    order = cp.argsort(keys).get()
    for v in range(3):
        run = order[keys.get()[order] == v]
        assert (np.diff(run) > 0).all()
    np.testing.assert_array_equal(keys.argsort().get(), order)


def test_ufunc_methods_exist_only_where_cupy_has_them():
    a = cp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(cp.add.reduce(a, axis=1).get(), [3.0, 12.0])
    with pytest.raises(NotImplementedError):
        cp.maximum.reduce(a, axis=1)
    with pytest.raises(NotImplementedError):
        cp.logical_or.accumulate(a > 1)
    b = cp.zeros(3)
    cp.add.at(b, cp.asarray([0, 0, 2]), 1.0)
    np.testing.assert_array_equal(b.get(), [2.0, 0.0, 1.0])
    with pytest.raises(NotImplementedError):
        cp.multiply.at(b, cp.asarray([0]), 2.0)


def test_arrays_belong_to_devices():
    a = cp.ones(3)
    with cp.cuda.Device(2):
        b = cp.ones(3)
        assert b.device.id == 2
        with pytest.raises(ValueError, match=r'resides \(0\).*current device \(2\)'):
            a + b
        c = a.copy()                      # copy lands on the current device
        assert c.device.id == 2 and cp.asarray(a).device.id == 0
        assert cp.array(a).device.id == 2
    assert (a + 1).device.id == 0
    with pytest.raises(ValueError):
        b.sum()
    with pytest.raises(Exception, match='invalid device'):
        cp.cuda.Device(4)


def test_streams_belong_to_devices():
    with cp.cuda.Device(1):
        s1 = cp.cuda.Stream(non_blocking=True)
    with pytest.raises(RuntimeError, match='device 1'):
        with s1:
            pass
    with cp.cuda.Device(1), s1:
        assert cp.cuda.get_current_stream() is s1
        event = s1.record()
    with cp.cuda.Device(0):
        with pytest.raises(RuntimeError):
            s1.wait_event(event)


def test_empty_memory_is_poisoned():
    assert np.isnan(cp.empty(4).get()).all()
    assert np.isnan(cp.empty_like(cp.ones((2, 2), np.float32)).get()).all()
    assert (cp.empty(3, np.int32).get() == 0x5A5A5A5A).all()


def test_raw_kernels_take_exactly_what_cupy_passes():
    pytest.importorskip('cuda_emu_harness')
    import cuda_emu_harness
    if cuda_emu_harness.CXX is None:
        pytest.skip('no C++ compiler for the emulator')
    kernel = cp.RawModule(code=KERNEL, options=('--std=c++14',)).get_function('scale')
    x = cp.arange(5, dtype=np.float32)
    y = cp.empty(5, dtype=np.float32)
    kernel((1,), (8,), (x, y, np.float32(2.0), np.int32(5)))
    np.testing.assert_array_equal(y.get(), np.arange(5) * 2.0)
    with pytest.raises(TypeError, match='Python int'):
        kernel((1,), (8,), (x, y, np.float32(2.0), 5))
    with pytest.raises(TypeError, match='C type int needs numpy.int32'):
        kernel((1,), (8,), (x, y, np.float32(2.0), np.int64(5)))
    with pytest.raises(TypeError, match='Unsupported type'):
        kernel((1,), (8,), (x.get(), y, np.float32(2.0), np.int32(5)))
    with cp.cuda.Device(1):
        with pytest.raises(Exception, match='compiled for device 0'):
            kernel((1,), (8,), (x, y, np.float32(2.0), np.int32(5)))
        other = cp.RawModule(code=KERNEL, options=('--std=c++14',)).get_function('scale')
        with pytest.raises(ValueError, match='resides'):
            other((1,), (8,), (x, y, np.float32(2.0), np.int32(5)))


def test_the_api_snapshot_matches_the_installed_cupy(tmp_path):
    """cupy_api.json is what make_cupy_api.py writes for the CuPy installed here (when it
    is the snapshot's version): regenerate it after upgrading CuPy."""
    script = os.path.join(os.path.dirname(strict_cupy.__file__), 'make_cupy_api.py')
    # run outside the checkout, whose cuda/ folder would shadow NVIDIA's cuda package
    proc = subprocess.run([sys.executable, script, '--check'], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)
    if 'No module named' in proc.stderr and 'cupy' in proc.stderr:
        pytest.skip('CuPy is not installed')
    if proc.returncode == 77:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]


def test_work_on_other_streams_waits_for_events_and_synchronisation():
    """Async copies on non-null streams run at the next synchronisation, streams with a
    higher id first: without the event wait the second copy reads the old data."""
    a = cp.full(4, 1.0)
    b = cp.zeros(4)
    c = cp.zeros(4)
    s1 = cp.cuda.Stream(non_blocking=True)
    s2 = cp.cuda.Stream(non_blocking=True)

    def run(wait):
        a[...] = 1.0
        b[...] = 0.0
        c[...] = 0.0
        with s1:
            b.data.copy_from_device_async(a.data, a.nbytes)      # b = a
            event = s1.record()
        with s2:
            if wait:
                s2.wait_event(event)
            c.data.copy_from_device_async(b.data, b.nbytes)      # c = b
        assert (c.get() == 0).all()                               # nothing ran yet
        s2.synchronize()
        return c.get()

    np.testing.assert_array_equal(run(wait=False), 0.0)          # the race shows
    np.testing.assert_array_equal(run(wait=True), 1.0)
