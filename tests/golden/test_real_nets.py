"""MXNet's example networks (googlenet; resnext with 26 layers on CIFAR-sized input, a
ResNet with BatchNorm) against MXNet 1.9.1's native CPU operators: the symbol files run
unchanged under symgraph and give MXNet's JSON, and one training step (forward, backward,
BatchNorm's moving statistics, then an inference forward) gives MXNet's outputs and every
gradient. Data: ``make_real_nets.py``; inputs and parameters: ``real_net_cases.py``.

Float64 is the reference comparison: symgraph's values agree with MXNet's to rounding
(1e-15 relative for googlenet, 1e-10 through BatchNorm's statistics). In float32 neither
engine is that close to the float64 values: a max-pooling window whose two largest inputs
differ by less than float32 rounding may send its gradient to the other input (googlenet at
224x224 in MXNet 1.9.1 itself: an input of ``max_pool_in4b_pool`` at 16.0786929 against
16.0786996 in float64 swaps order in float32, which moves 0.1% of the inception-4 weight
gradients and 0.2% of the data gradient), and the gradients of BatchNorm's beta are sums
with heavy cancellation. So the float32 check bounds symgraph's float32 error by a multiple
of MXNet's own (``f32_err``).
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
import real_net_cases as rc
from symgraph import cuda

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'real_nets')
NETS = sorted(rc.NETS)


def _golden(net):
    with np.load(os.path.join(DATA, net + '.npz')) as z:
        return {k: z[k] for k in z.files}


def _mxnet_json(net):
    with open(os.path.join(DATA, net + '-symbol.json')) as f:
        return f.read()


def _step(net, sym, dtype, ctx=None):
    shape = rc.NETS[net][2]
    ex = sym.simple_bind(ctx or mx.cpu(), data=shape, type_dict={'data': dtype}, grad_req='write')
    for name, a in ex.arg_dict.items():
        a[:] = rc.arg_value(net, name, a.shape)
    for name, a in ex.aux_dict.items():
        a[:] = rc.aux_value(net, name, a.shape)
    ex.forward(is_train=True)
    ex.backward()
    res = {'out:train': ex.outputs[0].asnumpy().astype(np.float64)}
    grads = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
    res.update({'aux:' + n: a.asnumpy().astype(np.float64) for n, a in ex.aux_dict.items()})
    ex.forward(is_train=False)
    res['out:test'] = ex.outputs[0].asnumpy().astype(np.float64)
    return res, grads


def _graph(js):
    # an input entry's third number (the variable's version) varies: not compared
    g = json.loads(js)
    nodes = [(n['op'], n['name'], n.get('attrs', {}), [e[:2] for e in n['inputs']])
             for n in g['nodes']]
    return nodes, g['arg_nodes'], [h[:2] for h in g['heads']]


@pytest.mark.parametrize('net', NETS)
def test_example_symbol_gives_mxnets_json(net):
    ours, theirs = _graph(rc.build(mx, net).tojson()), _graph(_mxnet_json(net))
    assert len(ours[0]) == len(theirs[0])
    for a, b in zip(ours[0], theirs[0]):
        assert a == b
    assert ours[1:] == theirs[1:]


@pytest.mark.parametrize('net', NETS)
def test_float64_training_step_matches_mxnet(net):
    _check_float64(net, mx.cpu())


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason='needs CuPy and a CUDA GPU')
@pytest.mark.parametrize('net', NETS)
def test_float64_training_step_on_gpu_matches_mxnet(net):
    _check_float64(net, mx.gpu(0))


def _check_float64(net, ctx):
    gold = _golden(net)
    res, grads = _step(net, rc.build(mx, net), 'float64', ctx)
    for key in [k for k in gold if k.startswith(('out:', 'aux:'))]:
        np.testing.assert_allclose(res[key], gold[key], rtol=1e-8, atol=1e-12, err_msg=key)
    assert sorted(grads) == gold['grad_names'].tolist()
    # every gradient but those of fixed gammas is alive with these inputs
    assert (gold['grad_norm'] > 0).mean() > 0.95
    for i, name in enumerate(gold['grad_names'].tolist()):
        norm, samples, proj = rc.digest(net, name, grads[name])
        want = gold['grad_norm'][i]
        if want == 0:       # gamma of a BatchNorm with fix_gamma=True
            assert norm == 0, name
            continue
        np.testing.assert_allclose(norm, want, rtol=1e-8, err_msg=name)
        np.testing.assert_allclose(samples, gold['grad_sample'][i], rtol=1e-7,
                                   atol=1e-9 * want, err_msg=name)
        # a projection moves by about the L2 norm of any change of the gradient
        np.testing.assert_allclose(proj, gold['grad_proj'][i], rtol=0, atol=1e-8 * want,
                                   err_msg=name)


@pytest.mark.parametrize('net', NETS)
def test_float32_training_step_is_as_close_as_mxnets_own(net):
    """MXNet's JSON loaded and run in float32 (oneDNN where it is installed): outputs within
    float32 rounding, each gradient's error against MXNet's float64 values at most 8 times
    MXNet's own float32 error (and 1e-5 where MXNet's is smaller)."""
    gold = _golden(net)
    res, grads = _step(net, mx.sym.load_json(_mxnet_json(net)), 'float32')
    for key in [k for k in gold if k.startswith('out:')]:
        np.testing.assert_allclose(res[key], gold[key], rtol=1e-4, atol=1e-5, err_msg=key)
    for key in [k for k in gold if k.startswith('aux:')]:
        np.testing.assert_allclose(res[key], gold[key], rtol=1e-4, atol=1e-4, err_msg=key)
    worst = []
    for i, name in enumerate(gold['grad_names'].tolist()):
        norm, _, proj = rc.digest(net, name, grads[name])
        if gold['grad_norm'][i] == 0:
            assert norm == 0, name
            continue
        # root mean square of the projections' changes estimates the change's L2 norm
        err = np.sqrt(np.mean((proj - gold['grad_proj'][i]) ** 2)) / gold['grad_norm'][i]
        bound = 8 * max(float(gold['f32_err'][i]), 1e-5)
        worst.append((err / bound, name, err, float(gold['f32_err'][i])))
    worst.sort(reverse=True)
    assert worst[0][0] <= 1, worst[:5]
