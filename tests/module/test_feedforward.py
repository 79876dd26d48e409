"""mx.model.FeedForward (MXNet's older model API, on Module here): arrays in and out,
create/fit/predict/score/save/load, pickling, errors.  The MXNet golden run is in
test_module_golden.py."""
import logging
import os
import pickle

import numpy as np
import pytest

import symgraph as mx


@pytest.fixture
def blobs():
    rng = np.random.RandomState(5)
    centers = rng.uniform(-2, 2, (3, 5))
    y = rng.randint(0, 3, 120)
    x = (centers[y] + rng.normal(0, 0.3, (120, 5))).astype(np.float32)
    return x, y.astype(np.float32)


def make(net, **kwargs):
    with pytest.warns(DeprecationWarning, match='FeedForward has been deprecated. '
                                                'Please use mxnet.mod.Module instead'):
        return mx.model.FeedForward(net, **kwargs)


def test_create_on_arrays_trains_and_predicts(net, blobs, root_log):
    x, y = blobs
    mx.random.seed(1)
    np.random.seed(1)
    with pytest.warns(DeprecationWarning):
        model = mx.model.FeedForward.create(net, x, y, num_epoch=8, numpy_batch_size=20,
                                            learning_rate=0.5, momentum=0.9,
                                            initializer=mx.init.Xavier(),
                                            eval_data=(x[:40], y[:40]))
    assert mx.model.FeedForward is mx.mod.FeedForward
    prob = model.predict(x)
    assert isinstance(prob, np.ndarray) and prob.shape == (120, 3)
    assert (prob.argmax(1) == y).mean() > 0.9
    assert model.score(mx.io.NDArrayIter(x, y, 32)) > 0.9
    info = root_log.messages('INFO')
    assert info[0] == 'Start training with [cpu(0)]'
    assert sum(m.startswith('Epoch[') and 'Validation-accuracy=' in m for m in info) == 8
    assert sum('Resetting Data Iterator' in m for m in info) == 8


def test_predict_with_data_and_padding(net, blobs, params):
    x, y = blobs
    args, _ = params(net, (4, 5))
    model = make(net, arg_params=args, numpy_batch_size=50)
    out, data, label = model.predict(x[:70], return_data=True)     # batches of 50 + 20
    assert out.shape == (70, 3) and data.shape == (70, 5) and label.shape == (70,)
    np.testing.assert_array_equal(data, x[:70])
    exe = net.simple_bind(mx.cpu(), data=(70, 5))
    exe.copy_params_from(args)
    want = exe.forward(data=x[:70])[0].asnumpy()
    np.testing.assert_allclose(out, want, rtol=1e-5)
    np.testing.assert_allclose(model.predict(x[:70], num_batch=1), want[:50], rtol=1e-5)


def test_save_load_and_pickle(net, blobs, params, tmp_path):
    x, y = blobs
    args, _ = params(net, (4, 5))
    model = make(net, arg_params=args, num_epoch=4)
    want = model.predict(x)
    prefix = str(tmp_path / 'ff')
    model.save(prefix)
    assert sorted(os.listdir(str(tmp_path))) == ['ff-0004.params', 'ff-symbol.json']
    with pytest.warns(DeprecationWarning):
        loaded = mx.model.FeedForward.load(prefix, 4, ctx=mx.cpu())
    assert loaded.begin_epoch == 4
    np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-6)
    again = pickle.loads(pickle.dumps(model))
    assert again._pred_exec is None
    np.testing.assert_allclose(again.predict(x), want, rtol=1e-6)


def test_fit_on_two_devices_equals_one(net, blobs, params):
    x, y = blobs
    args, _ = params(net, (4, 5))
    results = []
    for ctx in ([mx.cpu()], [mx.cpu(0), mx.cpu(1)]):
        model = make(net, ctx=ctx, num_epoch=2, arg_params=args, learning_rate=0.1,
                     momentum=0.9)
        model.fit(mx.io.NDArrayIter(x, y, 20), eval_end_callback=None)
        results.append({k: v.asnumpy() for k, v in model.arg_params.items()})
    for k, v in results[0].items():
        np.testing.assert_allclose(results[1][k], v, rtol=1e-5, atol=1e-7)


def test_bad_input(net, blobs):
    x, y = blobs
    model = make(net, num_epoch=1)
    with pytest.raises(ValueError, match='y must be specified'):
        model.fit(x)
    with pytest.raises(TypeError, match='y must be ndarray'):
        model.fit(x, list(y))
    with pytest.raises(ValueError, match='numbers of data points and labels not equal'):
        model.fit(x, y[:10])
    with pytest.raises(ValueError, match='Label must be 1D'):
        model.fit(x, np.ones((120, 2)))
    with pytest.raises(TypeError, match='X must be DataIter'):
        model.fit([1, 2, 3], y)
    with pytest.raises(TypeError, match='Eval data must be DataIter'):
        model.fit(x, y, eval_data=3)
    with pytest.raises(TypeError, match='Symbol or a callable'):
        make(3)
    with pytest.raises(ValueError, match='give the epoch'):
        make(net).save('nowhere')
    model.fit(x, y, eval_end_callback=None)     # usable after all that
    assert model.predict(x).shape == (120, 3)


def test_logger_and_epoch_size(net, blobs):
    x, y = blobs
    seen = []

    class Collect(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())
    logger = logging.getLogger('feedforward-test')
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(Collect())
    model = make(net, num_epoch=2, epoch_size=4)
    model.fit(mx.io.NDArrayIter(x, y, 20), logger=logger, eval_end_callback=None)
    # 6 batches per pass, 4 per epoch: the pass ends inside epoch 1
    assert seen[0] == 'Start training with [cpu(0)]'
    assert [m for m in seen if 'Resetting' in m] == ['Epoch[1] Resetting Data Iterator']
