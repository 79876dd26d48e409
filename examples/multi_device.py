"""Data-parallel training on several devices with ``mx.mod.Module(context=[...])``.

    python examples/multi_device.py [--devices 4] [--epochs 3]

The same MLP is trained from the same initial parameters on generated data (a 10-class
problem, Gaussian clusters in 32 dimensions) twice: on ``mx.cpu(0)`` alone, and on
``mx.cpu(0) ... mx.cpu(N-1)`` with uneven work loads (``work_load_list``).  With several
devices each batch is split among them, every device runs forward and backward on its
slice, and the kvstore ('local') sums the gradients and updates the parameters, so the
run computes the same thing as one device on the whole batch, up to the order in which
float32 sums are rounded.  (In symgraph, ``mx.cpu(i)`` are separate executors in one
process; with GPUs use ``mx.gpu(i)``.)  The MLP uses tanh: with ReLU, a unit whose input
lies within rounding of 0 in some step can switch on in one run and off in the other, and
from then on the runs drift apart by more than rounding (MXNet's do the same).

The script prints both runs' validation accuracy and the largest difference between their
parameters, and says whether the multi-device result equals the single-device one (to
float32 rounding); it exits with status 1 if not.  Replace ``import symgraph as mx`` by
``import mxnet as mx`` and it runs the same way under MXNet 1.x.
"""
import argparse
import logging

import numpy as np

import symgraph as mx

TOLERANCE = 1e-5       # relative, on parameters of size ~0.1-1: float32 rounding


def make_data(rng, n, centers):
    labels = rng.randint(0, len(centers), n)
    x = centers[labels] + rng.normal(0, 1.0, (n, centers.shape[1]))
    return x.astype(np.float32), labels.astype(np.float32)


def build_mlp(num_classes=10):
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=64, name='fc1')
    h = mx.sym.Activation(h, act_type='tanh', name='tanh1')
    h = mx.sym.FullyConnected(h, num_hidden=64, name='fc2')
    h = mx.sym.Activation(h, act_type='tanh', name='tanh2')
    h = mx.sym.FullyConnected(h, num_hidden=num_classes, name='fc3')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def train(contexts, work_load_list, data, init, args):
    x_train, y_train, x_val, y_val = data
    train_iter = mx.io.NDArrayIter(x_train, y_train, args.batch)
    val_iter = mx.io.NDArrayIter(x_val, y_val, args.batch)
    mod = mx.mod.Module(build_mlp(), context=contexts, work_load_list=work_load_list)
    mod.fit(train_iter, eval_data=val_iter, num_epoch=args.epochs, kvstore='local',
            optimizer='sgd', arg_params=init,
            optimizer_params={'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-4})
    (_, acc), = mod.score(val_iter, 'acc')
    params = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    return params, acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--devices', type=int, default=4)
    ap.add_argument('--epochs', type=int, default=3)
    ap.add_argument('--batch', type=int, default=64)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')

    rng = np.random.RandomState(0)
    centers = rng.normal(0, 0.45, (10, 32))
    data = make_data(rng, 2048, centers) + make_data(rng, 512, centers)
    init = {}
    for name, shape in (('fc1_weight', (64, 32)), ('fc2_weight', (64, 64)),
                        ('fc3_weight', (10, 64))):
        bound = np.sqrt(6.0 / sum(shape))
        init[name] = mx.nd.array(rng.uniform(-bound, bound, shape))
        init[name.replace('weight', 'bias')] = mx.nd.zeros((shape[0],))

    contexts = [mx.cpu(i) for i in range(args.devices)]
    work_load = [1 + (i % 2) for i in range(args.devices)]     # 1, 2, 1, 2, ...
    print('single device: %s' % mx.cpu(0))
    single, acc1 = train(mx.cpu(0), None, data, init, args)
    print('%d devices: %s, work_load_list %s' % (args.devices, contexts, work_load))
    multi, acc_n = train(contexts, work_load, data, init, args)

    diff = max(float(np.abs(multi[k] - single[k]).max()) for k in single)
    scale = max(float(np.abs(v).max()) for v in single.values())
    print('validation accuracy: single device %.4f, %d devices %.4f'
          % (acc1, args.devices, acc_n))
    print('largest parameter difference: %.3g (parameters up to %.3g)' % (diff, scale))
    if diff <= TOLERANCE * scale:
        print('the %d-device result equals the single-device run' % args.devices)
    else:
        raise SystemExit('the %d-device result differs from the single-device run'
                         % args.devices)


if __name__ == '__main__':
    main()
