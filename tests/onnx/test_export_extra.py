"""The converters of _convert_extra.py: random sampling (distribution checks: the numbers
differ from symgraph's), and small graphs of the rest against symgraph's forward."""
import numpy as np
import pytest

import symgraph as mx

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

from onnx_special_check import check  # noqa: E402  (tests/onnx/)
from symgraph.onnx.export import export_onnx_model  # noqa: E402

X, Y, Z = mx.sym.var('x'), mx.sym.var('y'), mx.sym.var('z')
R = np.random.RandomState(0)


def _u(*shape, low=-1.0, high=1.0, dtype=np.float32):
    return R.uniform(low, high, shape).astype(dtype)


IMG = _u(5, 6, 3, low=0, high=255)
SQ = _u(2, 4, 4)
CASES = [
    ('cumsum_axis', mx.sym._internal._np_cumsum(X, axis=1), {'x': _u(3, 4)}),
    ('cumsum_flat', mx.sym._internal._np_cumsum(X), {'x': _u(3, 4)}),
    ('index_array', mx.sym.contrib.index_array(X, axes=(1, 0)), {'x': _u(2, 3)}),
    ('ravel', mx.sym.ravel_multi_index(X, shape=(7, 6)),
     {'x': np.array([[3, 6, -1, 7], [4, 5, 2.5, 9.7]], np.float32)}),
    ('unravel', mx.sym.unravel_index(X, shape=(7, 6)),
     {'x': np.array([22, 41, 50, -1, 3.7], np.float32)}),
    ('slice_assign', mx.sym._internal._slice_assign(X, Y, begin=(1, None), end=(3, None),
                                                    step=(1, 2)),
     {'x': _u(4, 5), 'y': _u(2, 3)}),
    ('slice_assign_scalar', mx.sym._internal._slice_assign_scalar(X, begin=(0, 1),
                                                                  end=(None, 3), scalar=7.0),
     {'x': _u(4, 5)}),
    ('khatri_rao', mx.sym.khatri_rao(X, Y, Z), {'x': _u(2, 3), 'y': _u(4, 3), 'z': _u(2, 3)}),
    ('round_ste', mx.sym.contrib.round_ste(X) + mx.sym.contrib.sign_ste(X),
     {'x': np.array([-2.5, -0.5, 0.4, 1.5, 2.5], np.float32)}),
    ('gradientmultiplier', mx.sym.contrib.gradientmultiplier(X, scalar=3.0), {'x': _u(3)}),
    ('softmax_cross_entropy', mx.sym.softmax_cross_entropy(X, Y),
     {'x': _u(3, 5), 'y': np.array([0, 4, 2], np.float32)}),
    ('all_finite', mx.sym.all_finite(X), {'x': np.array([1, np.inf, 2], np.float32)}),
    ('all_finite_yes', mx.sym.all_finite(X), {'x': _u(4)}),
    ('allclose', mx.sym.contrib.allclose(X, Y), {'x': np.array([1, np.nan, 2], np.float32),
                                                 'y': np.array([1, np.nan, 2], np.float32)}),
    ('allclose_no', mx.sym.contrib.allclose(X, Y), {'x': _u(3), 'y': _u(3)}),
    ('to_tensor', mx.sym.image.to_tensor(X), {'x': IMG.astype(np.uint8)}),
    ('normalize', mx.sym.image.normalize(X, mean=(0.1, 0.2, 0.3), std=(0.5, 1.0, 2.0)),
     {'x': _u(3, 4, 5)}),
    ('flip_left_right', mx.sym.image.flip_left_right(X), {'x': IMG}),
    ('flip_top_bottom', mx.sym.image.flip_top_bottom(X), {'x': IMG}),
    ('image_crop', mx.sym.image.crop(X, x=1, y=2, width=3, height=2), {'x': IMG}),
    ('linalg_gemm', mx.sym.linalg.gemm(X, Y, Z, transpose_b=True, alpha=2.0, beta=0.5),
     {'x': _u(2, 3, 4), 'y': _u(2, 5, 4), 'z': _u(2, 3, 5)}),
    ('linalg_gemm_axis', mx.sym.linalg.gemm(X, Y, Z, axis=-3, transpose_a=True),
     {'x': _u(4, 3, 2), 'y': _u(4, 3, 5), 'z': _u(2, 3, 5)}),
    ('extractdiag', mx.sym.linalg.extractdiag(X, offset=1), {'x': SQ}),
    ('extractdiag_low', mx.sym.linalg.extractdiag(X, offset=-2), {'x': SQ}),
    ('makediag', mx.sym.linalg.makediag(X, offset=-1), {'x': _u(2, 3)}),
    ('index_copy', mx.sym.contrib.index_copy(X, Y, Z),
     {'x': _u(5, 3), 'y': np.array([4, 0], np.int64), 'z': _u(2, 3)}),
]


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_extra_converter(case):
    _, sym, inputs = case
    check(sym, inputs)


def _run(sym, shapes, feed, dtypes=np.float32):
    model = export_onnx_model(sym, {}, shapes, dtypes)
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    return model, sess.run(None, feed)


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_random_operators_draw_from_their_distributions(dtype):
    x = np.zeros((1,), np.float32)
    uni = mx.sym.random.uniform(low=-2, high=3, shape=(4000,), dtype=dtype)
    nor = mx.sym.random.normal(loc=1.0, scale=2.0, shape=(4000,), dtype=dtype)
    like = mx.sym.random.uniform_like(mx.sym.zeros_like(X) + X, low=5, high=6)
    model, (u, n, lk) = _run(mx.sym.Group([uni, nor, like]), [(4000,)],
                             {'x': np.zeros(4000, dtype)}, [np.dtype(dtype)])
    assert u.dtype == n.dtype == lk.dtype == np.dtype(dtype)
    assert u.min() >= -2 and u.max() <= 3 and abs(u.mean() - 0.5) < 0.15
    assert abs(n.mean() - 1.0) < 0.2 and abs(n.std() - 2.0) < 0.2
    assert lk.min() >= 5 and lk.max() <= 6
    assert x.shape == (1,)


def test_multinomial_samples_the_given_probabilities():
    probs = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]], np.float32)
    sym = mx.sym.sample_multinomial(X, shape=(500,))
    _, (got,) = _run(sym, [probs.shape], {'x': probs})
    assert got.shape == (2, 500) and got.dtype == np.int32
    assert (got[0] == 1).all() and set(np.unique(got[1])) == {0, 2}


def test_dropout_always_is_refused():
    with pytest.raises(NotImplementedError, match="mode='always'"):
        export_onnx_model(mx.sym.Dropout(X, p=0.3, mode='always'), {}, [(2, 3)])
