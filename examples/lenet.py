"""Train LeNet on 8x8 handwritten digits with the plain executor and SGD with momentum.

    python examples/lenet.py [--epochs 15] [--batch 32] [--lr 0.05]

The data are the 1,797 digits of the UCI optical-digits set that scikit-learn ships
(``examples/data/digits.csv.gz``, see ``examples/data/README.md``), split with a fixed
seed into 1,437 training and 360 test images. LeNet is adapted to 8x8 inputs: 3x3
convolutions with padding 1 (20 and 50 filters), each followed by relu and 2x2 max
pooling, then FC 500, relu, FC 10 and SoftmaxOutput.

The script is MXNet 1.x code: replace ``import symgraph as mx`` by ``import mxnet as mx``
and it runs the same way. It prints one line per epoch (loss, training accuracy, test
accuracy, time) and exits with status 1 if the final test accuracy is below 97%.
"""
import argparse
import gzip
import os
import time

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


def accuracy(exe, x, y):
    """Test accuracy with an inference executor sharing ``exe``'s parameters."""
    test = exe.reshape(data=x.shape, softmax_label=y.shape, allow_up_sizing=True)
    prob = test.forward(is_train=False, data=x)[0].asnumpy()
    return float((prob.argmax(axis=1) == y).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--epochs', type=int, default=15)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--lr', type=float, default=0.05)
    ap.add_argument('--momentum', type=float, default=0.9)
    ap.add_argument('--wd', type=float, default=1e-4)
    ap.add_argument('--seed', type=int, default=1, help='split, initialisation and order')
    args = ap.parse_args()

    rng = np.random.RandomState(args.seed)
    x, y = load_digits()
    perm = rng.permutation(len(x))
    train, test = perm[:1437], perm[1437:]
    x_train, y_train, x_test, y_test = x[train], y[train], x[test], y[test]
    print('digits: %d training and %d test images of %s'
          % (len(x_train), len(x_test), x.shape[1:]))

    net = build_lenet()
    batch = args.batch
    exe = net.simple_bind(mx.cpu(), data=(batch, 1, 8, 8))
    params = [k for k in net.list_arguments() if k not in ('data', 'softmax_label')]
    momenta = {}
    for k in params:        # Xavier-uniform weights, zero biases
        w = exe.arg_dict[k]
        if k.endswith('weight'):
            fan_in = int(np.prod(w.shape[1:]))
            bound = np.sqrt(6.0 / (fan_in + w.shape[0]))
            w[:] = rng.uniform(-bound, bound, w.shape)
        momenta[k] = mx.nd.zeros(w.shape)

    print('training %d epochs, SGD lr %.3g momentum %.2g wd %.0e, batch %d'
          % (args.epochs, args.lr, args.momentum, args.wd, batch))
    first_loss = None
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(x_train))
        losses, hits, seen = [], 0, 0
        for b in range(len(order) // batch):     # the last partial batch is dropped
            idx = order[b * batch:(b + 1) * batch]
            label = y_train[idx]
            exe.forward(is_train=True, data=x_train[idx], softmax_label=label)
            prob = exe.outputs[0].asnumpy()
            losses.append(-np.log(prob[np.arange(batch), label.astype(int)] + 1e-12).mean())
            hits += int((prob.argmax(axis=1) == label).sum())
            seen += batch
            exe.backward()
            for k in params:
                # SoftmaxOutput's gradient is summed over the batch: average it
                w, m = exe.arg_dict[k], momenta[k]
                m *= args.momentum
                m -= args.lr * (exe.grad_dict[k] * (1.0 / batch) + args.wd * w)
                w += m
        loss = float(np.mean(losses))
        first_loss = loss if first_loss is None else first_loss
        print('epoch %2d  loss %.4f  train acc %.4f  test acc %.4f  %5.1f s'
              % (epoch, loss, hits / seen, accuracy(exe, x_test, y_test),
                 time.time() - start))
    acc = accuracy(exe, x_test, y_test)
    print('loss fell from %.3f to %.3f' % (first_loss, loss))
    print('final test accuracy: %.4f' % acc)
    if acc < TARGET:
        raise SystemExit('test accuracy %.4f is below %.2f' % (acc, TARGET))


if __name__ == '__main__':
    main()
