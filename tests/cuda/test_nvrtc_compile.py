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


#: Real architectures the kernels are assembled for (A100, H100): CuPy asks NVRTC for a
#: cubin of the device's own sm_XX, so ptxas runs at compile time, as here.
SASS_ARCHS = ['sm_80', 'sm_90']
#: Registers per thread above which a 256-thread block would limit occupancy to fewer
#: than four blocks per SM (65,536 registers per SM).
MAX_REGISTERS = 64


@pytest.fixture(scope='module')
def resources():
    """{(file, sm): ptxas's resource report}: the kernels assembled to SASS, with -v."""
    nvrtc = _nvrtc()
    report = {}
    for f in loader.KERNEL_FILES:
        for arch in SASS_ARCHS:
            options = loader.compile_options() + ('--gpu-architecture=%s' % arch,
                                                  '--ptxas-options=-v')
            report[f, arch] = _compile(nvrtc, f, options)[1]
    return report


def _usage(log):
    """{kernel: (stack bytes, spill store bytes, spill load bytes, registers, smem bytes)}."""
    usage = {}
    for block in log.split("Compiling entry function '")[1:]:
        name = block.split("'")[0]
        frame = re.search(r'(\d+) bytes stack frame, (\d+) bytes spill stores, '
                          r'(\d+) bytes spill loads', block)
        regs = re.search(r'Used (\d+) registers', block)
        smem = re.search(r'(\d+) bytes smem', block)
        usage[name] = tuple(int(v) for v in frame.groups()) + (
            int(regs.group(1)), int(smem.group(1)) if smem else 0)
    return usage


@pytest.mark.parametrize('arch', SASS_ARCHS)
@pytest.mark.parametrize('filename', sorted(loader.KERNEL_FILES))
def test_kernels_assemble_without_spills(resources, filename, arch):
    """Every kernel assembles for A100 and H100 with no local memory at all (no stack frame,
    no spills), registers that leave room for four 256-thread blocks per SM, and shared
    memory far below the 48 KB a block gets without opting in."""
    usage = _usage(resources[filename, arch])
    assert set(usage) == set(loader.KERNEL_FILES[filename]), resources[filename, arch]
    for name, (stack, spill_st, spill_ld, regs, smem) in usage.items():
        assert (stack, spill_st, spill_ld) == (0, 0, 0), (name, arch, usage[name])
        assert regs <= MAX_REGISTERS, (name, arch, regs)
        assert smem <= 16 * 1024, (name, arch, smem)


def test_resource_report_is_parsed():
    """The parser above reads spills and registers (so the check can fail)."""
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
           "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 80 registers, used 1 barriers, 512 bytes smem\n")
    assert _usage(log) == {'k': (8, 4, 4, 80, 512)}


def _cupy_compiler():
    """CuPy's own compile pipeline (``cupy._core.core`` and ``cupy.cuda.compiler``), or skip."""
    try:
        cupy = cuda.import_cupy()
        from cupy._core import core
        from cupy.cuda import compiler
        core.assemble_cupy_compiler_options
        compiler._compile_using_nvrtc_no_warning
        compiler._get_arch_for_options_for_nvrtc
    except (ImportError, AttributeError) as exc:
        pytest.skip('CuPy or its compiler internals unavailable: %s' % exc)
    return cupy, core, compiler


@pytest.mark.parametrize('arch', ['80', '90'])
def test_kernels_compile_through_cupys_own_pipeline(monkeypatch, arch):
    """What ``cupy.RawModule(code=..., options=loader.compile_options())`` does on an A100 or
    H100, short of loading the module: CuPy's option assembly (include paths, its default
    ``--std`` only when ours is absent), then ``-ftz=true``, ``-arch=sm_XX`` (a cubin) and
    ``--device-as-default-execution-space``, through CuPy's NVRTC call.  Only the device
    query is replaced, by the architecture under test.  A clash between our options and
    CuPy's would otherwise show only on a GPU."""
    cupy, core, compiler = _cupy_compiler()
    try:
        options = core.assemble_cupy_compiler_options(loader.compile_options())
    except RuntimeError as exc:  # no CUDA headers found: CuPy could not compile either
        pytest.skip('CuPy finds no CUDA include directory here: %s' % exc)
    assert '--std=c++14' in options and not any('c++17' in o for o in options)
    monkeypatch.setattr(compiler, '_get_arch_for_options_for_nvrtc',
                        lambda arch=None: ('-arch=sm_%s' % arch, 'cubin'))
    for filename, kernels in loader.KERNEL_FILES.items():
        try:
            cubin, _ = compiler._compile_using_nvrtc_no_warning(
                loader.source(filename), options + ('-ftz=true',), arch, filename, None, None,
                True, False, None)
        except compiler.CompileException as exc:
            pytest.fail('%s does not compile through CuPy %s for sm_%s:\n%s'
                        % (filename, cupy.__version__, arch, exc))
        assert cubin[:4] == b'\x7fELF', filename
        for name in kernels:  # extern "C": the names are in the cubin's symbol table
            assert name.encode() + b'\0' in cubin, (filename, name)


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
