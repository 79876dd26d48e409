"""Classify variable-length token sequences with ``mx.mod.BucketingModule``.

    python examples/bucketing.py [--epochs 8] [--batch 32]

Generated data: sequences of 5 to 30 tokens from a vocabulary of 40, each of one of 4
classes; a class draws most of its tokens from its own 10 words and the rest from the
whole vocabulary.  The sequences are grouped into buckets by length (5, 10, 20, 30; a
sequence is padded with token 0, which the model learns to ignore, up to its bucket's
length), and every batch holds one bucket.  The model is one symbol per bucket length,
made by ``sym_gen``: embedding, mean over the sequence, a hidden layer and softmax; all
buckets share its parameters.  RNN cells are another issue's, so there are none here.

The script prints the buckets, trains with ``fit`` (MXNet's log lines), checks that every
bucket's executor holds the same parameter arrays, and prints the test accuracy; it exits
with status 1 if that is below 90%.  Replace ``import symgraph as mx`` by
``import mxnet as mx`` and it runs the same way under MXNet 1.x.
"""
import argparse
import logging

import numpy as np

import symgraph as mx

VOCAB, CLASSES, EMBED = 40, 4, 16
BUCKETS = [5, 10, 20, 30]
TARGET = 0.9


def make_data(rng, n):
    """``n`` sequences (lists of token ids, 1..VOCAB-1) and their classes."""
    labels = rng.randint(0, CLASSES, n)
    seqs = []
    for c in labels:
        length = rng.randint(5, 31)
        own = rng.randint(1 + 10 * c, 1 + 10 * c + 9, length)
        other = rng.randint(1, VOCAB, length)
        seqs.append(np.where(rng.rand(length) < 0.6, own, other))
    return seqs, labels.astype(np.float32)


class BucketSeqIter(mx.io.DataIter):
    """Batches of one bucket each: sequences padded with 0 to the bucket length."""

    def __init__(self, seqs, labels, batch_size, buckets, shuffle=False, seed=0):
        super().__init__(batch_size)
        self.buckets = buckets
        self.default_bucket_key = max(buckets)
        self.data = {b: [] for b in buckets}
        for s, y in zip(seqs, labels):
            b = min(k for k in buckets if k >= len(s))
            padded = np.zeros(b, np.float32)
            padded[:len(s)] = s
            self.data[b].append((padded, y))
        self.plan = [(b, i) for b in buckets
                     for i in range(0, len(self.data[b]) - batch_size + 1, batch_size)]
        self.provide_data = [mx.io.DataDesc('data', (batch_size, self.default_bucket_key))]
        self.provide_label = [mx.io.DataDesc('softmax_label', (batch_size,))]
        self.shuffle = shuffle
        self.rng = np.random.RandomState(seed)
        self.cur = 0

    def reset(self):
        self.cur = 0
        if self.shuffle:
            self.rng.shuffle(self.plan)

    def next(self):
        if self.cur == len(self.plan):
            raise StopIteration
        b, i = self.plan[self.cur]
        self.cur += 1
        rows = self.data[b][i:i + self.batch_size]
        x = np.stack([r[0] for r in rows])
        y = np.array([r[1] for r in rows], np.float32)
        return mx.io.DataBatch(
            [mx.nd.array(x)], [mx.nd.array(y)], pad=0, bucket_key=b,
            provide_data=[mx.io.DataDesc('data', x.shape)],
            provide_label=[mx.io.DataDesc('softmax_label', y.shape)])


def sym_gen(seq_len):
    """The network for sequences of ``seq_len`` tokens."""
    data = mx.sym.var('data')
    emb = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED, name='embed')
    pooled = mx.sym.mean(emb, axis=1, name='pool')
    h = mx.sym.FullyConnected(pooled, num_hidden=32, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=CLASSES, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax'), ('data',), ('softmax_label',)


def same_memory(a, b):
    """Whether writing ``a`` changes ``b`` (MXNet's ``test_utils.same_array``)."""
    saved = a.copy()
    a[:] = saved + 1
    same = np.array_equal(b.asnumpy(), saved.asnumpy() + 1)
    a[:] = saved
    return same


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--epochs', type=int, default=8)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--lr', type=float, default=0.1)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')

    rng = np.random.RandomState(7)
    mx.random.seed(7)
    train_iter = BucketSeqIter(*make_data(rng, 3000), args.batch, BUCKETS, shuffle=True)
    test_iter = BucketSeqIter(*make_data(rng, 800), args.batch, BUCKETS)
    print('buckets (length: training batches): %s'
          % ', '.join('%d: %d' % (b, sum(1 for k, _ in train_iter.plan if k == b))
                      for b in BUCKETS))

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=train_iter.default_bucket_key,
                                 context=mx.cpu())
    mod.fit(train_iter, eval_data=test_iter, eval_metric='acc', num_epoch=args.epochs,
            optimizer='sgd', optimizer_params={'learning_rate': args.lr, 'momentum': 0.9},
            initializer=mx.init.Xavier(magnitude=2.0))

    execs = [m._exec_group.execs[0] for m in mod._buckets.values()]
    shared = all(same_memory(e.arg_dict['embed_weight'], execs[0].arg_dict['embed_weight'])
                 for e in execs)
    print('bucket executors: %s; parameters shared: %s'
          % (sorted(mod._buckets), 'yes' if shared else 'NO'))
    (_, acc), = mod.score(test_iter, 'acc')
    print('final test accuracy: %.4f' % acc)
    if not shared or acc < TARGET:
        raise SystemExit('test accuracy %.4f is below %.2f' % (acc, TARGET)
                         if shared else 'the buckets do not share their parameters')


if __name__ == '__main__':
    main()
