"""Train LeNet on the bundled 8x8 digits with ``mx.mod.Module.fit``, Speedometer and
checkpoints, then reload the last checkpoint and score it.

    python examples/train_digits_module.py [--epochs 10] [--batch 32] [--prefix DIR/lenet]

The data are the 1,797 digits of ``examples/data/digits.csv.gz`` (see
``examples/data/README.md``), split with a fixed seed into 1,437 training and 360 test
images, fed by ``mx.io.NDArrayIter``.  The network is ``examples/lenet.py``'s.  ``fit``
logs MXNet's lines: a Speedometer line every 15 batches, ``Epoch[i] Train-accuracy``,
``Time cost``, ``Saved checkpoint to "..."`` and ``Validation-accuracy`` per epoch.  Then
``Module.load`` reads the last checkpoint back and its test accuracy is printed; the
script exits with status 1 if it is below 97%.

The script is MXNet 1.x code: replace ``import symgraph as mx`` by ``import mxnet as mx``
and it runs the same way.
"""
import argparse
import gzip
import logging
import os
import tempfile

import numpy as np

import symgraph as mx

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'digits.csv.gz')
TARGET = 0.97


def load_digits(path=DATA):
    """Images (1797, 1, 8, 8) scaled to [0, 1] and labels (1797,), both float32."""
    with gzip.open(path, 'rt') as f:
        table = np.loadtxt(f, delimiter=',', dtype=np.float32)
    return (table[:, :64] / 16.0).reshape(-1, 1, 8, 8), table[:, 64]


def build_lenet(num_classes=10):
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=20, name='conv1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool1')
    h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=50, name='conv2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool2')
    h = mx.sym.Flatten(h, name='flatten')
    h = mx.sym.FullyConnected(h, num_hidden=500, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu3')
    h = mx.sym.FullyConnected(h, num_hidden=num_classes, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--epochs', type=int, default=10)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--lr', type=float, default=0.05)
    ap.add_argument('--prefix', default=None,
                    help='checkpoint prefix (default: a temporary directory)')
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')

    rng = np.random.RandomState(args.seed)
    x, y = load_digits()
    perm = rng.permutation(len(x))
    train, test = perm[:1437], perm[1437:]
    np.random.seed(args.seed)           # NDArrayIter's shuffle draws from numpy.random
    mx.random.seed(args.seed)           # and the initializer from mx.random
    train_iter = mx.io.NDArrayIter(x[train], y[train], args.batch, shuffle=True)
    test_iter = mx.io.NDArrayIter(x[test], y[test], args.batch)
    prefix = args.prefix or os.path.join(tempfile.mkdtemp(), 'lenet')

    mod = mx.mod.Module(build_lenet(), context=mx.cpu())
    mod.fit(train_iter, eval_data=test_iter, eval_metric='acc', num_epoch=args.epochs,
            optimizer='sgd',
            optimizer_params={'learning_rate': args.lr, 'momentum': 0.9, 'wd': 1e-4},
            initializer=mx.init.Xavier(rnd_type='uniform', magnitude=3),
            batch_end_callback=mx.callback.Speedometer(args.batch, frequent=15),
            epoch_end_callback=mx.callback.do_checkpoint(prefix))

    loaded = mx.mod.Module.load(prefix, args.epochs)
    loaded.bind(test_iter.provide_data, test_iter.provide_label, for_training=False)
    (_, acc), = loaded.score(test_iter, 'acc')
    print('checkpoint %s-%04d.params: test accuracy %.4f' % (prefix, args.epochs, acc))
    if acc < TARGET:
        raise SystemExit('test accuracy %.4f is below %.2f' % (acc, TARGET))


if __name__ == '__main__':
    main()
