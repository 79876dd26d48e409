"""mx.mod.BucketingModule: one executor per bucket key, one set of parameters."""
import json
import os

import numpy as np
import pytest

import symgraph as mx

VOCAB, EMBED, CLASSES, BATCH = 12, 4, 3, 5


def sym_gen(seq_len):
    data = mx.sym.var('data')
    emb = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED, name='embed')
    pooled = mx.sym.mean(emb, axis=1)
    fc = mx.sym.FullyConnected(pooled, num_hidden=CLASSES, name='fc')
    return mx.sym.SoftmaxOutput(fc, name='softmax'), ('data',), ('softmax_label',)


class BucketIter(mx.io.DataIter):
    """Batches of token sequences, each batch of one length (its bucket key)."""

    def __init__(self, lengths, seed=0, default=8):
        super().__init__(BATCH)
        rng = np.random.RandomState(seed)
        self.batches = [(n, rng.randint(0, VOCAB, (BATCH, n)).astype(np.float32),
                         rng.randint(0, CLASSES, BATCH).astype(np.float32))
                        for n in lengths]
        self.default_bucket_key = default
        self.provide_data = [mx.io.DataDesc('data', (BATCH, default))]
        self.provide_label = [mx.io.DataDesc('softmax_label', (BATCH,))]
        self.cur = 0

    def reset(self):
        self.cur = 0

    def next(self):
        if self.cur == len(self.batches):
            raise StopIteration
        n, x, y = self.batches[self.cur]
        self.cur += 1
        return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=n,
                               provide_data=[mx.io.DataDesc('data', (BATCH, n))],
                               provide_label=[mx.io.DataDesc('softmax_label', (BATCH,))])


def initial_params():
    rng = np.random.RandomState(1)
    return {'embed_weight': mx.nd.array(rng.uniform(-1, 1, (VOCAB, EMBED))),
            'fc_weight': mx.nd.array(rng.uniform(-1, 1, (CLASSES, EMBED))),
            'fc_bias': mx.nd.zeros((CLASSES,))}


def bound_module():
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    mod.bind([('data', (BATCH, 8))], [('softmax_label', (BATCH,))])
    mod.init_params(arg_params=initial_params())
    return mod


def test_names_before_and_after_binding():
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    assert mod.data_names == ('data',) and mod.output_names == ['softmax_output']
    with pytest.raises(mx.mod.ModuleStateError, match='not bound'):
        mod.symbol
    mod = bound_module()
    assert mod.symbol.list_arguments() == ['data', 'embed_weight', 'fc_weight', 'fc_bias',
                                           'softmax_label']
    assert [d.shape for d in mod.data_shapes] == [(BATCH, 8)]
    assert mod.output_shapes == [('softmax_output', (BATCH, CLASSES))]


def test_buckets_share_the_parameter_arrays():
    mod = bound_module()
    for key in (3, 5):
        mod.switch_bucket(key, [('data', (BATCH, key))], [('softmax_label', (BATCH,))])
    assert sorted(mod._buckets) == [3, 5, 8]
    execs = [m._exec_group.execs[0] for m in mod._buckets.values()]
    for name in ('embed_weight', 'fc_weight', 'fc_bias'):
        assert len({id(e.arg_dict[name]) for e in execs}) == 1
        assert len({id(e.grad_dict[name]) for e in execs}) == 1
    assert [e.arg_dict['data'].shape for e in execs] == [(BATCH, 8), (BATCH, 3), (BATCH, 5)]
    assert mod._curr_bucket_key == 5


def test_forward_switches_to_the_batch_bucket():
    mod = bound_module()
    it = BucketIter([3, 8, 6])
    for batch in it:
        mod.forward(batch, is_train=False)
        assert mod._curr_bucket_key == batch.bucket_key
        # mean of embeddings then FC, by hand
        x = batch.data[0].asnumpy().astype(int)
        p = {k: v.asnumpy() for k, v in initial_params().items()}
        z = p['embed_weight'][x].mean(axis=1) @ p['fc_weight'].T + p['fc_bias']
        want = np.exp(z - z.max(1, keepdims=True))
        want /= want.sum(1, keepdims=True)
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), want, rtol=1e-5)


def test_training_equals_one_module_per_batch():
    """fit over batches of three lengths equals training each batch with its own Module
    (plain SGD: no optimizer state to share)."""
    lengths = [8, 3, 6, 3, 8, 6, 5]
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    mod.fit(BucketIter(lengths), arg_params=initial_params(), num_epoch=2,
            optimizer_params={'learning_rate': 0.5})
    assert sorted(mod._buckets) == [3, 5, 6, 8]
    params = initial_params()
    for _ in range(2):
        for batch in BucketIter(lengths):
            n = batch.bucket_key
            single = mx.mod.Module(sym_gen(n)[0])
            single.bind([('data', (BATCH, n))], [('softmax_label', (BATCH,))])
            single.init_params(arg_params=params)
            single.init_optimizer(optimizer_params={'learning_rate': 0.5,
                                                    'rescale_grad': 1.0 / BATCH})
            single.forward_backward(batch)
            single.update()
            params = {k: v.copy() for k, v in single.get_params()[0].items()}
    got = mod.get_params()[0]
    for k, v in params.items():
        np.testing.assert_allclose(got[k].asnumpy(), v.asnumpy(), rtol=1e-5, atol=1e-7)


def test_new_bucket_after_init_optimizer_borrows_it():
    mod = bound_module()
    mod.init_optimizer(optimizer_params={'learning_rate': 0.1})
    mod.switch_bucket(4, [('data', (BATCH, 4))], [('softmax_label', (BATCH,))])
    assert mod._buckets[4].optimizer_initialized
    assert mod._buckets[4]._updater is mod._buckets[8]._updater


def test_score_and_predict_over_buckets():
    mod = bound_module()
    it = BucketIter([3, 8, 6])
    preds = mod.predict(it, merge_batches=False)
    assert [p[0].shape for p in preds] == [(BATCH, CLASSES)] * 3
    (name, acc), = mod.score(it, 'acc')
    labels = np.concatenate([b[2] for b in it.batches])
    got = np.concatenate([p[0].asnumpy() for p in preds]).argmax(1)
    assert name == 'accuracy' and acc == pytest.approx((got == labels).mean())


def test_checkpoint_round_trip(tmp_path):
    mod = bound_module()
    mod.switch_bucket(3, [('data', (BATCH, 3))], [('softmax_label', (BATCH,))])
    prefix = str(tmp_path / 'bk')
    mod.save_checkpoint(prefix, 1)
    assert sorted(os.listdir(str(tmp_path))) == ['bk-0001.params', 'bk-3-symbol.json',
                                                 'bk-8-symbol.json', 'bk.buckets']
    loaded = mx.mod.BucketingModule.load(prefix, 1, sym_gen=sym_gen, default_bucket_key=8)
    loaded.bind([('data', (BATCH, 8))], [('softmax_label', (BATCH,))], for_training=False)
    it = BucketIter([3, 8])
    want = [p[0].asnumpy() for p in mod.predict(it, merge_batches=False)]
    got = [p[0].asnumpy() for p in loaded.predict(it, merge_batches=False)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_bad_input():
    with pytest.raises(ValueError, match='default_bucket_key'):
        mx.mod.BucketingModule(sym_gen)
    mod = bound_module()
    with pytest.raises(ValueError, match='no bucket_key'):
        mod.forward(mx.io.DataBatch([mx.nd.ones((BATCH, 8))], [mx.nd.ones((BATCH,))]))
    with pytest.raises(ValueError, match='shared_module for BucketingModule'):
        mod.bind([('data', (BATCH, 8))], force_rebind=True, shared_module=mod)
    with pytest.raises(mx.mod.ModuleStateError, match='init_optimizer'):
        mod.update()
    mod.forward(next(iter(BucketIter([4]))))      # still usable
    assert mod.get_outputs()[0].shape == (BATCH, CLASSES)


def test_fit_matches_mxnet(root_log):
    """BucketingModule.fit against MXNet 1.9.1 (tests/golden/make_module.py, bucket_sgd):
    batches of lengths 8, 3, 6, 3, 8, 5, SGD with momentum and wd, two epochs."""
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden',
                          'module')
    runs = np.load(os.path.join(golden, 'runs.npz'))
    with open(os.path.join(golden, 'runs.json')) as f:
        entry = json.load(f)['bucket_sgd']

    class GoldenIter(BucketIter):
        def __init__(self):
            super().__init__([])
            self.batches = [(n, runs['bucket_data|%d|x' % i], runs['bucket_data|%d|y' % i])
                            for i, n in enumerate(entry['lengths'])]

    def gen(seq_len):
        data = mx.sym.var('data')
        emb = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=4, name='embed')
        fc = mx.sym.FullyConnected(mx.sym.mean(emb, axis=1), num_hidden=3, name='fc')
        return mx.sym.SoftmaxOutput(fc, name='softmax'), ('data',), ('softmax_label',)
    init = {k.split(':')[1]: mx.nd.array(runs[k]) for k in runs.files
            if k.startswith('bucket_data|init:')}
    mod = mx.mod.BucketingModule(gen, default_bucket_key=8)
    mod.fit(GoldenIter(), num_epoch=2, eval_metric='acc', arg_params=init,
            optimizer_params={'learning_rate': 0.5, 'momentum': 0.9, 'wd': 1e-3})
    assert sorted(mod._buckets) == entry['buckets']
    for k, v in mod.get_params()[0].items():
        np.testing.assert_allclose(v.asnumpy(), runs['bucket_sgd|arg:%s' % k], rtol=1e-5,
                                   atol=1e-6, err_msg=k)
    lines = [m for m in root_log.messages('INFO') if m.startswith('Epoch')]
    assert [line.split('=')[0] for line in lines] == \
        [line.split('=')[0] for line in entry['log']]
    assert [line for line in lines if 'Train' in line] == \
        [line for line in entry['log'] if 'Train' in line]
