import gc
import threading

import pytest


@pytest.fixture(autouse=True)
def no_leaked_prefetch_threads():
    """Every test of mx.io leaves no PrefetchingIter thread running."""
    yield
    gc.collect()
    alive = [t.name for t in threading.enumerate() if t.name.startswith('PrefetchingIter')]
    assert not alive, 'leaked threads: %s' % alive
