"""Fixtures of the CUDA tests: the CPU-emulated kernels and a GPU twin.

``kernels`` runs a test body twice: once on the CPU emulator (always, needs
g++) and once on the GPU through CuPy (marked ``gpu``, skipped without one).
Both call the loader's public launchers with NumPy inputs and get NumPy
outputs back, so one test body checks both.
"""
import shutil

import numpy
import pytest

from symgraph import cuda

import cuda_emu_harness

# A kernel file of the emulator's own tests: barriers and per-block shared
# memory really interleave threads, divergence is caught, __half converts.
SELFTEST_SOURCE = r'''
extern "C" __global__ void reverse_blocks(const float *in, float *out, int n) {
    __shared__ float buf[64];
    const int i = blockIdx.x * 64 + threadIdx.x;
    buf[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const int j = blockIdx.x * 64 + 63 - threadIdx.x;
    if (j < n) out[j] = buf[threadIdx.x];
}

extern "C" __global__ void diverge(int *out) {
    if (threadIdx.x < 5) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

extern "C" __global__ void count_threads(unsigned long long *counter, int *ids) {
    const int t = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const int b = blockDim.x * blockDim.y * blockDim.z;
    const int k = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    atomicAdd(counter, 1ULL);
    ids[t * b + k] = t * b + k;
}

extern "C" __global__ void half_to_float(const __half *in, float *out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = __half2float(in[i]);
}

extern "C" __global__ void float_to_half(const float *in, __half *out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = __float2half(in[i]);
}
'''


@pytest.fixture(scope='session')
def emu_libraries(tmp_path_factory):
    """Every kernel file built once per session for the emulator."""
    if cuda_emu_harness.CXX is None or shutil.which(cuda_emu_harness.CXX) is None:
        pytest.skip('no C++ compiler (g++) to build the CUDA emulator')
    workdir = str(tmp_path_factory.mktemp('cuda_emu'))
    return cuda_emu_harness.build_all(workdir, {'selftest.cu': SELFTEST_SOURCE})


@pytest.fixture(scope='session')
def emu(emu_libraries):
    """A loader backend running the kernels on the CPU emulator."""
    return cuda_emu_harness.EmuBackend(emu_libraries)


class Kernels:
    """Calls loader launchers on one backend with NumPy in and NumPy out."""

    def __init__(self, kind, backend):
        self.kind = kind
        self.backend = backend
        if kind == 'cupy':
            self._xp = cuda.import_cupy()
        else:
            self._xp = numpy

    def _in(self, v):
        return self._xp.asarray(v) if isinstance(v, numpy.ndarray) else v

    def _out(self, v):
        if isinstance(v, (tuple, list)):
            return type(v)(self._out(a) for a in v)
        if self.kind == 'cupy' and isinstance(v, self._xp.ndarray):
            return self._xp.asnumpy(v)
        return v

    def __call__(self, fn, *args, **kwargs):
        args = [self._in(a) for a in args]
        kwargs = {k: self._in(v) for k, v in kwargs.items()}
        return self._out(fn(*args, backend=self.backend, **kwargs))


_no_gpu = pytest.mark.skipif(not cuda.available(), reason='needs CuPy and a CUDA GPU')


@pytest.fixture(params=['emu', pytest.param('cupy', marks=[pytest.mark.gpu, _no_gpu])])
def kernels(request):
    """Run the loader's launchers on the emulator, then (GPU runs) on CuPy."""
    if request.param == 'emu':
        return Kernels('emu', request.getfixturevalue('emu'))
    return Kernels('cupy', None)
