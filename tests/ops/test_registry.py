"""Every operator case through the symbol API and executor, and coverage of the registry.

The family modules (``test_<family>.py``) declare OpCases; importing them here collects
every case so that each one also runs through ``mx.sym`` + ``bind`` + a JSON round trip,
and so that an operator registered without any case fails the suite.
"""
import glob
import importlib
import os

import pytest

import symgraph as mx
from harness import ALL_CASES, check_symbolic, check_symbolic_numeric_gradient
from symgraph.opdef import get_op

_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in sorted(glob.glob(os.path.join(_HERE, 'test_*.py'))):
    _name = os.path.splitext(os.path.basename(_path))[0]
    if _name not in ('test_registry', 'test_issue15_coverage'):   # the latter imports this
        importlib.import_module(_name)

CASES = list(ALL_CASES)

#: operators tested outside the OpCase table, with where and why
TESTED_ELSEWHERE = {
    'Custom': 'tests/operator/test_custom_op.py (user-defined operators)',
    'reset_arrays': 'tests/ops/test_multi_tensor.py (no outputs: imperative only; MXNet '
                    '1.9.1 crashes on mx.sym.reset_arrays)',
    '_contrib_boolean_mask': 'tests/ops/test_indexing.py (the output length depends on '
                             'the values)',
    '_cvimdecode': 'tests/ops/test_image_io.py (the decoded shape depends on the data; MXNet '
                   '1.9.1 golden data)',
    '_cvimread': 'tests/ops/test_image_io.py (reads a file; MXNet 1.9.1 golden data)',
    '_set_value': 'tests/ops/test_legacy.py (no inputs: its shape comes from out= or the '
                  'consumer; MXNet 1.9.1 golden data)',
    # an OpCase gives an operator its inputs and parameters only; these also need
    # subgraphs (the body, the branches), built by mx.sym.contrib.foreach/while_loop/cond
    '_foreach': 'tests/ops/test_control_flow.py (holds a subgraph: built through '
                'mx.sym.contrib.foreach; MXNet 1.9.1 golden data and numeric gradients)',
    '_while_loop': 'tests/ops/test_control_flow.py (holds subgraphs: built through '
                   'mx.sym.contrib.while_loop; MXNet 1.9.1 golden data and numeric '
                   'gradients)',
    '_cond': 'tests/ops/test_control_flow.py (holds subgraphs: built through '
             'mx.sym.contrib.cond; MXNet 1.9.1 golden data and numeric gradients)',
    '_sg_mkldnn_conv': 'tests/contrib/test_quantization_mkldnn.py (holds the fused layers as '
                       'a subgraph: read from MXNet 1.9.1-written JSON; outputs bit for bit)',
    '_sg_mkldnn_fully_connected': 'tests/contrib/test_quantization_mkldnn.py (holds its '
                                  'subgraph: read from MXNet 1.9.1-written JSON)',
}


@pytest.mark.parametrize('case', CASES, ids=[c.id for c in CASES])
def test_symbolic(case):
    check_symbolic(case)


@pytest.mark.parametrize('case', CASES, ids=[c.id for c in CASES])
def test_numeric_gradient_through_test_utils(case):
    check_symbolic_numeric_gradient(case)


def test_most_operators_have_their_gradient_checked_through_test_utils():
    checked = {get_op(c.op).name for c in CASES
               if check_symbolic_numeric_gradient(c) == 'checked'}
    differentiable = {get_op(c.op).name for c in CASES if not c.make_op().no_grad}
    assert len(checked) >= 0.8 * len(differentiable), sorted(differentiable - checked)


def test_every_registered_operator_has_a_case():
    covered = {get_op(c.op).name for c in CASES}
    missing = [n for n in mx.opdef.list_ops()
               if n not in covered and n not in TESTED_ELSEWHERE and not n.startswith('_test')]
    assert not missing, 'operators without an OpCase: %s' % missing


def test_operators_tested_elsewhere_are_tested_there():
    root = os.path.dirname(os.path.dirname(_HERE))
    for op, where in TESTED_ELSEWHERE.items():
        assert op in mx.opdef.list_ops(), 'TESTED_ELSEWHERE names %r, not registered' % op
        path = os.path.join(root, where.split()[0])
        assert os.path.isfile(path), '%s: %s does not exist' % (op, path)
        with open(path) as f:
            assert op in f.read(), '%s is not mentioned in %s' % (op, path)
