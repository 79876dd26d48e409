"""tests/ops mirrors ops/: one ``test_<module>.py`` per operator module, holding the OpCase rows
of the operators that module defines (docs/operators.md, section 3).

The rows are read from the source (``OpCase('<name>', ...)`` with a literal name), so rows
built in loops from variables are not checked here."""
import ast
import os

import pytest

import symgraph  # noqa: F401  (registers the operators)
from symgraph.opdef import get_op

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = os.path.join(ROOT, 'ops')
TESTS = os.path.join(ROOT, 'tests', 'ops')

#: test files of tests/ops that mirror no single operator module, and why
NOT_A_MODULE = {
    'test_registry.py': 'every registered operator has a row (cross-cutting)',
    'test_mxnet_registry.py': "the registry against MXNet 1.9.1's operator list",
    'test_mxnet_gaps.py': 'behaviours of many operators seen on MXNet 1.9.1 (issue 15 gaps), '
                          'checked against tests/golden/data/mxnet_gaps.json',
    'test_rnn_export.py': 'Gluon-exported RNN checkpoints through mx.model.load_checkpoint',
    'test_harness.py': 'the OpCase harness itself (tests/ops/harness.py)',
    'test_mxnet_parity_ops.py': "behaviours of several operators MXNet 1.9.1's own unit "
                                'tests rely on (issue 29), against '
                                'tests/golden/data/mxnet_parity_opA.json',
    'test_issue15_coverage.py': "issue 15's operators: rows, golden data, numeric gradients "
                                'and the JSON round trip through MXNet 1.9.1 (cross-cutting)',
    # the oneDNN backend over the rows of test_conv.py / test_norm.py (oneDNN only)
    'test_conv_onednn.py': "ops/conv.py's oneDNN path, over test_conv.py's rows",
    'test_norm_onednn.py': "ops/norm.py's oneDNN path, over test_norm.py's rows",
    'test_pooling_onednn.py': "ops/pooling.py's oneDNN path, over test_pooling.py's rows",
    'test_nn_onednn.py': "ops/nn.py's oneDNN activations, over test_nn.py's rows",
    'test_softmax_onednn.py': "ops/softmax.py's oneDNN path, over test_softmax.py's rows",
    'test_norm_layers_onednn.py': "ops/norm_layers.py's oneDNN LRN, over test_norm_layers.py's "
                                  "rows",
    'test_conv_channels_last.py': "ops/conv.py's channels-last Convolution and ops/pooling.py's "
                                  "channels-last Pooling against MXNet 1.9.1 (issue 28)",
    'test_conv_incomplete_shape.py': "ops/conv.py's shape rule filling unknown data dimensions "
                                     "from a known output (MXNet's ConvolutionShape)",
    'test_slice_channel_incomplete_shape.py': "SliceChannel's shape rule filling its input "
                                              "from a known piece (ops/slicing.py)",
    'test_prelu_gamma_shapes.py': "LeakyReLU(prelu)'s gamma broadcasting as MXNet's (ops/nn.py)",
    'test_partial_shape_rules.py': 'partial shape inference of several operators where MXNet '
                                   "infers nothing (where, batch_dot)",
}


def _modules():
    return sorted(f[:-3] for f in os.listdir(OPS)
                  if f.endswith('.py') and not f.startswith('_'))


def _test_files():
    return sorted(f for f in os.listdir(TESTS) if f.startswith('test_') and f.endswith('.py'))


def test_every_operator_module_has_its_test_file():
    missing = [m for m in _modules() if not os.path.exists(os.path.join(TESTS, 'test_%s.py' % m))]
    assert not missing, 'ops/<module>.py without tests/ops/test_<module>.py: %s' % missing


def test_every_test_file_names_an_operator_module():
    mods = set(_modules())
    stray = [f for f in _test_files() if f[5:-3] not in mods and f not in NOT_A_MODULE]
    assert not stray, 'tests/ops files named after no ops/ module: %s' % stray


@pytest.mark.parametrize('fname', [f for f in _test_files() if f not in NOT_A_MODULE])
def test_rows_live_in_the_file_of_their_module(fname):
    with open(os.path.join(TESTS, fname)) as f:
        tree = ast.parse(f.read())
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'OpCase' \
                and node.args and isinstance(node.args[0], ast.Constant):
            module = get_op(node.args[0].value).__module__
            if module.rsplit('.', 1)[-1] != fname[5:-3]:
                wrong.append('%s (line %d, %s)' % (node.args[0].value, node.lineno, module))
    assert not wrong, '%s holds rows of other modules: %s' % (fname, wrong)
