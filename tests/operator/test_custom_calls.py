"""How often a custom operator's prop is asked, against MXNet 1.9.1.

``tests/golden/make_custom_calls.py`` recorded, with the real MXNet, how many times each
prop method ran during ``infer_shape``, ``infer_type``, ``simple_bind``, ``forward`` and
``backward`` of three graphs; the very same code runs here with ``mx`` = symgraph. A
prop's ``infer_shape`` and ``infer_type`` may be costly or keep state for
``create_operator``, so the counts must be MXNet's: once per node and inference, not once
per sweep of the fixed point.
"""
import collections
import json
import os
import sys

import pytest

import symgraph as mx

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden')
if GOLDEN not in sys.path:
    sys.path.insert(0, GOLDEN)
import make_custom_calls as golden  # noqa: E402

with open(os.path.join(GOLDEN, 'custom', 'calls.json')) as _f:
    WANT = json.load(_f)
CALLS = collections.Counter()
golden.define_ops(mx, CALLS)
GOT = golden.run_scenarios(mx, CALLS)
SCENARIOS = ('infer_shape', 'infer_type', 'simple_bind', 'forward', 'backward', 'second_step')


@pytest.mark.parametrize('graph', ['one', 'chain', 'mixed'])
@pytest.mark.parametrize('scenario', SCENARIOS)
def test_prop_inference_calls_as_mxnet(graph, scenario):
    for method in ('infer_shape', 'infer_type'):
        assert GOT[graph][scenario][method] == WANT[graph][scenario][method], \
            '%s of %r: %s' % (scenario, graph, method)


@pytest.mark.parametrize('graph', ['one', 'chain', 'mixed'])
def test_operator_made_once_and_run_once_per_step(graph):
    for method in ('create_operator', 'forward', 'backward'):
        got = sum(GOT[graph][s][method] for s in SCENARIOS)
        want = sum(WANT[graph][s][method] for s in SCENARIOS)
        assert got == want, '%s of %r' % (method, graph)
    for s in ('forward', 'backward', 'second_step'):
        for method in ('forward', 'backward'):
            assert GOT[graph][s][method] == WANT[graph][s][method], (s, method)
