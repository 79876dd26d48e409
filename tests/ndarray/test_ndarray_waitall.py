"""mx.nd.waitall on the CPU: nothing to wait for, and CuPy is not imported for it (that
cost 13 MiB of resident memory in a CPU training loop, and where CuPy's import fails, a new
attempt at every call)."""
import sys

import symgraph as mx
from symgraph import context


def test_waitall_without_cupy_imported_does_not_import_it(monkeypatch):
    calls = []

    def fake_cupy():
        calls.append(1)
        raise ImportError('no CuPy here')
    monkeypatch.setattr(context, '_cupy', fake_cupy)
    monkeypatch.delitem(sys.modules, 'cupy', raising=False)
    a = mx.nd.ones((3,)) * 2
    mx.nd.waitall()
    assert calls == []
    assert a.asnumpy().tolist() == [2.0, 2.0, 2.0]
