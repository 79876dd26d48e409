"""Build symgraph's kernels for the CPU emulator and launch them through ctypes.

For each kernel file the harness takes exactly the text the loader compiles
(``loader.source``), finds its ``extern "C" __global__`` kernels (after the
preprocessor, so macro-built parameter lists are seen as the compiler sees
them), and writes a C++ file that includes it and adds, per kernel,

    extern "C" int launch_<kernel>(gx, gy, gz, bx, by, bz, <kernel params>)

which runs the kernel on ``cuda/emu/cuda_emu.h``'s scheduler.  g++ builds one
shared library per file.  :class:`EmuBackend` plugs the libraries into the
loader's launchers (``backend=``), so the loader's own geometry and argument
marshalling run on NumPy arrays.  Every argument is checked against the C
parameter type: a pointer needs a C-contiguous array of the matching dtype,
a scalar a NumPy scalar of the exact C width (what CuPy would need).
"""
import ctypes
import os
import re
import shutil
import subprocess

import numpy

from symgraph.cuda import loader

EMU_HEADER = os.path.join(os.path.dirname(loader.__file__), 'emu', 'cuda_emu.h')
CXX = shutil.which('g++') or shutil.which('c++')
CXXFLAGS = ('-std=c++14', '-O2', '-fPIC', '-shared', '-fvisibility=hidden',
            '-Wall', '-Wextra', '-Werror', '-Wno-unused-parameter')
#: SYMGRAPH_EMU_SANITIZE=address builds the kernels with AddressSanitizer, the CPU
#: counterpart of compute-sanitizer's memcheck (the process needs libasan preloaded:
#: see tests/cuda/test_emulator_asan.py)
if os.environ.get('SYMGRAPH_EMU_SANITIZE') == 'address':
    CXXFLAGS = CXXFLAGS + ('-fsanitize=address', '-fno-omit-frame-pointer', '-g')

_SCALARS = {
    'int': (numpy.int32, ctypes.c_int32),
    'unsigned int': (numpy.uint32, ctypes.c_uint32),
    'unsigned': (numpy.uint32, ctypes.c_uint32),
    'long long': (numpy.int64, ctypes.c_int64),
    'long long int': (numpy.int64, ctypes.c_int64),
    'unsigned long long': (numpy.uint64, ctypes.c_uint64),
    'float': (numpy.float32, ctypes.c_float),
    'double': (numpy.float64, ctypes.c_double),
}
_POINTEES = {
    'float': numpy.float32, 'double': numpy.float64, '__half': numpy.float16,
    'int': numpy.int32, 'unsigned char': numpy.uint8, 'unsigned long long': numpy.uint64,
}
_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
_QUALIFIERS = {'const', '__restrict__', 'volatile'}


class Param:
    """One kernel parameter: C text, name, and what Python must pass."""

    def __init__(self, text):
        self.text = ' '.join(text.split())
        m = re.match(r'(.*?)(\w+)$', self.text)
        if not m:
            raise ValueError('cannot parse kernel parameter %r' % text)
        ctype, self.name = m.group(1), m.group(2)
        self.pointer = '*' in ctype
        words = [w for w in ctype.replace('*', ' ').split() if w not in _QUALIFIERS]
        self.base = ' '.join(words)
        if self.pointer:
            if self.base not in _POINTEES:
                raise ValueError('unsupported pointer parameter %r' % text)
            self.dtype = numpy.dtype(_POINTEES[self.base])
            self.ctype = ctypes.c_void_p
        else:
            if self.base not in _SCALARS:
                raise ValueError('unsupported scalar parameter %r' % text)
            self.dtype = numpy.dtype(_SCALARS[self.base][0])
            self.ctype = _SCALARS[self.base][1]

    def convert(self, value, kernel):
        if self.pointer:
            if value is None:
                return None
            if not isinstance(value, numpy.ndarray):
                raise TypeError('%s(%s): expected an array, got %r'
                                % (kernel, self.name, type(value)))
            if value.dtype != self.dtype or not value.flags.c_contiguous:
                raise TypeError('%s(%s): needs a C-contiguous %s array, got %s%s'
                                % (kernel, self.name, self.dtype, value.dtype,
                                   '' if value.flags.c_contiguous else ' (strided)'))
            return value.ctypes.data
        if not isinstance(value, numpy.generic) or value.dtype != self.dtype:
            raise TypeError('%s(%s): C type %s needs numpy.%s, got %r'
                            % (kernel, self.name, self.base, self.dtype, value))
        return self.ctype(value.item())


def kernel_signatures(text):
    """{kernel name: [Param, ...]} of the preprocessed source ``text``."""
    found = {}
    for name, params in _KERNEL_RE.findall(text):
        params = params.strip()
        found[name] = [Param(p) for p in params.split(',')] if params else []
    return found


def _defines():
    return [o for o in loader.compile_options() if o.startswith('-D')]


def write_sources(filename, text, workdir):
    """Write a kernel text and its launcher wrapper; return (wrapper path, signatures)."""
    src = os.path.join(workdir, filename)
    with open(src, 'w', encoding='utf-8') as f:
        f.write(text)
    pre = subprocess.run([CXX, '-E', '-P', '-x', 'c++', *_defines(), src],
                         capture_output=True, text=True, check=True).stdout
    signatures = kernel_signatures(pre)
    if not signatures:
        raise ValueError('no extern "C" __global__ kernel found in %s' % filename)
    lines = ['#include "%s"' % filename, '',
             'extern "C" __attribute__((visibility("default")))',
             'void sg_emu_set_schedule(int schedule, unsigned long long seed) {',
             '    sg_emu::set_schedule(schedule, seed);',
             '}', '']
    for name, params in signatures.items():
        decl = ''.join(', ' + p.text for p in params)
        call = ', '.join(p.name for p in params)
        lines += [
            'extern "C" __attribute__((visibility("default")))',
            'int launch_%s(unsigned gx, unsigned gy, unsigned gz,' % name,
            '              unsigned bx, unsigned by, unsigned bz%s) {' % decl,
            '    return sg_emu::launch(dim3(gx, gy, gz), dim3(bx, by, bz),',
            '                          [&]() { %s(%s); });' % (name, call),
            '}', '']
    wrapper = os.path.join(workdir, os.path.splitext(filename)[0] + '_emu.cpp')
    with open(wrapper, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines))
    return wrapper, signatures


def compile_command(wrapper, library):
    return [CXX, *CXXFLAGS, '-x', 'c++', '-include', EMU_HEADER, *_defines(),
            wrapper, '-o', library]


#: Orders the emulator runs blocks and threads in (see cuda_emu.h); tests of the
#: kernels run under the schedule SYMGRAPH_EMU_SCHEDULE names ('forward' by default).
SCHEDULES = {'forward': 0, 'reverse': 1, 'shuffle': 2}


def schedule():
    """(mode, seed) of SYMGRAPH_EMU_SCHEDULE: 'forward', 'reverse' or 'shuffle[:seed]'."""
    name, _, seed = os.environ.get('SYMGRAPH_EMU_SCHEDULE', 'forward').partition(':')
    if name not in SCHEDULES:
        raise ValueError('SYMGRAPH_EMU_SCHEDULE must be one of %s, got %r'
                         % (sorted(SCHEDULES), name))
    return SCHEDULES[name], int(seed or 1)


class EmuLibrary:
    """One kernel file built for the emulator."""

    def __init__(self, path, signatures):
        self.path = path
        self.signatures = signatures
        self._lib = ctypes.CDLL(path)
        self._lib.sg_emu_set_schedule.argtypes = [ctypes.c_int, ctypes.c_ulonglong]
        self._lib.sg_emu_set_schedule.restype = None
        self.schedule = None        # (mode, seed); None: from the environment
        self._functions = {}
        for name, params in signatures.items():
            fn = getattr(self._lib, 'launch_' + name)
            fn.argtypes = [ctypes.c_uint] * 6 + [p.ctype for p in params]
            fn.restype = ctypes.c_int
            self._functions[name] = fn

    def launch(self, name, grid, block, args):
        params = self.signatures[name]
        if len(args) != len(params):
            raise TypeError('%s takes %d arguments, got %d' % (name, len(params), len(args)))
        converted = [p.convert(a, name) for p, a in zip(params, args)]
        self._lib.sg_emu_set_schedule(*(self.schedule or schedule()))
        rc = self._functions[name](*grid, *block, *converted)
        if rc:
            raise RuntimeError('emulated launch of %s%r%r failed: %s' % (
                name, tuple(grid), tuple(block),
                {1: 'bad launch configuration', 2: 'threads diverged at __syncthreads()',
                 3: 'out of memory'}.get(rc, rc)))


def build(sources, workdir):
    """Build {filename: kernel text} concurrently; {filename: EmuLibrary}."""
    jobs = {}
    for filename, text in sources.items():
        wrapper, signatures = write_sources(filename, text, workdir)
        library = os.path.join(workdir, os.path.splitext(filename)[0] + '_emu.so')
        proc = subprocess.Popen(compile_command(wrapper, library), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        jobs[filename] = (proc, library, signatures)
    libraries, errors = {}, []
    for filename, (proc, library, signatures) in jobs.items():
        log = proc.communicate()[0]
        if proc.returncode:
            errors.append('%s:\n%s' % (filename, log))
        else:
            libraries[filename] = EmuLibrary(library, signatures)
    if errors:
        raise RuntimeError('emulator build failed:\n' + '\n'.join(errors))
    return libraries


def build_all(workdir, extra=None):
    """Build every kernel file of the loader, plus ``extra`` {filename: text}."""
    sources = {f: loader.source(f) for f in loader.KERNEL_FILES}
    sources.update(extra or {})
    return build(sources, workdir)


class _PoisonedNumpy:
    """NumPy whose ``empty``/``empty_like`` return NaN-filled (floats) or 0x5A-filled
    memory, as uninitialised device memory would hold anything: a kernel that leaves part
    of an output unwritten then fails its test (the stand-in for initcheck)."""

    @staticmethod
    def _poison(a):
        if a.dtype.kind in 'fc':
            a.fill(numpy.nan)
        elif a.size:
            a.view(numpy.uint8).reshape(-1).fill(0x5A)
        return a

    def empty(self, *args, **kwargs):
        return self._poison(numpy.empty(*args, **kwargs))

    def empty_like(self, *args, **kwargs):
        return self._poison(numpy.empty_like(*args, **kwargs))

    def __getattr__(self, name):
        return getattr(numpy, name)


class EmuBackend:
    """A loader backend running kernels on the CPU emulator with NumPy arrays (whose
    ``empty`` memory is poisoned)."""

    xp = _PoisonedNumpy()

    def __init__(self, libraries):
        self.libraries = libraries
        self.launches = []

    def launch(self, filename, name, grid, block, args):
        self.launches.append((name, tuple(grid), tuple(block)))
        self.libraries[filename].launch(name, grid, block, args)


def child_pytest_env(**extra):
    """Environment for a child ``python -m pytest`` that reruns kernel tests: a plain
    CPU run (not on the strict CuPy stand-in, not an xdist worker of this run), plus
    ``extra``."""
    env = dict(os.environ, **extra)
    env.pop('SYMGRAPH_STRICT_CUPY', None)
    for name in [n for n in env if n.startswith('PYTEST_XDIST_')]:
        del env[name]
    return env
