"""A positional None where MXNet's generated signature has an input means "input not
given" (``FullyConnected(data=None, weight=None, bias=None, num_hidden=...)``), and a
None after the inputs an operator's signature takes is a parameter value
(``sum(data=None, axis=None)``). Expected outcomes checked against MXNet 1.9.1 by hand
(each call below run there)."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError


@pytest.fixture
def xw():
    x = mx.nd.array(np.arange(6.0).reshape(2, 3))
    w = mx.nd.array(np.arange(12.0).reshape(4, 3) / 10)
    return x, w


def test_fully_connected_bias_none_with_no_bias(xw):
    x, w = xw
    want = x.asnumpy() @ w.asnumpy().T
    np.testing.assert_allclose(
        mx.nd.FullyConnected(x, w, None, no_bias=True, num_hidden=4).asnumpy(), want,
        rtol=1e-6)
    # the parameters by position too: num_hidden, no_bias follow the three inputs
    np.testing.assert_allclose(mx.nd.FullyConnected(x, w, None, 4, True).asnumpy(), want,
                               rtol=1e-6)


def test_none_for_a_needed_input_names_it(xw):
    x, w = xw
    with pytest.raises(MXNetError, match="missing inputs \\['bias'\\]"):
        mx.nd.FullyConnected(x, w, None, num_hidden=4)
    with pytest.raises(MXNetError, match="missing inputs \\['weight'\\]"):
        mx.nd.FullyConnected(x, None, None, num_hidden=4, no_bias=True)


def test_none_after_the_signature_inputs_is_a_parameter(xw):
    x, _ = xw
    assert mx.nd.sum(x, None).asnumpy().tolist() == [15.0]            # axis=None
    assert mx.nd.sum(x, None, True).shape == (1, 1)                   # keepdims=True
    np.testing.assert_array_equal(mx.nd.BlockGrad(x, None, 'g').asnumpy(), x.asnumpy())
    with pytest.raises(MXNetError, match="'a_min'"):                   # MXNet refuses it too
        mx.nd.clip(x, None, 1.0)


def test_optional_inputs_left_out_by_none(xw):
    x, _ = xw
    seq = mx.nd.array(np.arange(12.0).reshape(3, 2, 2))
    np.testing.assert_array_equal(mx.nd.SequenceMask(seq, None).asnumpy(), seq.asnumpy())
    np.testing.assert_array_equal(mx.nd.SequenceMask(seq, None, value=1.0).asnumpy(),
                                  seq.asnumpy())
    want = np.where(x.asnumpy() > 0, x.asnumpy(), 0.25 * x.asnumpy())
    np.testing.assert_allclose(mx.nd.LeakyReLU(x, None, act_type='leaky', slope=0.25)
                               .asnumpy(), want)
    np.testing.assert_allclose(mx.nd.LeakyReLU(x, None, 'leaky', 0.25).asnumpy(), want)


def test_symbol_none_inputs_and_none_parameters():
    d = mx.sym.var('data')
    assert mx.sym.FullyConnected(d, None, None, num_hidden=4, name='fc').list_arguments() \
        == ['data', 'fc_weight', 'fc_bias']
    assert mx.sym.FullyConnected(d, mx.sym.var('w'), None, no_bias=True, num_hidden=4,
                                 name='fc').list_arguments() == ['data', 'w']
    bn = mx.sym.BatchNorm(d, None, None, None, None, name='bn')
    assert bn.list_arguments() == ['data', 'bn_gamma', 'bn_beta']
    assert bn.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    s = mx.sym.sum(d, None)
    assert s.list_arguments() == ['data']
    out = s.eval(data=mx.nd.ones((2, 3)))[0]
    assert out.asnumpy().tolist() == [6.0]
