"""Checkpoints are written atomically (``symgraph.base.atomic_write``): a save that fails or
is killed half way leaves the complete old file or the complete new one under the final
name, never a truncated file, and no temporary file after a failure."""
import os
import random
import signal
import sys
import time

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import atomic_write


def _leftovers(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith('.tmp'))


def test_writes_binary_and_utf8_text(tmp_path):
    path = tmp_path / 'f.bin'
    with atomic_write(str(path), 'wb') as f:
        f.write(b'\x00\x01')
    assert path.read_bytes() == b'\x00\x01'
    with atomic_write(path, 'w') as f:                 # os.PathLike too
        f.write('caf\u00e9\n')
    assert path.read_bytes() == b'caf\xc3\xa9\n'        # UTF-8, \n kept on every platform
    assert _leftovers(tmp_path) == []


def test_permissions_as_a_plain_open(tmp_path):
    plain = tmp_path / 'plain'
    with open(plain, 'wb'):
        pass
    with atomic_write(str(tmp_path / 'atomic'), 'wb'):
        pass
    assert os.stat(tmp_path / 'atomic').st_mode == os.stat(plain).st_mode


def test_an_exception_keeps_the_old_file(tmp_path):
    path = tmp_path / 'f'
    path.write_bytes(b'old')
    with pytest.raises(KeyError):
        with atomic_write(str(path)) as f:
            f.write(b'new, half written')
            raise KeyError('stop')
    assert path.read_bytes() == b'old' and _leftovers(tmp_path) == []


def test_bad_mode_and_folder(tmp_path):
    with pytest.raises(ValueError, match="mode must be 'w' or 'wb'"):
        with atomic_write(str(tmp_path / 'f'), 'ab'):
            pass
    with pytest.raises(FileNotFoundError):
        with atomic_write(str(tmp_path / 'no_such_folder' / 'f')):
            pass


def _fail_fsync(monkeypatch):
    def boom(fd):
        raise OSError(28, 'No space left on device (simulated)')
    monkeypatch.setattr(os, 'fsync', boom)


def _net():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    return mx.sym.SoftmaxOutput(fc, name='softmax')


def test_every_checkpoint_writer_keeps_the_old_file_when_saving_fails(tmp_path, monkeypatch):
    """nd.save, Symbol.save, save_checkpoint, Module.save_checkpoint and
    save_optimizer_states (the updater's states): a failure before the rename (here the
    fsync: a full disk) leaves every earlier file as it was."""
    prefix = str(tmp_path / 'net')
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.bind(data_shapes=[('data', (2, 4))], label_shapes=[('softmax_label', (2,))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer='sgd', optimizer_params={'momentum': 0.9})
    batch = mx.io.DataBatch([mx.nd.ones((2, 4))], [mx.nd.array([0, 1])])
    mod.forward_backward(batch)
    mod.update()
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    names = ['net-symbol.json', 'net-0001.params', 'net-0001.states']
    before = {n: (tmp_path / n).read_bytes() for n in names}
    extra = tmp_path / 'arrays.nd'
    mx.nd.save(str(extra), {'a': mx.nd.ones((3,))})
    before['arrays.nd'] = extra.read_bytes()

    # change everything so that a successful save would write other bytes
    mod.forward_backward(batch)
    mod.update()
    _fail_fsync(monkeypatch)
    bigger = mx.sym.Activation(_net(), act_type='relu', name='r')
    attempts = [
        lambda: mod.save_checkpoint(prefix, 1, save_optimizer_states=True),
        lambda: mod.save_optimizer_states(prefix + '-0001.states'),
        lambda: mx.model.save_checkpoint(prefix, 1, bigger,
                                         {'fc_weight': mx.nd.zeros((3, 4))}, {}),
        lambda: bigger.save(prefix + '-symbol.json'),
        lambda: mx.nd.save(str(extra), {'a': mx.nd.zeros((5,))}),
    ]
    for attempt in attempts:
        with pytest.raises(OSError, match='simulated'):
            attempt()
    monkeypatch.undo()
    for n, data in before.items():
        assert (tmp_path / n).read_bytes() == data, n
    assert _leftovers(tmp_path) == []
    # and the files still load
    sym, args, aux = mx.model.load_checkpoint(prefix, 1)
    assert sym.tojson() == _net().tojson() and sorted(args) == ['fc_bias', 'fc_weight']
    mod.load_optimizer_states(prefix + '-0001.states')


_CHILD_SIZES = (300000, 200000)     # float32 elements: two different complete files


def _writer_child(path, which):
    """In the forked child: save alternately the two versions, forever."""
    arrays = [{'w': mx.nd.array(np.full(n, k + 1, np.float32))}
              for k, n in enumerate(_CHILD_SIZES)]
    k = which
    while True:
        mx.nd.save(path, arrays[k])
        k = 1 - k


@pytest.mark.skipif(not hasattr(os, 'fork') or sys.platform == 'darwin',
                    reason='needs os.fork (POSIX)')
def test_killed_writer_leaves_a_complete_file(tmp_path):
    """Kill a process saving a .params file at random moments, many times (about two
    seconds in all): the file is always one of the two complete versions."""
    path = str(tmp_path / 'w.params')
    mx.nd.save(path, {'w': mx.nd.array(np.full(_CHILD_SIZES[0], 1, np.float32))})
    rng = random.Random(29)
    seen = set()
    deadline = time.monotonic() + 2.0
    kills = 0
    while kills < 20 or time.monotonic() < deadline:
        pid = os.fork()
        if pid == 0:                                            # pragma: no cover
            try:
                _writer_child(path, kills % 2)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        kills += 1
        loaded = mx.nd.load(path)['w'].asnumpy()
        k = int(loaded[0]) - 1
        assert loaded.shape == (_CHILD_SIZES[k],) and (loaded == k + 1).all()
        seen.add(k)
        if kills >= 200:
            break
    assert kills >= 20
    # a killed writer may leave its temporary file, never a broken final file
    for f in _leftovers(tmp_path):
        os.unlink(os.path.join(str(tmp_path), f))


def test_checkpoint_without_parameters(tmp_path):
    """MXNet writes a .params file with no arrays for a graph without parameters; loading
    it gives empty dicts and a warning (MXNet 1.9.1 logs one)."""
    prefix = str(tmp_path / 'noparams')
    net = mx.sym.relu(mx.sym.var('data'), name='r')
    mx.model.save_checkpoint(prefix, 0, net, {}, {})
    data = (tmp_path / 'noparams-0000.params').read_bytes()
    # MXNet 1.9.1's bytes: list magic 0x112, reserved 0, no arrays, no names
    assert data == b'\x12\x01' + b'\x00' * 30
    with pytest.warns(UserWarning, match="Params file '.*noparams-0000.params' is empty"):
        sym, args, aux = mx.model.load_checkpoint(prefix, 0)
    assert (args, aux) == ({}, {}) and sym.tojson() == net.tojson()
    with pytest.warns(UserWarning, match='is empty'):
        mod = mx.mod.Module.load(prefix, 0, label_names=None)
    mod.bind(data_shapes=[('data', (2,))], for_training=False)
    mod.forward(mx.io.DataBatch([mx.nd.array([-1.0, 2.0])]), is_train=False)
    assert mod.get_outputs()[0].asnumpy().tolist() == [0.0, 2.0]
