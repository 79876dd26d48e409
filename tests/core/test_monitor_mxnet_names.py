"""The names (and values) an executor's monitor reports, against MXNet 1.9.1's
(tests/golden/make_monitor_input_names.py): one output per argument of each backward node,
the unneeded gradients included (MXNet's test_module.py::test_monitor counts them), and
``<node>_input<k>`` for the inputs of operators MXNet registers without input names
(Gluon's test_op_hook_output_names)."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.executor import UNNAMED_INPUTS
from symgraph.opdef import list_ops
from make_monitor_input_names import monitor_run, monitor_network

GOLDEN = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data')
with open(os.path.join(GOLDEN, 'monitor_names_network.json')) as _f:
    NETWORK = json.load(_f)
with open(os.path.join(GOLDEN, 'monitor_input_names.json')) as _f:
    UNNAMED = json.load(_f)
#: gradients MXNet's backward nodes report for arguments nobody differentiates: their
#: memory holds whatever it held there, zeros here
UNNEEDED = {'softmax_backward_output1', 'fc_0_backward_output0'}


def _forward_part(names):
    return names[:names.index('softmax_output') + 1]


def test_outputs_names_order_and_values_as_mxnet():
    ours = monitor_run(mx, False)
    assert [n for n, _ in ours] == [n for n, _ in NETWORK['outputs']]
    for (name, value), (_, theirs) in zip(ours, NETWORK['outputs']):
        if name in UNNEEDED:
            assert value == 0, name
        else:
            np.testing.assert_allclose(value, theirs, rtol=1e-5, err_msg=name)


def test_monitor_all_forward_names_as_mxnet():
    # (the inputs each backward node reads are the engine's own: not compared)
    ours = [n for n, _ in monitor_run(mx, True)]
    theirs = [n for n, _ in NETWORK['all']]
    assert _forward_part(ours) == _forward_part(theirs)
    assert 'act_0_input0' in ours and 'act_0_data' not in ours


def test_unnamed_input_table_is_mxnets():
    ours = set(list_ops())
    assert UNNAMED_INPUTS == {k for k, v in UNNAMED.items() if v and k in ours}


@pytest.mark.parametrize('op, kwargs, named', [
    ('relu', {}, 'input0'), ('Activation', {'act_type': 'tanh'}, 'input0'),
    ('sum', {}, 'input0'), ('Dropout', {}, 'data'), ('softmax', {}, 'data')])
def test_executor_input_names(op, kwargs, named):
    x = mx.sym.var('x')
    sym = getattr(mx.sym, op)(x, name='n', **kwargs)
    exe = sym.simple_bind(mx.cpu(), x=(2, 3))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    exe.forward()
    assert seen[:2] == ['x', 'n_' + named]


def test_gluon_op_hook_names_a_relu_input_input0():
    net = mx.gluon.nn.HybridSequential(prefix='dense_')
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(2))
        net.add(mx.gluon.nn.Activation('relu'))
    net.initialize()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append(name), True)
    net(mx.nd.ones((2, 3, 4)))
    assert seen == ['dense_dense0_fwd_data', 'dense_dense0_fwd_weight',
                    'dense_dense0_fwd_bias', 'dense_dense0_fwd_output',
                    'dense_relu0_fwd_input0', 'dense_relu0_fwd_output']


def test_monitor_network_builds():
    assert monitor_network(mx).list_outputs() == ['softmax_output']
