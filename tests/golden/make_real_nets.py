"""Make the golden data of MXNet's example networks (``real_net_cases.py``) with the real
MXNet 1.9.1 and its native CPU operators. Run from the repository root::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_real_nets.py

Writes ``tests/golden/data/real_nets/<net>.npz`` and ``<net>-symbol.json`` (MXNet's
``tojson()``). Per network, in float64: ``out:train`` (forward with is_train=True),
``grad_names`` with ``grad_norm``/``grad_sample``/``grad_proj`` (the digest of every
argument's gradient after ``backward()``, one row per name), ``aux:<name>`` (auxiliary
states after that step) and ``out:test`` (a second forward with is_train=False). The same
step in float32 gives ``f32_err``: MXNet's own relative L2 error of its float32 gradients
against its float64 ones (what float32 rounding costs there; see test_real_nets.py).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = os.path.join(HERE, 'data', 'real_nets')


def step(mx, net, sym, dtype):
    import numpy as np
    import real_net_cases as rc
    shape = rc.NETS[net][2]
    ex = sym.simple_bind(mx.cpu(), data=shape, type_dict={'data': dtype}, grad_req='write')
    for name, a in ex.arg_dict.items():
        a[:] = rc.arg_value(net, name, a.shape)
    for name, a in ex.aux_dict.items():
        a[:] = rc.aux_value(net, name, a.shape)
    ex.forward(is_train=True)
    ex.backward()
    res = {'out:train': ex.outputs[0].asnumpy().astype(np.float64)}
    grads = {n: g.asnumpy().astype(np.float64) for n, g in ex.grad_dict.items()
             if g is not None}
    res.update({'aux:' + n: a.asnumpy().astype(np.float64) for n, a in ex.aux_dict.items()})
    ex.forward(is_train=False)
    res['out:test'] = ex.outputs[0].asnumpy().astype(np.float64)
    return res, grads


def main():
    os.environ['MXNET_MKLDNN_ENABLED'] = '0'
    import numpy as np
    import mxnet as mx
    import real_net_cases as rc
    os.makedirs(OUT, exist_ok=True)
    for net in rc.NETS:
        sym = rc.build(mx, net)
        res, grads = step(mx, net, sym, 'float64')
        _, grads32 = step(mx, net, sym, 'float32')
        names = sorted(grads)
        digests = [rc.digest(net, name, grads[name]) for name in names]
        res['grad_names'] = np.array(names)
        res['grad_norm'] = np.array([d[0] for d in digests])
        res['grad_sample'] = np.array([d[1] for d in digests])
        res['grad_proj'] = np.array([d[2] for d in digests])
        res['f32_err'] = np.array([np.linalg.norm(grads32[n] - grads[n]) / max(d[0], 1e-300)
                                   for n, d in zip(names, digests)])
        np.savez_compressed(os.path.join(OUT, net + '.npz'), **res)
        with open(os.path.join(OUT, net + '-symbol.json'), 'w') as f:
            f.write(sym.tojson())
        worst = int(np.argmax(res['f32_err']))
        print('%s: %d gradients, worst float32 error of MXNet itself %.2e (%s)'
              % (net, len(names), res['f32_err'][worst], names[worst]))
    with open(os.path.join(OUT, 'VERSION'), 'w') as f:
        json.dump({'mxnet_version': mx.__version__}, f)
        f.write('\n')


if __name__ == '__main__':
    main()
    sys.stdout.flush()
    os._exit(0)     # MXNet may hang at interpreter exit
