"""Probes of ``mx.metric`` written once for MXNet 1.9.1 and symgraph: ``run(mx)`` returns
{probe: JSON-able result}. ``make_metric.py`` stores MXNet's results; ``tests/metric/``
runs the same probes under symgraph and compares.

Runs under Python 3.8 / NumPy 1.23 (MXNet) and Python 3.11 / NumPy 2 (symgraph).
"""
import json
import math

import numpy as np

SEED = 20240611


def num(x):
    """JSON-able number (NaN as the string 'nan')."""
    x = float(x)
    return 'nan' if math.isnan(x) else x


def pair(nv):
    """``get()``'s (name, value) or (names, values) as JSON."""
    name, value = nv
    if isinstance(name, list):
        return [list(name), [num(v) for v in value]]
    return [name, num(value)]


def _data():
    rs = np.random.RandomState(SEED)

    def probs(n, k):
        p = rs.rand(n, k).astype('float32') + 0.05
        return p / p.sum(axis=1, keepdims=True)

    d = {}
    d['cls_pred'] = [probs(8, 4) for _ in range(3)]
    d['cls_label'] = [rs.randint(0, 4, size=8).astype('float32') for _ in range(3)]
    d['bin_pred'] = [probs(10, 2) for _ in range(4)]
    d['bin_label'] = [rs.randint(0, 2, size=10).astype('float32') for _ in range(4)]
    # PCC: the confusion matrix grows from 2 to 5 classes on the third batch
    d['pcc_pred'] = [probs(9, 2), probs(9, 3), probs(9, 5)]
    d['pcc_label'] = [rs.randint(0, 2, size=9).astype('float32'),
                      rs.randint(0, 3, size=9).astype('float32'),
                      rs.randint(0, 5, size=9).astype('float32')]
    d['reg_pred'] = [rs.randn(6, 3).astype('float32') for _ in range(3)]
    d['reg_label'] = [(p + 0.5 * rs.randn(6, 3)).astype('float32') for p in d['reg_pred']]
    d['reg1_pred'] = [rs.randn(7).astype('float32') for _ in range(3)]
    d['reg1_label'] = [(p + 0.3 * rs.randn(7)).astype('float32') for p in d['reg1_pred']]
    d['loss'] = [rs.rand(5, 2).astype('float32') for _ in range(3)]
    # Perplexity labels include 2, the ignore_label of one probe
    d['ppl_pred'] = [probs(12, 6) for _ in range(3)]
    d['ppl_label'] = [rs.randint(0, 6, size=12).astype('float32') for _ in range(3)]
    d['acc_pred_axis0'] = [probs(7, 5).T.copy() for _ in range(2)]
    d['acc_label_axis0'] = [rs.randint(0, 5, size=7).astype('float32') for _ in range(2)]
    d['acc_pred_int'] = [rs.randint(0, 3, size=9).astype('float32') for _ in range(2)]
    d['acc_label_int'] = [rs.randint(0, 3, size=9).astype('float32') for _ in range(2)]
    d['topk_pred1'] = [rs.rand(6).astype('float32') for _ in range(2)]
    d['topk_label1'] = [rs.randint(0, 6, size=6).astype('float32') for _ in range(2)]
    return d


def mean_abs_argmax(label, pred):
    """A custom feval: mean |label - argmax(pred)|."""
    return np.mean(np.abs(label - pred.argmax(axis=1)))


def sum_and_count(label, pred):
    """A custom feval returning (sum_metric, num_inst)."""
    return float((pred.argmax(axis=1) == label).sum()), label.shape[0]


# (probe name, metric factory args, data keys, script); script items: 'u<i>' update with
# batch i, 'r' reset_local, 'R' reset; after each item get() and get_global() are recorded.
CASES = [
    ('acc', (['acc'], {}), ('cls_label', 'cls_pred'), ['u0', 'u1', 'r', 'u2']),
    ('acc_axis0', (['acc'], {'axis': 0}), ('acc_label_axis0', 'acc_pred_axis0'),
     ['u0', 'r', 'u1']),
    ('acc_same_shape', (['accuracy'], {}), ('acc_label_int', 'acc_pred_int'), ['u0', 'u1']),
    ('top_k_3', (['top_k_accuracy'], {'top_k': 3}), ('cls_label', 'cls_pred'),
     ['u0', 'u1', 'r', 'u2']),
    # (TopKAccuracy on 1-d predictions is left out: its result depends on the order in which
    # NumPy's argpartition leaves the elements, which differs between NumPy 1.23 and 2.)
    ('f1_macro', (['f1'], {}), ('bin_label', 'bin_pred'), ['u0', 'u1', 'r', 'u2', 'u3']),
    ('f1_micro', (['f1'], {'average': 'micro'}), ('bin_label', 'bin_pred'),
     ['u0', 'u1', 'r', 'u2', 'u3']),
    ('mcc_macro', (['mcc'], {}), ('bin_label', 'bin_pred'), ['u0', 'u1', 'r', 'u2', 'u3']),
    ('mcc_micro', (['mcc'], {'average': 'micro'}), ('bin_label', 'bin_pred'),
     ['u0', 'u1', 'r', 'u2', 'u3']),
    ('pcc', (['pcc'], {}), ('pcc_label', 'pcc_pred'), ['u0', 'u1', 'r', 'u2']),
    ('pcc_binary', (['pcc'], {}), ('bin_label', 'bin_pred'), ['u0', 'u1', 'r', 'u2', 'u3']),
    ('perplexity', (['perplexity'], {'ignore_label': None}), ('ppl_label', 'ppl_pred'),
     ['u0', 'u1', 'r', 'u2']),
    ('perplexity_ignore2', (['perplexity'], {'ignore_label': 2}), ('ppl_label', 'ppl_pred'),
     ['u0', 'u1', 'r', 'u2']),
    ('ce', (['ce'], {}), ('cls_label', 'cls_pred'), ['u0', 'u1', 'r', 'u2']),
    ('ce_eps', (['crossentropy'], {'eps': 1e-3}), ('cls_label', 'cls_pred'),
     ['u0', 'u1']),
    ('nll', (['nll_loss'], {}), ('cls_label', 'cls_pred'), ['u0', 'u1', 'r', 'u2']),
    ('mae', (['mae'], {}), ('reg_label', 'reg_pred'), ['u0', 'u1', 'r', 'u2']),
    ('mse', (['mse'], {}), ('reg_label', 'reg_pred'), ['u0', 'u1', 'r', 'u2']),
    ('rmse', (['rmse'], {}), ('reg_label', 'reg_pred'), ['u0', 'u1', 'r', 'u2']),
    ('mae_1d', (['mae'], {}), ('reg1_label', 'reg1_pred'), ['u0', 'u1', 'u2']),
    ('rmse_1d', (['rmse'], {}), ('reg1_label', 'reg1_pred'), ['u0', 'u1', 'u2']),
    ('pearsonr_macro', (['pearsonr'], {}), ('reg_label', 'reg_pred'), ['u0', 'u1', 'r', 'u2']),
    ('pearsonr_micro', (['pearsonr'], {'average': 'micro'}), ('reg_label', 'reg_pred'),
     ['u0', 'u1', 'r', 'u2', 'R', 'u1']),
    ('loss', (['loss'], {}), ('loss', 'loss'), ['u0', 'u1', 'r', 'u2']),
    ('torch', (['torch'], {}), ('loss', 'loss'), ['u0']),
    ('caffe', (['caffe'], {}), ('loss', 'loss'), ['u0']),
    ('composite', ([['acc', 'ce', 'f1']], {}), ('bin_label', 'bin_pred'),
     ['u0', 'u1', 'r', 'u2']),
    ('custom_np', ('np:mean_abs_argmax', {}), ('cls_label', 'cls_pred'), ['u0', 'u1', 'r', 'u2']),
    ('custom_tuple', ('custom:sum_and_count', {}), ('cls_label', 'cls_pred'),
     ['u0', 'u1', 'r', 'u2']),
    ('custom_lambda_name', ('lambda', {}), ('cls_label', 'cls_pred'), ['u0']),
]


def _make(mx, spec):
    args, kwargs = spec
    if args == 'np:mean_abs_argmax':
        return mx.metric.np(mean_abs_argmax)
    if args == 'custom:sum_and_count':
        return mx.metric.CustomMetric(sum_and_count)
    if args == 'lambda':
        return mx.metric.create(lambda label, pred: float(label.sum()))
    return mx.metric.create(*args, **kwargs)


def _state(m):
    return {'get': pair(m.get()), 'get_global': pair(m.get_global()),
            'name_value': [[n, num(v)] for n, v in m.get_name_value()],
            'global_name_value': [[n, num(v)] for n, v in m.get_global_name_value()]}


def _err(fn):
    try:
        fn()
    except Exception as e:      # pylint: disable=broad-except
        return [type(e).__name__, str(e)]
    return None


def run(mx):
    d = _data()
    nd = mx.nd
    out = {}
    for name, spec, (lk, pk), script in CASES:
        m = _make(mx, spec)
        steps = [_state(m)]
        for item in script:
            if item == 'r':
                m.reset_local()
            elif item == 'R':
                m.reset()
            else:
                i = int(item[1:])
                m.update([nd.array(d[lk][i])], [nd.array(d[pk][i])])
            steps.append(_state(m))
        out['case:' + name] = {'name': m.name, 'steps': steps}

    # two (label, pred) pairs in one update
    for name in ('acc', 'f1', 'mcc', 'ce', 'mse', 'pcc', 'pearsonr'):
        m = mx.metric.create(name)
        lk, pk = (('reg_label', 'reg_pred') if name in ('mse', 'pearsonr')
                  else ('bin_label', 'bin_pred'))
        m.update([nd.array(d[lk][0]), nd.array(d[lk][1])],
                 [nd.array(d[pk][0]), nd.array(d[pk][1])])
        out['two_pairs:' + name] = _state(m)

    # update_dict with output_names / label_names, plain and through a composite
    m = mx.metric.Accuracy(output_names=['out1'], label_names=['lab1'])
    m.update_dict({'lab0': nd.array(d['cls_label'][0]), 'lab1': nd.array(d['cls_label'][1])},
                  {'out0': nd.array(d['cls_pred'][0]), 'out1': nd.array(d['cls_pred'][1])})
    out['update_dict:acc'] = _state(m)
    c = mx.metric.CompositeEvalMetric(output_names=['out1'], label_names=['lab1'])
    c.add(mx.metric.Accuracy())
    c.add('ce')
    c.update_dict({'lab0': nd.array(d['cls_label'][0]), 'lab1': nd.array(d['cls_label'][1])},
                  {'out0': nd.array(d['cls_pred'][0]), 'out1': nd.array(d['cls_pred'][1])})
    out['update_dict:composite'] = _state(c)
    out['composite:get_metric1'] = c.get_metric(1).name

    # configs and re-creation
    for spec in (('acc', {}), ('top_k_accuracy', {'top_k': 3}), ('ce', {'eps': 1e-5}),
                 ('perplexity', {'ignore_label': 0}), ('f1', {'average': 'micro'}),
                 ('composite', {}), ('pearsonr', {}), ('mae', {'name': 'my-mae'})):
        m = mx.metric.create(spec[0], **spec[1])
        cfg = m.get_config()
        if 'metrics' in cfg:
            cfg['metrics'] = [dict(x) for x in cfg['metrics']]
        again = mx.metric.create(**m.get_config())
        out['config:%s:%s' % (spec[0], json.dumps(spec[1], sort_keys=True))] = {
            'config': cfg, 'recreated': [type(again).__name__, again.name],
            'str': str(m)}
    comp = mx.metric.create(['acc', 'mse'])
    comp.update([nd.array(d['cls_label'][0])], [nd.array(d['cls_pred'][0])])
    out['config:composite2'] = {'config': comp.get_config(), 'str': str(comp)}
    m = mx.metric.create('["accuracy", {"axis": 1}]')
    out['create:json_list'] = [type(m).__name__, m.name, m.axis]
    m = mx.metric.create('{"metric": "top_k_accuracy", "top_k": 4}')
    out['create:json_dict'] = [type(m).__name__, m.name]
    m = mx.metric.create({'metric': 'mse', 'name': 'x'})
    out['create:dict'] = [type(m).__name__, m.name]
    names = ['acc', 'accuracy', 'ce', 'crossentropy', 'f1', 'mcc', 'pcc', 'mae', 'mse', 'rmse',
             'loss', 'torch', 'caffe', 'perplexity', 'nll_loss', 'negativeloglikelihood',
             'pearsonr', 'pearsoncorrelation', 'top_k_acc', 'top_k_accuracy', 'composite',
             'compositeevalmetric', 'ACC', 'Accuracy']
    res = {}
    for n in names:
        kw = {'top_k': 2} if n.startswith('top') else {}
        kw = {'ignore_label': None} if n == 'perplexity' else kw
        m = mx.metric.create(n, **kw)
        res[n] = [type(m).__name__, m.name]
    out['create:names'] = res
    # nan before any update, for every kind
    out['empty'] = {n: _state(mx.metric.create(n, **({'ignore_label': None}
                                                       if n == 'perplexity' else {})))
                    for n in ('acc', 'f1', 'mcc', 'pcc', 'perplexity', 'ce', 'mse',
                              'pearsonr', 'loss')}
    # errors whose type and message are MXNet's (others differ by design: see tests)
    p, lab = nd.array(d['cls_pred'][0]), nd.array(d['cls_label'][0])
    out['err:acc_two_labels_one_pred'] = _err(
        lambda: mx.metric.Accuracy().update([lab, lab], [p]))
    out['err:acc_flat_mismatch'] = _err(
        lambda: mx.metric.Accuracy().update([nd.array(d['cls_label'][0][:5])], [p]))
    out['err:mse_two_preds'] = _err(lambda: mx.metric.MSE().update([lab], [p, p]))
    out['err:pearson_shape'] = _err(
        lambda: mx.metric.PearsonCorrelation().update([nd.array(d['reg_label'][0])],
                                                       [nd.array(d['reg_pred'][0][:, :2])]))
    out['err:f1_multiclass'] = _err(lambda: mx.metric.F1().update([lab], [p]))
    out['err:check_label_shapes_shape'] = _err(
        lambda: mx.metric.check_label_shapes(lab, p, shape=True))
    out['err:top_k_5_of_4'] = _err(
        lambda: mx.metric.TopKAccuracy(top_k=5).update([lab], [p]))
    out['err:custom_config'] = _err(lambda: mx.metric.np(mean_abs_argmax).get_config())
    return out
