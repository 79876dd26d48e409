"""mx.util's NumPy-semantics switches, mx.engine's bulk sizes and mx.runtime's Features, as
MXNet 1.9.1's unit tests use them (test_engine.py, test_runtime.py, the np_shape scopes of
test_infer_shape.py and the use_np decorators of test_symbol.py / test_gluon.py)."""
import threading

import pytest

import symgraph as mx
from symgraph import util


@pytest.fixture(autouse=True)
def _fresh_flags():
    util.reset_np()
    yield
    util.reset_np()


def test_np_shape_scope_sets_and_restores_the_flag():
    assert mx.is_np_shape() is False
    with mx.np_shape():
        assert mx.is_np_shape() is True
        with mx.np_shape(False):
            assert mx.is_np_shape() is False
        assert mx.is_np_shape() is True
    assert mx.is_np_shape() is False


def test_np_shape_scope_restores_after_an_exception():
    with pytest.raises(KeyError):
        with mx.np_shape(True):
            raise KeyError('x')
    assert not mx.is_np_shape()


def test_set_np_shape_returns_the_previous_state():
    assert mx.set_np_shape(True) is False
    assert mx.set_np_shape(False) is True


def test_use_np_decorates_functions_and_classes():
    @mx.use_np
    def f():
        return mx.is_np_shape(), mx.is_np_array()

    @util.use_np
    class C:
        def method(self):
            return mx.is_np_shape(), mx.is_np_array()

        @property
        def prop(self):
            return mx.is_np_shape()

    assert f() == (True, True)
    assert C().method() == (True, True)
    assert C().prop is True
    assert (mx.is_np_shape(), mx.is_np_array()) == (False, False)
    assert util.use_np_shape(lambda: mx.is_np_array())() is False
    with pytest.raises(TypeError):
        util.use_np(3)


def test_np_array_needs_np_shape():
    with pytest.raises(ValueError):
        util.set_np(shape=False, array=True)
    util.set_np()
    assert mx.is_np_shape() and mx.is_np_array()
    with pytest.raises(ValueError):          # shape off while array is on
        mx.set_np_shape(False)
    util.reset_np()
    assert not mx.is_np_shape() and not mx.is_np_array()


def test_flags_are_per_thread_with_set_np_as_the_default():
    seen = []
    with mx.np_shape(True):
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
    util.set_np()
    t = threading.Thread(target=lambda: seen.append(mx.is_np_array()))
    t.start()
    t.join()
    assert seen == [False, True]


def test_getenv_setenv(monkeypatch):
    monkeypatch.delenv('SYMGRAPH_UTIL_TEST', raising=False)
    assert util.getenv('SYMGRAPH_UTIL_TEST') is None
    util.setenv('SYMGRAPH_UTIL_TEST', 3)
    assert util.getenv('SYMGRAPH_UTIL_TEST') == '3'
    util.setenv('SYMGRAPH_UTIL_TEST', None)
    assert util.getenv('SYMGRAPH_UTIL_TEST') is None


def test_engine_bulk_scope_and_set_bulk_size():
    prev = mx.engine.set_bulk_size(7)
    try:
        with mx.engine.bulk(10):
            assert mx.engine.set_bulk_size(10) == 10
            x = mx.nd.ones((10,))
            x *= 2
            x += 1
            for _ in range(100):
                x += 1
        assert mx.engine.set_bulk_size(7) == 7
        assert (x.asnumpy() == 103).all()
    finally:
        mx.engine.set_bulk_size(prev)
    with pytest.raises(ValueError):
        mx.engine.set_bulk_size(-1)
    with pytest.raises(TypeError):
        mx.engine.set_bulk_size('3')


def test_runtime_features_as_mxnet():
    features = mx.runtime.Features()
    assert features is mx.runtime.Features()
    assert list(features)[:5] == ['CUDA', 'CUDNN', 'NCCL', 'CUDA_RTC', 'TENSORRT']
    assert len(features) == 32
    for name in features:
        assert features.is_enabled(name) == features[name].enabled
        assert features.is_enabled(name.lower()) == features[name].enabled
    assert features.is_enabled('LAPACK') and not features.is_enabled('TVM_OP')
    assert repr(features['LAPACK']) == '\u2714 LAPACK'
    assert repr(features['TVM_OP']) == '\u2716 TVM_OP'
    with pytest.raises(RuntimeError, match='unknown'):
        features.is_enabled('this girl is on fire')


def test_mxnet_scope_objects_and_global_np_shape():
    """MXNet's test_thread_local.py builds util._NumpyArrayScope objects and turns
    NumPy-shape semantics on for every thread with set_np_shape(2)."""
    scope = util._NumpyArrayScope(True)
    assert scope._is_np_array is True
    with scope:
        assert mx.is_np_array()
    assert not mx.is_np_array()
    seen = []
    try:
        mx.set_np_shape(2)
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
    finally:
        mx.set_np_shape(0)
    t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
    t.start()
    t.join()
    assert seen == [True, False]
