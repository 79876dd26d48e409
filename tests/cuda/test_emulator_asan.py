"""The kernel tests again with the kernels built under AddressSanitizer: the CPU
counterpart of compute-sanitizer's memcheck. ASan's allocator (preloaded into a child
Python) puts red zones around every NumPy buffer, so a kernel that reads or writes past an
array, or past a ``__shared__`` array, stops with a report naming the ``.cu`` line.
"""
import os
import shutil
import subprocess
import sys

import pytest

import cuda_emu_harness

HERE = os.path.dirname(os.path.abspath(__file__))


def _libasan():
    cxx = cuda_emu_harness.CXX
    if cxx is None or shutil.which(cxx) is None:
        return None
    try:
        path = subprocess.run([cxx, '-print-file-name=libasan.so'], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return path if os.path.isabs(path) and os.path.exists(path) else None


LIBASAN = _libasan()
pytestmark = pytest.mark.skipif(LIBASAN is None, reason='needs g++ with AddressSanitizer')


def _run(args, **kw):
    env = cuda_emu_harness.child_pytest_env(
        SYMGRAPH_EMU_SANITIZE='address', LD_PRELOAD=LIBASAN,
        ASAN_OPTIONS='detect_leaks=0:abort_on_error=0')
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=env,
                          timeout=900, **kw)


def test_kernel_tests_are_clean_under_address_sanitizer():
    # -s: ASan ends the process at the first error, before pytest could show captured text
    proc = _run(['-m', 'pytest', '-q', '-s', '-p', 'no:cacheprovider', '-m', 'not gpu',
                 os.path.join(HERE, 'test_emulation.py')], cwd=os.path.dirname(HERE))
    report = proc.stdout + proc.stderr
    assert 'AddressSanitizer' not in report, report[-4000:]
    assert proc.returncode == 0, report[-4000:]


PLANTED = r'''
extern "C" __global__ void off_by_one(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) y[i] = x[i];                    /* planted: one element past the end */
}

extern "C" __global__ void shared_off_by_one(const float *x, float *y, int n) {
    __shared__ float tile[32];
    tile[threadIdx.x + 1] = x[threadIdx.x];     /* planted: tile[32] */
    __syncthreads();
    y[threadIdx.x] = tile[threadIdx.x];
}
'''

SCRIPT = r'''
import sys, tempfile
import numpy as np
sys.path.insert(0, %(here)r)
import cuda_emu_harness
lib = cuda_emu_harness.build({'planted.cu': %(src)r}, tempfile.mkdtemp())['planted.cu']
x = np.ones(%(n)d, np.float32)
y = np.zeros(%(n)d, np.float32)
lib.launch(%(kernel)r, (1, 1, 1), (32, 1, 1), [x, y, np.int32(%(n)d)])
print('finished')
'''


@pytest.mark.parametrize('kernel, n, error', [
    ('off_by_one', 20, 'heap-buffer-overflow'),
    ('shared_off_by_one', 32, 'global-buffer-overflow'),
])
def test_address_sanitizer_catches_a_planted_overflow(kernel, n, error):
    proc = _run(['-c', SCRIPT % {'here': HERE, 'src': PLANTED, 'n': n, 'kernel': kernel}])
    assert error in proc.stderr, proc.stderr[-3000:]
    assert 'planted.cu' in proc.stderr and 'finished' not in proc.stdout
