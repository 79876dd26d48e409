"""Fixtures shared by the operator tests."""
import pytest

from symgraph.backend import onednn
from symgraph.opdef import cpu_backend


@pytest.fixture
def onednn_backend(monkeypatch):
    """The oneDNN backend, freshly loaded with ``SYMGRAPH_ONEDNN`` unset (the test is skipped
    where the library is not available); reset again afterwards. The ``*_onednn`` test
    files build their ``backend`` fixtures on it, lifting their operators' size limits."""
    monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    onednn.reset()
    be = cpu_backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    yield be
    onednn.reset()
