"""Executor behaviours against MXNet 1.9.1's (golden file from make_executor_semantics.py):
backward after an inference forward, an output listed twice, a loss output reused,
grad_dict with 'null' arguments."""
import json
import os
import warnings

import pytest

import symgraph as mx
from executor_probes import run

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, 'data', 'executor_semantics.json')) as f:
    GOLDEN = json.load(f)


@pytest.fixture(scope='module')
def ours():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')     # the repeated output is warned about
        return json.loads(json.dumps(run(mx)))


@pytest.mark.parametrize('probe', sorted(GOLDEN['probes']))
def test_executor_behaves_as_mxnet(ours, probe):
    assert ours[probe] == GOLDEN['probes'][probe]
