"""Races, the CPU way: the kernel tests again with the emulator running blocks, and a
block's threads between barriers, in reversed and shuffled orders (the CPU counterpart of
compute-sanitizer's racecheck). A kernel whose result depends on the order -- a missing
``__syncthreads()``, blocks that depend on each other -- fails there."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cuda_emu_harness

HERE = os.path.dirname(os.path.abspath(__file__))
needs_cxx = pytest.mark.skipif(cuda_emu_harness.CXX is None
                               or shutil.which(cuda_emu_harness.CXX) is None,
                               reason='no C++ compiler for the emulator')

RACY = r'''
extern "C" __global__ void rotate(const float *x, float *y, int with_barrier) {
    __shared__ float tile[64];
    tile[threadIdx.x] = x[blockIdx.x * 64 + threadIdx.x];
    if (with_barrier) __syncthreads();   /* uniform: every thread takes the same branch */
    y[blockIdx.x * 64 + threadIdx.x] = tile[(threadIdx.x + 1) % 64];
}
'''


@needs_cxx
def test_a_missing_barrier_shows_as_schedule_dependence(tmp_path):
    lib = cuda_emu_harness.build({'racy.cu': RACY}, str(tmp_path))['racy.cu']
    x = np.arange(128, dtype=np.float32)
    results = {}
    for with_barrier in (1, 0):
        for sched in ((0, 1), (1, 1), (2, 5)):
            lib.schedule = sched
            y = np.zeros_like(x)
            lib.launch('rotate', (2, 1, 1), (64, 1, 1), [x, y, np.int32(with_barrier)])
            results[with_barrier, sched] = y
    want = np.roll(x.reshape(2, 64), -1, axis=1).reshape(-1)
    for sched in ((0, 1), (1, 1), (2, 5)):
        np.testing.assert_array_equal(results[1, sched], want)
    racy = [results[0, s] for s in ((0, 1), (1, 1), (2, 5))]
    assert any(not np.array_equal(racy[0], r) for r in racy[1:])


@needs_cxx
@pytest.mark.parametrize('schedule', ['reverse', 'shuffle:3'])
def test_kernel_tests_pass_under_every_schedule(schedule):
    env = cuda_emu_harness.child_pytest_env(SYMGRAPH_EMU_SCHEDULE=schedule)
    proc = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-m', 'not gpu',
         os.path.join(HERE, 'test_emulation.py'), os.path.join(HERE, 'test_gpu_dispatch.py'),
         os.path.join(HERE, 'test_parallel.py')],
        capture_output=True, text=True, env=env, cwd=os.path.dirname(HERE), timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
