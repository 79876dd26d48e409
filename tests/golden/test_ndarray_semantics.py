"""NDArray behaviours against MXNet 1.9.1's (golden file from make_ndarray_semantics.py):
element indexing, reshape's special values, views vs copies, integer arithmetic between
arrays, modulo by zero, copy.copy, %=, integer wrapping, mixed dtypes, concat."""
import json
import os

import pytest

import symgraph as mx
from ndarray_probes import run

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, 'data', 'ndarray_semantics.json')) as f:
    GOLDEN = json.load(f)


@pytest.fixture(scope='module')
def ours():
    return json.loads(json.dumps(run(mx)))      # tuples as lists, as in the file


@pytest.mark.parametrize('probe', sorted(GOLDEN['probes']))
def test_ndarray_behaves_as_mxnet(ours, probe):
    assert ours[probe] == GOLDEN['probes'][probe]
