"""symgraph's environment switches: one table, one reader.

Every ``SYMGRAPH_*`` variable the package reads is a row of :data:`SWITCHES`, with its
meaning, the values it accepts, its default and when it is read; no other module of the
package reads ``os.environ`` for them (``tests/core/test_config.py`` holds that, and that
``docs/config.md`` lists exactly this table). Rows marked ``scope='tests'`` are read by the
test suite, its scripts and the examples only, never by the package; they are listed so that
the docs name every switch.

A switch is named here without its ``SYMGRAPH_`` prefix: ``flag('ONEDNN')`` reads
``SYMGRAPH_ONEDNN``. Values are stripped and compared case-insensitively; an empty value is
the same as an unset one (except for a list of names, where it selects none, as
``SYMGRAPH_INFERENCE_PASSES=`` always did). A value a switch does not accept is a
ValueError naming the variable and the accepted words: a typo must not silently mean the
default.

>>> flag('TRAINING_FUSION', True) in (True, False)
True
>>> parse('INFERENCE_PASSES', 'fuse, dead_nodes')
('dead_nodes', 'fuse')
"""
import os
from typing import NamedTuple

__all__ = ['PREFIX', 'ON_WORDS', 'OFF_WORDS', 'Switch', 'SWITCHES', 'env_name', 'raw',
           'flag', 'number', 'choice', 'names', 'path', 'parse', 'table_markdown']

PREFIX = 'SYMGRAPH_'
#: the words a boolean switch (and a list of names, for all or none) accepts
ON_WORDS = ('1', 'on', 'true', 'yes')
OFF_WORDS = ('0', 'off', 'false', 'no', 'none')
#: what marks "the default" of a reader call (None is a default of its own)
_TABLE = object()


class Switch(NamedTuple):
    """One environment switch.

    ``kind``: ``'flag'`` (on/off), ``'number'`` (a positive float in ``unit``),
    ``'choice'`` (one of ``words``), ``'names'`` (a comma-separated subset of ``words``, or
    an on/off word for all/none), ``'path'`` (a file; None when unset) or ``'count'`` (a
    whole number >= 1; test switches only). ``read``: when the package reads it.
    ``scope``: ``'package'``, or ``'tests'`` for the switches of the suite and its scripts.
    """
    name: str
    kind: str
    default: object
    meaning: str
    read: str
    words: tuple = ()
    unit: str = ''
    scope: str = 'package'

    @property
    def var(self):
        """The environment variable's full name."""
        return PREFIX + self.name

    def accepted(self):
        """The accepted values in words, for the docs and the error messages."""
        if self.kind == 'flag':
            return '0 or 1 (also %s; %s)' % ('/'.join(OFF_WORDS[1:]), '/'.join(ON_WORDS[1:]))
        if self.kind == 'number':
            return 'a number of %s (> 0)' % self.unit
        if self.kind == 'count':
            return 'a whole number >= 1'
        if self.kind == 'choice':
            return ' or '.join(self.words)
        if self.kind == 'names':
            return ('a comma-separated list of %s; or %s for all, %s (or empty) for none'
                    % (', '.join(self.words), '/'.join(ON_WORDS), '/'.join(OFF_WORDS)))
        return 'a path'


_PASSES = ('dead_nodes', 'fold_bn', 'fuse', 'layout')

SWITCHES = {s.name: s for s in (
    Switch('ONEDNN', 'flag', True,
           'the oneDNN CPU backend; off: every operator runs on NumPy',
           'when the backend first loads (at import symgraph)'),
    Switch('ONEDNN_LIB', 'path', None,
           'the libdnnl.so.3 to load instead of the one the onednn-cpu-gomp wheel installed',
           'when the backend first loads'),
    Switch('ONEDNN_REPLAY', 'flag', True,
           'an operator called again on the very arrays of an earlier call replays that '
           "call's oneDNN primitives (the same values bit for bit); off: every call is "
           'worked out anew', 'when the backend first loads'),
    Switch('BF16_CONV', 'choice', 'auto',
           "which oneDNN kernel runs a bfloat16 convolution: 'bf16' its bfloat16 kernel, "
           "'float32' its float32 kernel on the operands widened exactly (output rounded to "
           "bfloat16; the same arithmetic but for summation order), 'auto' the faster of "
           'the two on this CPU, timed once per process (0.3 s; float32 where the CPU has '
           'AVX-512 BF16 but no AMX and bf16 is the slower)',
           'at the first bfloat16 convolution', words=('auto', 'bf16', 'float32')),
    Switch('CUDNN', 'flag', True,
           "the cuDNN GPU backend (convolution, BatchNorm, pooling, softmax on CuPy arrays); "
           "off: symgraph's own CUDA kernels", 'when the backend first loads (the first GPU '
           'operator that asks)'),
    Switch('CUDNN_LIB', 'path', None,
           'the libcudnn.so.9 (or .so.8) to load instead of the nvidia-cudnn wheels\' or '
           "the system's", 'when the cuDNN backend first loads'),
    Switch('TF32', 'flag', False,
           'float32 convolutions on cuDNN and float32 matmuls on cuBLAS (FullyConnected, '
           'dot, batch_dot: CuPy\'s CUPY_TF32, which this sets; unset, a CUPY_TF32 of '
           'your own stays) may use TF32 tensor cores (off, as MXNet: float32 math)',
           'when the cuDNN backend first loads; for cuBLAS when symgraph first hands out '
           'CuPy (the first GPU context)'),
    Switch('INFERENCE_PASSES', 'names', _PASSES,
           'the inference passes an executor without gradients runs forward(is_train=False) '
           'through (unset: all); exe.debug_str() ends with what each did', 'at bind',
           words=_PASSES),
    Switch('TRAINING_FUSION', 'flag', True,
           'a CPU training executor runs BatchNorm + relu and add + relu as one oneDNN '
           'operator each', 'at bind'),
    Switch('TRAINING_LAYOUT', 'flag', True,
           'a CPU training executor keeps activations and their gradients channels last '
           '(NHWC) between the oneDNN operators that read that layout', 'at bind'),
    Switch('DIST_ALLREDUCE', 'choice', 'mpi',
           "the all-reduce between processes: MPI's, or symgraph's ring over MPI "
           'point-to-point', 'when a Communicator is made (the dist kvstore)',
           words=('mpi', 'ring')),
    Switch('DIST_TIMEOUT', 'number', 300.0,
           'seconds a collective waits for the other processes before failing, naming the '
           "missing rank (python -m symgraph.launch --timeout sets it for the workers)",
           'when a Communicator is made', unit='seconds'),
    Switch('DIST_BUCKET_MB', 'number', 25.0,
           "the most megabytes of one dtype fused into one all-reduce (the dist kvstore's "
           'buckets)', "when a dist kvstore's gradient overlap is made", unit='megabytes'),
    Switch('DIST_OVERLAP', 'flag', True,
           "the dist kvstore starts each bucket's all-reduce during backward, as soon as its "
           'gradients are final; off: every bucket is reduced at the update',
           "when a dist kvstore's gradient overlap is made"),
    Switch('DIST_NCCL', 'flag', True,
           "the sum over the workers of GPU values runs with NCCL; off: through the host "
           'and MPI', 'at each push of GPU values'),
    Switch('MPIEXEC', 'path', None,
           'the mpiexec python -m symgraph.launch starts (default: the mpich wheel\'s, then '
           'one on PATH)', 'when the launcher starts'),
    Switch('DATALOADER_START_METHOD', 'choice', None,
           "how gluon.data.DataLoader starts its worker processes (unset: 'fork' where the "
           "platform has it, as MXNet; DataLoader(multiprocessing_context=...) wins)",
           'when a DataLoader starts its workers', words=('fork', 'forkserver', 'spawn')),
    Switch('STRICT_CUPY', 'count', None,
           'the test suite installs its strict CPU stand-in for CuPy with this many devices '
           '(scripts/run_tests.sh sets 4 for its GPU phase)', 'by tests/conftest.py',
           scope='tests'),
    Switch('EMU_SCHEDULE', 'choice', 'forward',
           "the order the CUDA emulator runs a kernel's blocks in",
           'by tests/cuda/cuda_emu_harness.py', words=('forward', 'reverse', 'shuffle[:seed]'),
           scope='tests'),
    Switch('EMU_SANITIZE', 'choice', None,
           'builds the emulated kernels with AddressSanitizer', 'by tests/cuda/cuda_emu_harness.py',
           words=('address',), scope='tests'),
    Switch('PYTHON', 'path', 'python3',
           'the interpreter with symgraph installed that make_params.py and '
           'make_json_legacy.py (run under MXNet) start for the symgraph side',
           'by those golden generators', scope='tests'),
    Switch('EXAMPLE_MXNET', 'choice', '0',
           'examples/gluon/mnist.py runs under MXNet (import mxnet as mx), as its --mxnet does',
           'by that example', words=('0', '1'), scope='tests'),
    Switch('SKIP_NUMPY1', 'flag', False,
           'scripts/run_tests.sh skips its NumPy 1.26 phase', 'by scripts/run_tests.sh',
           scope='tests'),
)}


def _switch(name, kind=None):
    try:
        s = SWITCHES[name]
    except KeyError:
        raise KeyError('no switch %s%s; the switches are %s'
                       % (PREFIX, name, ', '.join(sorted(SWITCHES)))) from None
    if kind is not None and s.kind not in kind:
        raise TypeError('%s is a %s switch, not a %s' % (s.var, s.kind, ' or '.join(kind)))
    return s


def env_name(name):
    """The environment variable of switch ``name``: ``env_name('ONEDNN')`` is
    ``'SYMGRAPH_ONEDNN'`` (for messages, and for setting it in a child's environment)."""
    return _switch(name).var


def raw(name):
    """The variable's value as set (None when unset), unparsed: for log lines that quote
    what the user wrote."""
    return os.environ.get(_switch(name).var)


def _bad(s, text):
    return ValueError('%s must be %s, got %r' % (s.var, s.accepted(), text))


def parse(name, text, default=_TABLE):
    """Switch ``name``'s value from ``text`` (None: unset), as its kind reads it; ``default``
    (the table's unless given) when unset or empty."""
    s = _switch(name)
    if default is _TABLE:
        default = s.default
    if text is None:
        return default
    word = text.strip().lower()
    if s.kind == 'names':
        return _names(s, text, word)
    if not word:
        return default
    if s.kind == 'flag':
        if word in ON_WORDS:
            return True
        if word in OFF_WORDS:
            return False
        raise _bad(s, text)
    if s.kind in ('number', 'count'):
        try:
            value = float(word) if s.kind == 'number' else int(word)
        except ValueError:
            raise ValueError('%s must be %s, got %r' % (s.var, s.accepted().partition(' (')[0],
                                                        text)) from None
        if not value > 0:       # (NaN too)
            raise ValueError('%s must be > 0 %s, got %r' % (s.var, s.unit, text))
        return value
    if s.kind == 'choice':
        if word not in s.words:
            raise _bad(s, text)
        return word
    return text.strip()         # a path, as written


def _names(s, text, word):
    chosen = [w.strip() for w in word.split(',') if w.strip()]
    if not chosen or (len(chosen) == 1 and chosen[0] in OFF_WORDS):
        return ()
    if len(chosen) == 1 and chosen[0] in ON_WORDS + ('all',):
        return tuple(s.words)
    unknown = [w for w in chosen if w not in s.words]
    if unknown:
        raise ValueError('%s=%r: unknown word %s; %s must be %s'
                         % (s.var, text, ', '.join(map(repr, unknown)), s.var, s.accepted()))
    return tuple(w for w in s.words if w in chosen)


def _read(name, kinds, default):
    s = _switch(name, kinds)
    return parse(name, os.environ.get(s.var), default)


def flag(name, default=_TABLE):
    """Whether boolean switch ``name`` is on (``default``, else the table's, when unset)."""
    return _read(name, ('flag',), default)


def number(name, default=_TABLE):
    """Numeric switch ``name`` as a float > 0 (``default``, else the table's, when unset)."""
    return _read(name, ('number', 'count'), default)


def choice(name, default=_TABLE):
    """Switch ``name``'s word, one of its ``words`` (lower case)."""
    return _read(name, ('choice',), default)


def names(name, default=_TABLE):
    """The words of list switch ``name`` that are on, in the table's order, as a tuple."""
    return _read(name, ('names',), default)


def path(name, default=_TABLE):
    """Path switch ``name`` as written (stripped), or ``default`` when unset or empty."""
    return _read(name, ('path',), default)


def table_markdown():
    """The table as the Markdown of ``docs/config.md``'s two tables (package, tests)."""
    out = []
    for scope, title in (('package', 'Read by the package'),
                         ('tests', 'Read by the test suite, its scripts and examples only')):
        out += ['## %s' % title, '',
                '| variable | meaning | accepted values | default | read |',
                '| --- | --- | --- | --- | --- |']
        for s in SWITCHES.values():
            if s.scope != scope:
                continue
            default = s.default
            if s.kind == 'flag':
                default = 'on (1)' if default else 'off (0)'
            elif s.kind == 'names':
                default = 'all' if default == s.words else ','.join(default) or 'none'
            elif s.kind == 'number':
                default = '%g' % default
            elif default is None:
                default = 'unset'
            out.append('| `%s` | %s | %s | %s | %s |'
                       % (s.var, s.meaning, s.accepted(), default, s.read))
        out.append('')
    return '\n'.join(out)
