"""A word-level LSTM language model trained with ``mx.mod.BucketingModule``.

    python examples/rnn/lstm_bucketing.py [--num-epochs 6] [--fused] [--max-sentences N]

MXNet 1.x's ``example/rnn/bucketing/lstm_bucketing.py`` on a small bundled text
(``examples/data/grammar.train.txt`` / ``grammar.test.txt``: sentences of a generated
English-like grammar, 62 words, see ``examples/data/README.md``): the sentences are
encoded with ``mx.rnn.encode_sentences`` and batched by length with
``mx.rnn.BucketSentenceIter`` (one bucket per batch, padded with the invalid label 0);
``sym_gen`` unrolls a stack of ``mx.rnn.LSTMCell`` (or, with ``--fused``, one
``mx.rnn.FusedRNNCell``: the fused ``RNN`` operator) over each bucket's length, and
``fit`` trains every bucket's executor on the same parameters, scoring the next word with
``mx.metric.Perplexity``.

The script prints the validation perplexity after each epoch and exits with status 1
unless it fell below the first epoch's and below the vocabulary size (a model that knows
nothing).  ``--max-sentences`` trains on the first N sentences only (the test suite runs
a few batches that way).  Replace ``import symgraph as mx`` by ``import mxnet as mx``
and it runs the same way under MXNet 1.x.
"""
import argparse
import logging
import os
import random

import numpy as np

import symgraph as mx

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data')
BUCKETS = [6, 10, 14, 18, 24]
START_LABEL = 1
INVALID_LABEL = 0


def tokenize_text(fname, vocab=None, invalid_label=-1, start_label=0):
    """Encode a text file, one sentence a line, words separated by spaces."""
    with open(fname) as f:
        lines = [[w for w in line.split(' ') if w] for line in f.read().splitlines()]
    return mx.rnn.encode_sentences(lines, vocab=vocab, invalid_label=invalid_label,
                                   start_label=start_label)


def make_stack(args):
    """The recurrent layers: unrolled LSTM cells, or one fused cell."""
    if args.fused:
        return mx.rnn.FusedRNNCell(args.num_hidden, num_layers=args.num_layers,
                                   mode='lstm', prefix='lstm_')
    stack = mx.rnn.SequentialRNNCell()
    for i in range(args.num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=args.num_hidden, prefix='lstm_l%d_' % i))
    return stack


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--num-layers', type=int, default=2, help='number of stacked LSTM layers')
    ap.add_argument('--num-hidden', type=int, default=64, help='hidden units per layer')
    ap.add_argument('--num-embed', type=int, default=32, help='embedding size')
    ap.add_argument('--fused', action='store_true',
                    help='one FusedRNNCell (the RNN operator) instead of unrolled LSTMCells')
    ap.add_argument('--num-epochs', type=int, default=6, help='epochs to train')
    ap.add_argument('--lr', type=float, default=0.01, help='learning rate')
    ap.add_argument('--optimizer', default='adam', help='optimizer name')
    ap.add_argument('--mom', type=float, default=0.0, help='momentum (sgd)')
    ap.add_argument('--wd', type=float, default=0.00001, help='weight decay')
    ap.add_argument('--batch-size', type=int, default=32, help='sentences per batch')
    ap.add_argument('--disp-batches', type=int, default=20,
                    help='log the training perplexity every this many batches')
    ap.add_argument('--max-sentences', type=int, default=None,
                    help='train on the first N sentences only (a short run)')
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    random.seed(1)
    np.random.seed(1)
    mx.random.seed(1)

    train_sent, vocab = tokenize_text(os.path.join(DATA, 'grammar.train.txt'),
                                      start_label=START_LABEL, invalid_label=INVALID_LABEL)
    val_sent, _ = tokenize_text(os.path.join(DATA, 'grammar.test.txt'), vocab=vocab,
                                start_label=START_LABEL, invalid_label=INVALID_LABEL)
    if args.max_sentences:
        train_sent = train_sent[:args.max_sentences]
    data_train = mx.rnn.BucketSentenceIter(train_sent, args.batch_size, buckets=BUCKETS,
                                           invalid_label=INVALID_LABEL)
    data_val = mx.rnn.BucketSentenceIter(val_sent, args.batch_size, buckets=BUCKETS,
                                         invalid_label=INVALID_LABEL)
    print('vocabulary: %d words; %d training and %d validation sentences'
          % (len(vocab), len(train_sent), len(val_sent)))

    stack = make_stack(args)

    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        label = mx.sym.Variable('softmax_label')
        embed = mx.sym.Embedding(data=data, input_dim=len(vocab), output_dim=args.num_embed,
                                 name='embed')
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, args.num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=len(vocab), name='pred')
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name='softmax')
        return pred, ('data',), ('softmax_label',)

    history = []

    def record(param):
        history.append(dict(param.eval_metric.get_name_value())['perplexity'])

    model = mx.mod.BucketingModule(sym_gen=sym_gen,
                                   default_bucket_key=data_train.default_bucket_key,
                                   context=mx.cpu())
    model.fit(train_data=data_train, eval_data=data_val,
              eval_metric=mx.metric.Perplexity(INVALID_LABEL),
              optimizer=args.optimizer,
              optimizer_params={'learning_rate': args.lr, 'wd': args.wd,
                                **({'momentum': args.mom} if args.optimizer == 'sgd' else {})},
              initializer=mx.init.Xavier(factor_type='in', magnitude=2.34),
              num_epoch=args.num_epochs, eval_end_callback=record,
              batch_end_callback=mx.callback.Speedometer(args.batch_size, args.disp_batches,
                                                         auto_reset=False))
    print('validation perplexity by epoch: %s' % ', '.join('%.3f' % p for p in history))
    first, last = history[0], history[-1]
    if not (last < first and last < len(vocab)):
        raise SystemExit('the validation perplexity did not fall (%.3f after the first '
                         'epoch, %.3f after the last; %d words)' % (first, last, len(vocab)))
    print('perplexity fell from %.3f to %.3f (a uniform guess over %d words: %d)'
          % (first, last, len(vocab), len(vocab)))


if __name__ == '__main__':
    main()
