"""mx.metric's surface beyond the golden values: bad input named clearly (and the metric
still usable), NumPy inputs, the registry, configs."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import metric

PRED = mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])
LABEL = mx.nd.array([0, 1, 1])


def test_label_pred_mismatch_names_the_shapes_and_leaves_the_metric_usable():
    acc = mx.metric.Accuracy()
    with pytest.raises(ValueError, match=r'Shape of labels 2 does not match shape of '
                                         r'predictions 3'):
        acc.update([mx.nd.array([0, 1])], [PRED])
    with pytest.raises(ValueError, match=r'labels 2 does not match .* predictions 1'):
        acc.update([LABEL, LABEL], [PRED])
    acc.update([LABEL], [PRED])
    assert acc.get() == ('accuracy', 2 / 3)
    with pytest.raises(ValueError, match=r'labels \(3,\) does not match .* predictions '
                                         r'\(3, 2\)'):
        metric.check_label_shapes(LABEL, PRED, shape=True)


@pytest.mark.parametrize('make, label, pred, match', [
    (lambda: mx.metric.MSE(), [LABEL], [PRED, PRED], 'labels 1 does not match'),
    (lambda: mx.metric.CrossEntropy(), [mx.nd.array([0, 1])], [PRED],
     r'2 labels for 3 predictions \(shapes \(2,\) and \(3, 2\)\)'),
    (lambda: mx.metric.Perplexity(None), [mx.nd.array([0, 1])], [PRED],
     r'shape mismatch: \(2,\) vs. \(3, 2\)'),
    (lambda: mx.metric.Perplexity(None), [LABEL, LABEL], [PRED], 'labels 2 does not match'),
    (lambda: mx.metric.PearsonCorrelation(), [LABEL], [PRED], r'\(3,\) .* \(3, 2\)'),
    (lambda: mx.metric.F1(), [mx.nd.array([0, 1, 2])], [PRED],
     'only supports binary classification'),
    (lambda: mx.metric.TopKAccuracy(top_k=2), [LABEL], [mx.nd.ones((3, 2, 2))],
     r'no more than 2 dims, got shape \(3, 2, 2\)'),
])
def test_bad_updates_are_value_errors(make, label, pred, match):
    m = make()
    with pytest.raises(ValueError, match=match):
        m.update(label, pred)


def test_unknown_metric_lists_the_valid_names():
    with pytest.raises(ValueError, match=r"metric 'acuracy' is not registered; valid names: "
                                         r"acc, accuracy, .*rmse"):
        mx.metric.create('acuracy')


@pytest.mark.parametrize('call, exc, match', [
    (lambda: mx.metric.create(mx.metric.Accuracy(), axis=0), ValueError, 'already an instance'),
    (lambda: mx.metric.create(3), TypeError, 'metric must be a name'),
    (lambda: mx.metric.F1(average='weighted'), ValueError, "'macro' or 'micro'"),
    (lambda: mx.metric.MCC(average='x'), ValueError, "'macro' or 'micro'"),
    (lambda: mx.metric.PearsonCorrelation(average='x'), ValueError, "'macro' or 'micro'"),
    (lambda: mx.metric.TopKAccuracy(top_k=1), ValueError, 'Please use Accuracy'),
    (lambda: mx.metric.CustomMetric(3), TypeError, 'feval must be callable'),
    (lambda: mx.metric.register(int), TypeError, 'subclass of EvalMetric'),
    (lambda: mx.metric.CompositeEvalMetric(['acc']).get_metric(3), ValueError,
     'Metric index 3 is out of range 0 and 1'),
])
def test_bad_arguments_are_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_update_dict_names_a_missing_output():
    acc = mx.metric.Accuracy(output_names=['out'], label_names=['lab'])
    with pytest.raises(KeyError, match=r"output name 'out' is not among the given outputs "
                                       r"\['softmax_output'\]"):
        acc.update_dict({'lab': LABEL}, {'softmax_output': PRED})
    acc.update_dict({'lab': LABEL}, {'out': PRED})
    assert acc.num_inst == 3


def _all_metrics():
    return [mx.metric.Accuracy(), mx.metric.TopKAccuracy(top_k=2), mx.metric.F1(),
            mx.metric.MCC(average='micro'), mx.metric.PCC(), mx.metric.Perplexity(None),
            mx.metric.CrossEntropy(), mx.metric.NegativeLogLikelihood(), mx.metric.MAE(),
            mx.metric.MSE(), mx.metric.RMSE(), mx.metric.Loss(),
            mx.metric.create(['acc', 'ce'])]


@pytest.mark.parametrize('index', range(13))
def test_numpy_inputs_give_the_ndarray_results(index):
    rs = np.random.RandomState(index)
    p = rs.rand(6, 2).astype('float32')
    p /= p.sum(axis=1, keepdims=True)
    lab = rs.randint(0, 2, size=6).astype('float32')
    a, b = _all_metrics()[index], _all_metrics()[index]
    a.update([mx.nd.array(lab)], [mx.nd.array(p)])
    b.update([lab], [p])
    assert a.get() == b.get()


def test_pearson_macro_and_micro_against_numpy():
    rs = np.random.RandomState(1)
    labels = [rs.randn(5, 2).astype('float32') for _ in range(3)]
    preds = [(x + rs.randn(5, 2)).astype('float32') for x in labels]
    macro, micro = mx.metric.PearsonCorrelation(), mx.metric.PearsonCorrelation(average='micro')
    for lab, p in zip(labels, preds):
        macro.update([mx.nd.array(lab)], [mx.nd.array(p)])
        micro.update([mx.nd.array(lab)], [mx.nd.array(p)])
    per_batch = [np.corrcoef(p.ravel(), lab.ravel())[0, 1] for lab, p in zip(labels, preds)]
    assert macro.get()[1] == pytest.approx(np.mean(per_batch))
    whole = np.corrcoef(np.concatenate([p.ravel() for p in preds]),
                        np.concatenate([x.ravel() for x in labels]))[0, 1]
    assert micro.get()[1] == pytest.approx(whole, rel=1e-9)


def test_register_and_alias_make_a_metric_creatable_by_name():
    @mx.metric.register
    @mx.metric.alias('always_one_test_alias')
    class AlwaysOneTest(mx.metric.EvalMetric):
        def __init__(self, name='one'):
            super().__init__(name)

        def update(self, labels, preds):
            self.sum_metric += len(labels)
            self.num_inst += len(labels)

    for name in ('alwaysonetest', 'ALWAYS_ONE_TEST_ALIAS'):
        m = mx.metric.create(name)
        assert isinstance(m, AlwaysOneTest)
    m.update([LABEL], [PRED])
    assert m.get() == ('one', 1.0) and m.get_global() == ('one', 1.0)
    with pytest.warns(UserWarning, match='alwaysonetest is.*overriding existing metric'):
        mx.metric.register(AlwaysOneTest)


def test_configs_recreate_equal_metrics():
    for m in (mx.metric.Perplexity(ignore_label=0, axis=1), mx.metric.CrossEntropy(eps=1e-4),
              mx.metric.create(['acc', 'f1'])):
        again = mx.metric.create(**m.get_config())
        assert type(again) is type(m) and again.get_config() == m.get_config()
    # as in MXNet, TopKAccuracy appends '_<k>' to the name it is given again
    again = mx.metric.create(**mx.metric.TopKAccuracy(top_k=3, name='t').get_config())
    assert again.name == 't_3_3'


def test_np_decorator_and_custom_metric_names():
    def my_mae(label, pred):
        return np.abs(label - pred.argmax(axis=1)).mean()
    m = mx.metric.np(my_mae)
    assert m.name == 'my_mae'
    m.update([LABEL], [PRED])
    assert m.get() == ('my_mae', pytest.approx(1 / 3))
    assert mx.metric.create(lambda a, b: 0.0).name == 'custom(<lambda>)'
    # allow_extra_outputs: more predictions than labels is fine
    m = mx.metric.np(my_mae, allow_extra_outputs=True)
    m.update([LABEL], [PRED, mx.nd.zeros((3, 5))])
    assert m.num_inst == 1


def test_reset_local_keeps_global_statistics():
    acc = mx.metric.Accuracy()
    acc.update([LABEL], [PRED])
    acc.reset_local()
    assert acc.get()[1] != acc.get()[1]                       # nan
    assert acc.get_global() == ('accuracy', 2 / 3)
    acc.reset()
    assert acc.get_global()[1] != acc.get_global()[1]
    assert str(mx.metric.MAE()) == "EvalMetric: {'mae': nan}"
