"""Every test of the CPU backend starts from a freshly loaded backend, with the switches
that choose the library unset, and leaves one loaded afresh."""
import pytest

from symgraph.backend import onednn


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    monkeypatch.delenv('SYMGRAPH_ONEDNN_LIB', raising=False)
    monkeypatch.delenv('SYMGRAPH_ONEDNN_REPLAY', raising=False)
    onednn.reset()
    yield
    onednn.reset()
