"""Fine-tune a model-zoo network loaded with ``pretrained=True``: a new output layer and a
few training steps with autograd and a Trainer.

    python examples/gluon/finetune.py [--root DIR] [--steps 60] [--batch 32] [--mxnet]

``get_model('mobilenet0.25', pretrained=True, root=DIR)`` reads MXNet's published file
``mobilenet0.25-9f83e440.params`` from ``DIR``, as MXNet does (symgraph never downloads).
Without ``--root``, the script makes a temporary root holding the parameters MXNet 1.9.1
wrote for the golden data (``tests/golden/data/gluon_zoo/mobilenet0.25.params``: a
MobileNet 0.25 on fixed, untrained values; symgraph logs that it is not the published
file). To fine-tune the real ImageNet weights, download
https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/models/mobilenet0.25-9f83e440.zip,
unzip it into ``~/.mxnet/models`` and pass ``--root ~/.mxnet/models``.

The task: the 1,797 8x8 digits of ``examples/data/digits.csv.gz`` (the split of
``examples/gluon/mnist.py``), scaled up to 32x32 and repeated on three channels. The
1000-class output layer is replaced by a fresh ``Dense(10)`` under the network's name
scope, and every layer trains (SGD with momentum) for ``--steps`` batches. The script
prints the loss at the first and last steps (``loss fell from A to B``) and the test
accuracy, and exits with status 1 if the loss did not fall. From the untrained golden values
the test accuracy after 60 steps varies widely with the seed (0.11 to 0.53 under MXNet
1.9.1 for seeds 1 to 4); from the published weights it is a real fine-tuning. ``--mxnet`` (or
``SYMGRAPH_EXAMPLE_MXNET=1``) runs the same code with ``import mxnet as mx``.
"""
import argparse
import gzip
import logging
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DIGITS = os.path.join(HERE, '..', 'data', 'digits.csv.gz')
GOLDEN_PARAMS = os.path.join(HERE, '..', '..', 'tests', 'golden', 'data', 'gluon_zoo',
                             'mobilenet0.25.params')
MODEL = 'mobilenet0.25'
FILE_NAME = 'mobilenet0.25-9f83e440.params'     # MXNet's published name for MODEL


def load_digits(path=DIGITS, size=32):
    """Images (1797, 3, size, size) in [0, 1] and labels (1797,), float32."""
    with gzip.open(path, 'rt') as f:
        table = np.loadtxt(f, delimiter=',', dtype=np.float32)
    images = (table[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    scale = size // 8
    images = images.repeat(scale, axis=2).repeat(scale, axis=3).repeat(3, axis=1)
    return np.ascontiguousarray(images), table[:, 64]


def local_root():
    """A temporary model root holding MXNet's file for the golden data under the
    published name."""
    if not os.path.exists(GOLDEN_PARAMS):
        raise SystemExit('%s is missing; pass --root a directory holding %s'
                         % (GOLDEN_PARAMS, FILE_NAME))
    root = tempfile.mkdtemp(prefix='finetune_models_')
    shutil.copy(GOLDEN_PARAMS, os.path.join(root, FILE_NAME))
    return root


def evaluate(mx, net, x, y, batch=120):
    metric = mx.metric.Accuracy()
    for i in range(0, len(x), batch):
        metric.update([mx.nd.array(y[i:i + batch])], [net(mx.nd.array(x[i:i + batch]))])
    return metric.get()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--root', help='directory holding %s (default: a temporary one made '
                                   'from the golden data)' % FILE_NAME)
    ap.add_argument('--steps', type=int, default=60)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--lr', type=float, default=0.1)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--mxnet', action='store_true', help='run with MXNet instead')
    args = ap.parse_args()
    if args.mxnet or os.environ.get('SYMGRAPH_EXAMPLE_MXNET') == '1':
        import mxnet as mx
    else:
        import symgraph as mx
    logging.basicConfig(level=logging.WARNING, format='%(levelname)s %(name)s: %(message)s')
    gluon, autograd = mx.gluon, mx.autograd

    rng = np.random.RandomState(args.seed)
    x, y = load_digits()
    perm = rng.permutation(len(x))
    train, test = perm[:1437], perm[1437:]
    mx.random.seed(args.seed)

    root = args.root or local_root()
    try:
        if mx.__name__ == 'mxnet' and not args.root:
            # MXNet downloads the published file over one of other content: load the
            # golden file as pretrained=True would load the published one
            net = gluon.model_zoo.vision.get_model(MODEL)
            net.load_parameters(os.path.join(root, FILE_NAME), ctx=mx.cpu())
        else:
            net = gluon.model_zoo.vision.get_model(MODEL, pretrained=True, root=root)
    finally:
        if not args.root:
            shutil.rmtree(root)
    print('loaded %s from %s (%s)' % (MODEL, os.path.join(root, FILE_NAME), mx.__name__))

    # the new head: 10 classes, initialised alone; the loaded layers keep their values
    with net.name_scope():
        net.output = gluon.nn.Dense(10)
    net.output.initialize(mx.init.Xavier())
    net.hybridize()

    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': args.lr, 'momentum': 0.9, 'wd': 1e-4})
    print('fine-tuning %d steps, batch %d, SGD lr %.3g'
          % (args.steps, args.batch, args.lr))
    losses = []
    order = rng.permutation(train)
    for step in range(args.steps):
        pos = (step * args.batch) % (len(order) - args.batch + 1)
        idx = order[pos:pos + args.batch]
        data, label = mx.nd.array(x[idx]), mx.nd.array(y[idx])
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(args.batch)
        losses.append(float(loss.mean().asscalar()))
        if step % 10 == 0 or step == args.steps - 1:
            print('step %3d  loss %.4f' % (step, losses[-1]))
    # the mean of the first and of the last five steps: single batches are noisy
    first, last = np.mean(losses[:5]), np.mean(losses[-5:])
    print('loss fell from %.3f to %.3f' % (first, last))
    print('test accuracy: %.4f' % evaluate(mx, net, x[test], y[test]))
    sys.stdout.flush()
    if not last < first:
        raise SystemExit('the loss did not fall (%.3f -> %.3f)' % (first, last))


if __name__ == '__main__':
    main()
