"""Executor behaviours checked against MXNet 1.9.1, written once for both frameworks
(Python 3.8 compatible): ``run(mx)`` returns {probe: JSON-able result}. Run under MXNet by
``make_semantics.py``, under symgraph by ``test_semantics.py``."""
import numpy as np


def _bound(mx, net, **shapes):
    exe = net.simple_bind(mx.cpu(), **shapes)
    rng = np.random.RandomState(0)
    for k in sorted(exe.arg_dict):
        exe.arg_dict[k][:] = rng.uniform(-1, 1, exe.arg_dict[k].shape)
    return exe


def run(mx):
    out = {}
    x = mx.sym.var('x')
    # backward after an inference forward (Dropout passes everything through)
    h = mx.sym.FullyConnected(x, num_hidden=4, name='fc')
    h = mx.sym.Activation(mx.sym.Dropout(h, p=0.5), act_type='tanh')
    exe = _bound(mx, h, x=(2, 3))
    exe.forward(is_train=False)
    exe.backward(mx.nd.ones((2, 4)))
    out['backward_after_inference'] = [exe.grad_dict[k].asnumpy().round(5).tolist()
                                       for k in ('x', 'fc_weight', 'fc_bias')]
    # an output listed twice: the last head gradient counts
    y = mx.sym.exp(x)
    exe = mx.sym.Group([x, y, y]).simple_bind(mx.cpu(), x=(2,))
    exe.arg_dict['x'][:] = mx.nd.array([0, 1])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2,)), mx.nd.ones((2,)) * 2, mx.nd.ones((2,)) * 5])
    out['repeated_head'] = exe.grad_dict['x'].asnumpy().round(4).tolist()
    # a loss output also fed to BlockGrad keeps SoftmaxOutput's own gradient
    so = mx.sym.SoftmaxOutput(x, mx.sym.var('lab'), name='so')
    exe = mx.sym.Group([so, mx.sym.BlockGrad(so * 1)]).simple_bind(mx.cpu(), x=(2, 3),
                                                                    lab=(2,))
    exe.arg_dict['x'][:] = mx.nd.array([[1, 2, 3], [3, 1, 0]])
    exe.arg_dict['lab'][:] = mx.nd.array([0, 2])
    exe.forward(is_train=True)
    exe.backward()
    out['loss_head_reused'] = exe.grad_dict['x'].asnumpy().round(5).tolist()
    # grad_dict lists every argument, None where no array is bound
    exe = (x * mx.sym.var('w')).simple_bind(mx.cpu(), x=(3,), w=(3,),
                                           grad_req={'x': 'null', 'w': 'write'})
    out['grad_dict_null'] = sorted((k, v is None) for k, v in exe.grad_dict.items())
    return out
