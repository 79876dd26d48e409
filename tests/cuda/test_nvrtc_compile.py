"""Every kernel file compiles with NVRTC, exactly as the loader compiles it.

NVRTC needs no GPU: these tests run wherever CuPy's NVRTC binding and the
NVRTC library (e.g. the ``nvidia-cuda-nvrtc-cu12`` wheel) are installed.
"""
import re

import pytest

from symgraph import cuda
from symgraph.cuda import loader

ARCHS = ['compute_80', 'compute_90']


def _nvrtc():
    try:
        cuda._unshadow_cuda_namespace()  # the checkout's cuda/ folder may hide NVIDIA's
        from cupy_backends.cuda.libs import nvrtc
        nvrtc.getVersion()
    except Exception as exc:  # not installed, or the library is missing
        pytest.skip('NVRTC unavailable (cupy_backends / libnvrtc): %s' % exc)
    return nvrtc


def _compile(nvrtc, filename, options):
    prog = nvrtc.createProgram(loader.source(filename), filename, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError as exc:
            pytest.fail('%s does not compile with %s:\n%s\n%s'
                        % (filename, options, exc, nvrtc.getProgramLog(prog)))
        log = nvrtc.getProgramLog(prog)
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return ptx.decode() if isinstance(ptx, bytes) else ptx, log


@pytest.fixture(scope='module')
def compiled():
    """{(file, arch): (ptx, log)}, each file compiled once per architecture."""
    nvrtc = _nvrtc()
    return {(f, arch): _compile(nvrtc, f, loader.compile_options(arch))
            for f in loader.KERNEL_FILES for arch in ARCHS}


@pytest.mark.parametrize('arch', ARCHS)
@pytest.mark.parametrize('filename', sorted(loader.KERNEL_FILES))
def test_kernels_compile(compiled, filename, arch):
    ptx, log = compiled[filename, arch]
    entries = set(re.findall(r'\.entry\s+(\w+)', ptx))
    assert entries == set(loader.KERNEL_FILES[filename]), (entries, log)
    assert '.target sm_%s' % arch.split('_')[1] in ptx
    # NVRTC warnings (a narrowing, an unused variable) point at real mistakes
    assert 'warning' not in log.lower(), log


def test_no_fp64_in_float32_kernels(compiled):
    """float32 kernels must not silently compute in double (slow on most GPUs)."""
    ptx = ''.join(compiled[f, 'compute_80'][0] for f in sorted(loader.KERNEL_FILES))
    for body in re.split(r'\.entry\s+', ptx)[1:]:
        name = body.split('(')[0]
        if name.endswith(('_f32', '_f16')):
            assert not re.search(r'\.f64\b', body), name


def test_compile_error_is_reported():
    """A kernel that does not compile fails loudly (the check above can fail)."""
    nvrtc = _nvrtc()
    prog = nvrtc.createProgram('extern "C" __global__ void k() { undefined(); }', 'bad.cu',
                               [], [])
    try:
        with pytest.raises(nvrtc.NVRTCError):
            nvrtc.compileProgram(prog, list(loader.compile_options('compute_80')))
        assert 'undefined' in nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def test_options_carry_the_launch_geometry():
    options = loader.compile_options('compute_90')
    assert '-DSG_REDUCE_THREADS=%d' % loader.REDUCE_THREADS in options
    assert '-DSG_NMS_THREADS=%d' % loader.NMS_THREADS in options
    assert options[-1] == '--gpu-architecture=compute_90'
    # without an architecture CuPy adds the device's own
    assert not any('arch' in o for o in loader.compile_options())
    assert loader.source('nms.cu').startswith(loader.source('conv.cu').split('#line')[0])
