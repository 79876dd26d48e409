"""NDArray, executor, symbol-building and operator-edge behaviours against MXNet 1.9.1's:
the probes of ``ndarray_probes.py``, ``executor_probes.py``, ``symbol_probes.py`` and
``op_probes.py`` run here and their results are compared with the golden files that
``make_semantics.py`` wrote from MXNet."""
import importlib
import json
import os
import warnings

import pytest

import symgraph as mx
from make_semantics import MODULES

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = {}
for _name in MODULES:
    with open(os.path.join(HERE, 'data', '%s_semantics.json' % _name)) as f:
        GOLDEN[_name] = json.load(f)['probes']


@pytest.fixture(scope='module')
def ours():
    got = {}
    for name in MODULES:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')      # deprecations and warnings MXNet has too
            got[name] = json.loads(json.dumps(
                importlib.import_module(name + '_probes').run(mx)))
    return got


@pytest.mark.parametrize('module, probe', [(m, p) for m in MODULES for p in sorted(GOLDEN[m])])
def test_behaves_as_mxnet(ours, module, probe):
    assert ours[module][probe] == GOLDEN[module][probe]
