"""Where oneDNN is a dependency of the package (x86-64 Linux: ``onednn-cpu-gomp``), the CPU
backend loads: a library that is missing, too old or fails to open is a broken install,
and fails here, in the suite's first phase, instead of hiding among the skips of every
oneDNN test (they skip where the backend is off, which is right only where it was asked to
be off).

Run with ``SYMGRAPH_ONEDNN=0`` to test the NumPy path alone; then this test skips.
"""
import logging
import platform
import sys

import pytest

from symgraph import config
from symgraph.backend import onednn

#: the switches as the user set them, read at collection (the backend tests' fixture unsets
#: them): oneDNN off, or an explicit library to load
ASKED_OFF = not config.flag('ONEDNN')
USER_LIB = config.path('ONEDNN_LIB')
#: where setup.cfg declares onednn-cpu-gomp a dependency
DEPENDENCY = sys.platform.startswith('linux') and platform.machine() == 'x86_64'


@pytest.mark.skipif(ASKED_OFF, reason='SYMGRAPH_ONEDNN=0: the NumPy path alone')
@pytest.mark.skipif(not DEPENDENCY, reason='oneDNN is a dependency on x86-64 Linux only')
def test_the_onednn_backend_loads_where_it_is_a_dependency(caplog, monkeypatch):
    if USER_LIB:
        monkeypatch.setenv(config.env_name('ONEDNN_LIB'), USER_LIB)
    with caplog.at_level(logging.INFO, logger='symgraph.backend.onednn'):
        be = onednn.backend()
    why = '; '.join(r.getMessage() for r in caplog.records) or 'no log line'
    assert be is not None, (
        'the oneDNN CPU backend did not load (%s): install the package with its '
        'dependencies (pip install -e .), or run the suite with SYMGRAPH_ONEDNN=0 to test '
        'the NumPy path alone' % why)
    assert (3, 0) <= be.version[:2] < (4, 0)
