"""Golden Module.fit runs made with the real MXNet 1.9.1.

Run from the repository root with MXNet's interpreter::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_module.py

Every run trains a small network for 2 epochs with ``Module.fit`` on fixed data (the first
94 images of the bundled ``examples/data/digits.csv.gz``: 64 for training in 4 batches of
16, no shuffle, and 30 for validation, whose last batch is padded) from fixed initial
parameters given as ``arg_params``/``aux_params``, with ``do_checkpoint`` as the epoch-end
callback.  The networks are an MLP (64-32-10) and a LeNet for 8x8 images (two 3x3
convolutions, the first without bias and followed by BatchNorm, so that checkpoints hold
auxiliary states; max pooling, FC 16, FC 10).  The runs:

* ``<net>_sgd``: SGD with momentum 0.9 and wd 1e-3, a FactorScheduler (step 3, factor
  0.5), metric ``'acc'``;
* ``<net>_adam``: Adam (lr 0.01), metric ``'ce'``;
* ``mlp_sgd_2cpu``: ``mlp_sgd`` on ``context=[mx.cpu(0), mx.cpu(1)]`` (MXNet's kvstore
  'local' then updates the parameters in the store);
* ``mlp_sgd_wl``: ``mlp_sgd`` on three CPUs with ``work_load_list=[1, 2, 1]``;
* ``ff_mlp_sgd``: ``mx.model.FeedForward`` (SGD, momentum, wd) on the MLP for 3 epochs
  of ``epoch_size=3`` batches (the 4-batch iterator is reset mid-epoch), then
  ``predict``, ``score`` and ``save``;
* ``bucket_sgd``: ``BucketingModule.fit`` (embedding, mean over the sequence, FC;
  SGD with momentum and wd) over batches of token sequences of lengths 8, 3, 6, 3, 8, 5
  (the data and initial parameters are in runs.npz as ``bucket_data|...``);
* ``<mlp run>_resume``: ``save_checkpoint(prefix, 2, save_optimizer_states=True)``,
  ``Module.load(prefix, 2, load_optimizer_states=True)`` and one more epoch
  (``begin_epoch=2, num_epoch=3``).

Writes into ``tests/golden/module/``:

* ``data.npz``: the data (``x_train``, ``y_train``, ``x_val``, ``y_val``; images as
  (N, 64), the LeNet reshapes them) and the initial parameters (``<net>:<name>``);
* ``runs.npz``: per run the final parameters (``<run>|arg:<name>``, ``<run>|aux:<name>``),
  every checkpoint's contents (``<run>|ckpt<epoch>|arg:<name>``), ``predict`` on the
  validation data after training (``<run>|predict``) and, for resumed runs, the
  parameters after the extra epoch (``<run>_resume|arg:<name>``);
* ``runs.json``: per run the log lines of ``fit`` (``Time cost`` values replaced by
  ``<t>``, the checkpoint prefix by ``<prefix>``), the checkpoint symbol JSON texts,
  the parameter names of each checkpoint in file order, ``score`` after training, and
  the optimizer states file of the resumed runs (hex).
"""
import gzip
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import warnings

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, 'module')
DIGITS = os.path.join(ROOT, 'examples', 'data', 'digits.csv.gz')
BATCH = 16


def load_data():
    with gzip.open(DIGITS, 'rt') as f:
        table = np.loadtxt(f, delimiter=',', dtype=np.float32)
    x = table[:94, :64] / 16.0
    y = table[:94, 64]
    return x[:64], y[:64], x[64:], y[64:]


def mlp():
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=32, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def lenet():
    data = mx.sym.var('data')
    # no bias before BatchNorm: its gradient would be rounding noise, which Adam scales
    # up to full steps (the bias has no effect on the training output)
    h = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True,
                           name='conv1')
    h = mx.sym.BatchNorm(h, name='bn1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool1')
    h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=8, name='conv2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool2')
    h = mx.sym.Flatten(h, name='flatten')
    h = mx.sym.FullyConnected(h, num_hidden=16, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu3')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


NETS = {'mlp': (mlp, (64,)), 'lenet': (lenet, (1, 8, 8))}


def initial_params(name):
    """Fixed initial parameters: uniform in +-1/sqrt(fan_in), BatchNorm as MXNet's."""
    build, shape = NETS[name]
    net = build()
    arg_shapes, _, aux_shapes = net.infer_shape(data=(BATCH,) + shape)
    rng = np.random.RandomState(7 if name == 'mlp' else 11)
    args, aux = {}, {}
    for n, s in zip(net.list_arguments(), arg_shapes):
        if n in ('data', 'softmax_label'):
            continue
        if n.endswith('_gamma'):
            args[n] = np.ones(s, np.float32)
        elif n.endswith(('_beta', '_bias')):
            args[n] = rng.uniform(-0.05, 0.05, s).astype(np.float32)
        else:
            fan_in = int(np.prod(s[1:]))
            args[n] = rng.uniform(-1, 1, s).astype(np.float32) / np.sqrt(fan_in)
    for n, s in zip(net.list_auxiliary_states(), aux_shapes):
        aux[n] = (np.zeros if n.endswith('_mean') else np.ones)(s, np.float32)
    return args, aux


def optimizer(kind):
    if kind == 'sgd':
        return 'sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3,
                       'lr_scheduler': mx.lr_scheduler.FactorScheduler(step=3, factor=0.5)}, \
            'acc'
    return 'adam', {'learning_rate': 0.01}, 'ce'


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def clean(lines, prefix):
    out = []
    for line in lines:
        line = line.replace(prefix, '<prefix>')
        line = re.sub(r'Time cost=[\d.]+', 'Time cost=<t>', line)
        out.append(line)
    return out


def iters(data, net):
    x_train, y_train, x_val, y_val = data
    shape = NETS[net][1]
    train = mx.io.NDArrayIter(x_train.reshape((-1,) + shape), y_train, BATCH, shuffle=False)
    val = mx.io.NDArrayIter(x_val.reshape((-1,) + shape), y_val, BATCH, shuffle=False)
    return train, val


def run(name, net, kind, data, arrays, report, tmp, contexts=None, work_load_list=None,
        resume=False):
    args, aux = initial_params(net)
    train, val = iters(data, net)
    opt, opt_params, metric = optimizer(kind)
    context = contexts or mx.cpu()
    mod = mx.mod.Module(NETS[net][0](), context=context, work_load_list=work_load_list)
    prefix = os.path.join(tmp, name)
    cap = Capture()
    root = logging.getLogger()
    root.addHandler(cap)
    root.setLevel(logging.INFO)
    try:
        mod.fit(train, eval_data=val, eval_metric=metric, optimizer=opt,
                optimizer_params=opt_params,
                arg_params={k: mx.nd.array(v) for k, v in args.items()},
                aux_params={k: mx.nd.array(v) for k, v in aux.items()},
                epoch_end_callback=mx.callback.do_checkpoint(prefix), num_epoch=2)
    finally:
        root.removeHandler(cap)
    entry = {'log': clean(cap.lines, prefix), 'net': net, 'optimizer': kind,
             'contexts': len(context) if isinstance(context, list) else 1,
             'work_load_list': work_load_list, 'checkpoints': {}}
    arg_p, aux_p = mod.get_params()
    for k, v in arg_p.items():
        arrays['%s|arg:%s' % (name, k)] = v.asnumpy()
    for k, v in aux_p.items():
        arrays['%s|aux:%s' % (name, k)] = v.asnumpy()
    for epoch in (1, 2):
        fname = '%s-%04d.params' % (prefix, epoch)
        saved = mx.nd.load(fname)
        with open('%s-symbol.json' % prefix) as f:
            sym_text = f.read()
        entry['checkpoints'][str(epoch)] = {'params': list(saved.keys()), 'symbol': sym_text}
        for k, v in saved.items():
            arrays['%s|ckpt%d|%s' % (name, epoch, k)] = v.asnumpy()
    arrays['%s|predict' % name] = mod.predict(val).asnumpy()
    entry['score'] = mod.score(val, metric)
    report[name] = entry
    if resume:
        mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
        with open('%s-0002.states' % prefix, 'rb') as f:
            entry['states_hex'] = f.read().hex()
        mod2 = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
        opt, opt_params, metric = optimizer(kind)
        cap = Capture()
        root.addHandler(cap)
        try:
            mod2.fit(train, eval_data=val, eval_metric=metric, optimizer=opt,
                     optimizer_params=opt_params, begin_epoch=2, num_epoch=3)
        finally:
            root.removeHandler(cap)
        rname = name + '_resume'
        report[rname] = {'log': clean(cap.lines, prefix), 'net': net, 'optimizer': kind}
        for k, v in mod2.get_params()[0].items():
            arrays['%s|arg:%s' % (rname, k)] = v.asnumpy()


def run_feedforward(name, data, arrays, report, tmp):
    """``mx.model.FeedForward`` on the MLP: fit on an iterator (epoch_size 3, so the
    iterator is reset mid-epoch), predict, score, save."""
    args, aux = initial_params('mlp')
    train, val = iters(data, 'mlp')
    cap = Capture()
    root = logging.getLogger()
    root.addHandler(cap)
    root.setLevel(logging.INFO)
    nbatches = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            model = mx.model.FeedForward(
                mlp(), num_epoch=3, epoch_size=3, optimizer='sgd', learning_rate=0.1,
                momentum=0.9, wd=1e-3,
                arg_params={k: mx.nd.array(v) for k, v in args.items()},
                aux_params={k: mx.nd.array(v) for k, v in aux.items()})
        model.fit(train, eval_data=val, eval_metric='acc',
                  batch_end_callback=lambda p: nbatches.append([p.epoch, p.nbatch]))
    finally:
        root.removeHandler(cap)
    prefix = os.path.join(tmp, name)
    model.save(prefix)
    entry = {'log': clean(cap.lines, prefix), 'nbatches': nbatches,
             'warnings': [str(w.category.__name__) + ': ' + str(w.message) for w in caught],
             'files': sorted(os.listdir(tmp)), 'score': float(model.score(val))}
    for k, v in model.arg_params.items():
        arrays['%s|arg:%s' % (name, k)] = v.asnumpy()
    arrays['%s|predict' % name] = model.predict(val)
    report[name] = entry


VOCAB, BUCKET_BATCH = 12, 5
BUCKET_LENGTHS = [8, 3, 6, 3, 8, 5]


def bucket_sym_gen(seq_len):
    data = mx.sym.var('data')
    emb = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=4, name='embed')
    pooled = mx.sym.mean(emb, axis=1)
    fc = mx.sym.FullyConnected(pooled, num_hidden=3, name='fc')
    return mx.sym.SoftmaxOutput(fc, name='softmax'), ('data',), ('softmax_label',)


class BucketIter(mx.io.DataIter):
    """Batches of token sequences, each batch of one length (its bucket key)."""

    def __init__(self, batches):
        super().__init__(BUCKET_BATCH)
        self.batches = batches
        self.default_bucket_key = max(n for n, _, _ in batches)
        self.provide_data = [mx.io.DataDesc('data', (BUCKET_BATCH, self.default_bucket_key))]
        self.provide_label = [mx.io.DataDesc('softmax_label', (BUCKET_BATCH,))]
        self.cur = 0

    def reset(self):
        self.cur = 0

    def next(self):
        if self.cur == len(self.batches):
            raise StopIteration
        n, x, y = self.batches[self.cur]
        self.cur += 1
        return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], pad=0, bucket_key=n,
                               provide_data=[mx.io.DataDesc('data', x.shape)],
                               provide_label=[mx.io.DataDesc('softmax_label', y.shape)])


def bucket_data():
    rng = np.random.RandomState(13)
    batches = [(n, rng.randint(0, VOCAB, (BUCKET_BATCH, n)).astype(np.float32),
                rng.randint(0, 3, BUCKET_BATCH).astype(np.float32)) for n in BUCKET_LENGTHS]
    params = {'embed_weight': rng.uniform(-1, 1, (VOCAB, 4)).astype(np.float32),
              'fc_weight': rng.uniform(-1, 1, (3, 4)).astype(np.float32),
              'fc_bias': np.zeros(3, np.float32)}
    return batches, params


def run_bucketing(name, arrays, report):
    """BucketingModule.fit over batches of lengths 8, 3, 6, 3, 8, 5 (SGD with momentum
    and wd, 'acc'), 2 epochs."""
    batches, params = bucket_data()
    for i, (n, x, y) in enumerate(batches):
        arrays['bucket_data|%d|x' % i] = x
        arrays['bucket_data|%d|y' % i] = y
    for k, v in params.items():
        arrays['bucket_data|init:%s' % k] = v
    mod = mx.mod.BucketingModule(bucket_sym_gen, default_bucket_key=8)
    cap = Capture()
    root = logging.getLogger()
    root.addHandler(cap)
    try:
        mod.fit(BucketIter(batches), num_epoch=2, eval_metric='acc',
                arg_params={k: mx.nd.array(v) for k, v in params.items()},
                optimizer_params={'learning_rate': 0.5, 'momentum': 0.9, 'wd': 1e-3})
    finally:
        root.removeHandler(cap)
    report[name] = {'log': clean(cap.lines, '<none>'), 'lengths': BUCKET_LENGTHS,
                    'buckets': sorted(int(k) for k in mod._buckets)}
    for k, v in mod.get_params()[0].items():
        arrays['%s|arg:%s' % (name, k)] = v.asnumpy()


def main():
    os.makedirs(OUT, exist_ok=True)
    data = load_data()
    inits = {}
    for net in NETS:
        args, aux = initial_params(net)
        inits.update({'%s:%s' % (net, k): v for k, v in list(args.items())
                      + list(aux.items())})
    np.savez_compressed(os.path.join(OUT, 'data.npz'), x_train=data[0], y_train=data[1],
                        x_val=data[2], y_val=data[3], **inits)
    arrays, report = {}, {}
    tmp = tempfile.mkdtemp()
    try:
        for net in NETS:
            for kind in ('sgd', 'adam'):
                run('%s_%s' % (net, kind), net, kind, data, arrays, report, tmp,
                    resume=(net == 'mlp'))
        run('mlp_sgd_2cpu', 'mlp', 'sgd', data, arrays, report, tmp,
            contexts=[mx.cpu(0), mx.cpu(1)])
        run('mlp_sgd_wl', 'mlp', 'sgd', data, arrays, report, tmp,
            contexts=[mx.cpu(0), mx.cpu(1), mx.cpu(2)], work_load_list=[1, 2, 1])
        run_feedforward('ff_mlp_sgd', data, arrays, report, tempfile.mkdtemp(dir=tmp))
        run_bucketing('bucket_sgd', arrays, report)
    finally:
        shutil.rmtree(tmp)
    np.savez_compressed(os.path.join(OUT, 'runs.npz'), **arrays)
    with open(os.path.join(OUT, 'runs.json'), 'w') as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print('wrote %d arrays, %d runs' % (len(arrays), len(report)))
    sys.stdout.flush()
    os._exit(0)     # MXNet may hang at interpreter exit


if __name__ == '__main__':
    main()
