"""Data-parallel training on several processes: LeNet on the bundled 8x8 digits with
``Module.fit(kvstore='dist_sync')``, MXNet's way.

    python -m symgraph.launch -n 2 python examples/train_dist.py --kv-store dist_sync
    python examples/train_dist.py                       # one process, kvstore 'local'

Every worker reads its own shard of the training set (rows ``rank::num_workers``, the
kvstore telling rank and number of workers, as MXNet's examples do), trains with a batch of
``--batch`` per worker, and the 'dist_sync' kvstore sums the gradients over the workers
(``rescale_grad`` is 1 / (batch x workers)), so every worker holds the same parameters.
Rank 0 alone writes the checkpoints (``--prefix``). Each worker prints its
``rank <r> of <n>: test accuracy <acc>``; the logged training metrics are each worker's
own (MXNet's behaviour). The exit status is 1 if the accuracy is below ``--target``
(95%).

The script is MXNet 1.x code: replace ``import symgraph as mx`` by ``import mxnet as mx`` and
it runs with MXNet's ``tools/launch.py``.
"""
import argparse
import logging
import os
import sys
import tempfile

import numpy as np

import symgraph as mx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_digits_module import build_lenet, load_digits  # noqa: E402

TARGET = 0.95


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kv-store', default='local', help="'local', 'dist_sync', ...")
    ap.add_argument('--epochs', type=int, default=8)
    ap.add_argument('--batch', type=int, default=32, help='batch size per worker')
    ap.add_argument('--lr', type=float, default=0.1)
    ap.add_argument('--target', type=float, default=TARGET,
                    help='the test accuracy below which the exit status is 1')
    ap.add_argument('--prefix', default=None,
                    help='checkpoint prefix (default: a temporary directory)')
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')

    kv = mx.kv.create(args.kv_store)
    rank, workers = kv.rank, kv.num_workers
    x, y = load_digits()
    order = np.random.RandomState(1).permutation(len(y))
    train, test = order[:1437], order[1437:]
    mine = train[rank::workers][:len(train) // workers]     # the same size on every worker
    train_it = mx.io.NDArrayIter(x[mine], y[mine], args.batch, shuffle=True)
    test_it = mx.io.NDArrayIter(x[test], y[test], args.batch)

    mx.random.seed(rank)            # a different init per worker: kvstore init makes rank 0's win
    np.random.seed(rank)            # (the order in which NDArrayIter shuffles)
    prefix = args.prefix or os.path.join(tempfile.mkdtemp(), 'lenet')
    mod = mx.mod.Module(build_lenet(), context=mx.cpu())
    mod.fit(train_it, num_epoch=args.epochs, kvstore=kv, optimizer='sgd',
            optimizer_params={'learning_rate': args.lr, 'momentum': 0.9},
            initializer=mx.init.Xavier(),
            epoch_end_callback=mx.callback.do_checkpoint(prefix))
    acc = mod.score(test_it, 'acc')[0][1]
    print('rank %d of %d: test accuracy %.4f' % (rank, workers, acc), flush=True)
    return 0 if acc >= args.target else 1


if __name__ == '__main__':
    sys.exit(main())
