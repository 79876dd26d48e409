"""Gluon-exported recurrent layers (MXNet 1.9.1's ``HybridBlock.export`` of
``gluon.rnn.LSTM``/``GRU``/``RNN``) load with ``mx.model.load_checkpoint`` and give MXNet's
outputs. Files and values: tests/golden/data/rnn_export/, made by tests/golden/make_rnn.py.

The exports take the begin states as free inputs (``data1``, ``data2``): Gluon made them
with zeros when the hybridized layer was called without states.
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden', 'data',
                    'rnn_export')
with open(os.path.join(HERE, 'meta.json')) as _f:
    META = json.load(_f)
EXPECTED = np.load(os.path.join(HERE, 'expected.npz'))


@pytest.mark.parametrize('name', sorted(META))
def test_export_loads_and_reproduces_mxnet(name):
    sym, args, aux = mx.model.load_checkpoint(os.path.join(HERE, name), 0)
    assert sym.list_arguments() == META[name]['arguments']
    assert sym.list_outputs() == META[name]['outputs']
    x = EXPECTED[name + '|data']
    inputs = [k for k in sym.list_arguments() if k not in args]
    assert inputs[0] == 'data0'
    arg_shapes, _, _ = sym.infer_shape(data0=x.shape)
    shapes = dict(zip(sym.list_arguments(), arg_shapes))
    for k, v in args.items():        # the RNN's parameter size agrees with the files'
        assert shapes[k] == v.shape, k
    exe = sym.simple_bind(mx.cpu(), grad_req='null', data0=x.shape)
    exe.copy_params_from(args, aux)
    exe.arg_dict['data0'][:] = x
    for k in inputs[1:]:
        given = EXPECTED.get(name + '|state')
        exe.arg_dict[k][:] = 0 if given is None else given
    outs = exe.forward(is_train=False)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), EXPECTED['%s|out|%d' % (name, i)],
                                   rtol=1e-5, atol=1e-6)


def test_export_trains():
    """Gradients flow from the fused layer back to each exported weight."""
    sym, args, aux = mx.model.load_checkpoint(os.path.join(HERE, 'bilstm'), 0)
    x = EXPECTED['bilstm|data']
    exe = sym.simple_bind(mx.cpu(), data0=x.shape)
    exe.copy_params_from(args, aux)
    exe.arg_dict['data0'][:] = x
    out = exe.forward(is_train=True)[0]
    exe.backward(mx.nd.ones(out.shape))
    for k in args:
        assert np.abs(exe.grad_dict[k].asnumpy()).sum() > 0, k
