"""Train a small CNN on 8x8 handwritten digits with Gluon: HybridBlocks, hybridize(),
autograd.record() and a Trainer.

    python examples/gluon/mnist.py [--epochs 10] [--batch 32] [--lr 0.05] [--mxnet]

The data are the 1,797 digits of the UCI optical-digits set that scikit-learn ships
(``examples/data/digits.csv.gz``, see ``examples/data/README.md``), split with a fixed
seed into 1,437 training and 360 test images, as ``examples/lenet.py`` splits them. The
network: two 3x3 convolutions with padding 1 (16 and 32 channels), each followed by
BatchNorm, relu and 2x2 max pooling, then Dense 128 with relu, Dropout 0.2 and Dense 10;
softmax cross-entropy, SGD with momentum through ``gluon.Trainer`` (the learning rate a
tenth from epoch 7 on, ``Trainer.set_learning_rate``), batches from
``gluon.data.DataLoader``.

The script is MXNet 1.x Gluon code: ``--mxnet`` (or ``SYMGRAPH_EXAMPLE_MXNET=1``) runs it
with ``import mxnet as mx`` instead of ``import symgraph as mx``. It prints one line per
epoch (loss, training accuracy, test accuracy, time) and exits with status 1 if the final
test accuracy is below 96%.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data',
                    'digits.csv.gz')
TARGET = 0.96


def load_digits(path=DATA):
    """Images (1797, 1, 8, 8) scaled to [0, 1] and labels (1797,), both float32."""
    with gzip.open(path, 'rt') as f:
        table = np.loadtxt(f, delimiter=',', dtype=np.float32)
    return (table[:, :64] / 16.0).reshape(-1, 1, 8, 8), table[:, 64]


def build_net(mx, num_classes=10):
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        for channels in (16, 32):
            net.add(nn.Conv2D(channels, kernel_size=3, padding=1),
                    nn.BatchNorm(),
                    nn.Activation('relu'),
                    nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Flatten(),
                nn.Dense(128, activation='relu'),
                nn.Dropout(0.2),
                nn.Dense(num_classes))
    return net


def evaluate(mx, net, loader):
    """Accuracy of ``net`` over the batches of ``loader`` (inference mode)."""
    metric = mx.metric.Accuracy()
    for data, label in loader:
        metric.update([label], [net(data)])
    return metric.get()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--epochs', type=int, default=10)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--lr', type=float, default=0.05)
    ap.add_argument('--momentum', type=float, default=0.9)
    ap.add_argument('--wd', type=float, default=1e-4)
    ap.add_argument('--decay-epoch', type=int, default=7,
                    help='the epoch from which the learning rate is a tenth')
    ap.add_argument('--seed', type=int, default=1, help='split, initialisation and order')
    ap.add_argument('--no-hybridize', action='store_true', help='run imperatively')
    ap.add_argument('--mxnet', action='store_true', help='run with MXNet instead')
    args = ap.parse_args()
    if args.mxnet or os.environ.get('SYMGRAPH_EXAMPLE_MXNET') == '1':
        import mxnet as mx
    else:
        import symgraph as mx
    from_ = mx.__name__
    gluon, autograd = mx.gluon, mx.autograd

    rng = np.random.RandomState(args.seed)
    x, y = load_digits()
    perm = rng.permutation(len(x))
    train, test = perm[:1437], perm[1437:]
    print('digits: %d training and %d test images of %s (%s)'
          % (len(train), len(test), x.shape[1:], from_))
    np.random.seed(args.seed)        # the DataLoader's shuffling
    mx.random.seed(args.seed)        # initialisation and dropout
    train_loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x[train], y[train]),
                                         batch_size=args.batch, shuffle=True,
                                         last_batch='discard')
    test_loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x[test], y[test]),
                                        batch_size=120)

    net = build_net(mx)
    net.initialize(mx.init.Xavier(magnitude=2.24))
    if not args.no_hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': args.lr, 'momentum': args.momentum,
                             'wd': args.wd})
    print('training %d epochs, SGD lr %.3g momentum %.2g wd %.0e, batch %d, %s'
          % (args.epochs, args.lr, args.momentum, args.wd, args.batch,
             'imperative' if args.no_hybridize else 'hybridized'))
    first_loss = loss = None
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        if epoch == args.decay_epoch:
            trainer.set_learning_rate(trainer.learning_rate * 0.1)
        metric = mx.metric.Accuracy()
        total, seen = 0.0, 0
        for data, label in train_loader:
            with autograd.record():
                out = net(data)
                batch_loss = loss_fn(out, label)
            batch_loss.backward()
            trainer.step(data.shape[0])
            total += float(batch_loss.sum().asscalar())
            seen += data.shape[0]
            metric.update([label], [out])
        loss = total / seen
        first_loss = loss if first_loss is None else first_loss
        print('epoch %2d  loss %.4f  train acc %.4f  test acc %.4f  %5.1f s'
              % (epoch, loss, metric.get()[1], evaluate(mx, net, test_loader),
                 time.time() - start))
    acc = evaluate(mx, net, test_loader)
    print('loss fell from %.3f to %.3f' % (first_loss, loss))
    print('final test accuracy: %.4f' % acc)
    sys.stdout.flush()
    if acc < TARGET:
        raise SystemExit('test accuracy %.4f is below %.2f' % (acc, TARGET))


if __name__ == '__main__':
    main()
