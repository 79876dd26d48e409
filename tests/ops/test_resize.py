"""contrib.BilinearResize2D against a per-pixel loop of MXNet's formula, plus its shape
rules (every mode); golden values from MXNet 1.9.1 are in tests/golden."""
import math

import numpy as np
import pytest

import symgraph as mx
from _refs import F16
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError


def _source(o, n_in, n_out, align_corners):
    if align_corners:
        return o * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    return max((o + 0.5) * n_in / n_out - 0.5, 0.0)


def _resize_loop(x, oh, ow, align_corners=True):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        sy = _source(i, h, oh, align_corners)
        y0 = min(int(np.floor(sy)), h - 1)
        y1, ly = min(y0 + 1, h - 1), sy - y0
        for j in range(ow):
            sx = _source(j, w, ow, align_corners)
            x0 = min(int(np.floor(sx)), w - 1)
            x1, lx = min(x0 + 1, w - 1), sx - x0
            out[:, :, i, j] = ((1 - ly) * ((1 - lx) * x[:, :, y0, x0] + lx * x[:, :, y0, x1])
                               + ly * ((1 - lx) * x[:, :, y1, x0] + lx * x[:, :, y1, x1]))
    return out.astype(x.dtype)


def _ref(oh=None, ow=None, align_corners=True, size=None):
    def ref(x, *like):
        h, w = size(x.shape[2], x.shape[3]) if size else \
            (like[0].shape[2], like[0].shape[3]) if like else (oh, ow)
        return _resize_loop(x, h, w, align_corners)
    return ref


CASES = [
    OpCase('_contrib_BilinearResize2D', dict(height=5, width=7), [(2, 3, 3, 4)],
           ref=_ref(5, 7)),
    OpCase('_contrib_BilinearResize2D', dict(height=5, width=7, align_corners=False),
           [(2, 3, 3, 4)], ref=_ref(5, 7, False)),
    OpCase('_contrib_BilinearResize2D', dict(height=3, width=2, align_corners=False),
           [(1, 2, 7, 5)], ref=_ref(3, 2, False)),
    OpCase('_contrib_BilinearResize2D', dict(height=1, width=4), [(1, 2, 3, 3)],
           ref=_ref(1, 4)),
    OpCase('_contrib_BilinearResize2D', dict(scale_height=2.0, scale_width=0.5),
           [(1, 2, 3, 5)], ref=_ref(6, 2)),
    OpCase('_contrib_BilinearResize2D', dict(mode='odd_scale', scale_height=2.0,
                                             scale_width=3.0),
           [(1, 1, 3, 4)], ref=_ref(5, 12)),
    OpCase('_contrib_BilinearResize2D', dict(mode='like'), [(2, 2, 3, 4), (2, 1, 6, 5)],
           ref=_ref(), grad=(0,)),
    OpCase('_contrib_BilinearResize2D', dict(mode='like', align_corners=False),
           [(1, 2, 6, 5), (1, 1, 4, 3)], ref=_ref(align_corners=False), grad=(0,)),
] + [
    OpCase('_contrib_BilinearResize2D', dict(mode=mode), [(1, 2, 3, 4)], ref=_ref(*hw))
    for mode, hw in (('to_even_down', (2, 4)), ('to_even_up', (4, 4)),
                     ('to_odd_down', (3, 3)), ('to_odd_up', (3, 5)))
]


def _adaptive_ref(oh, ow):
    def ref(x):
        n, c, h, w = x.shape
        out = np.zeros((n, c, oh, ow), x.dtype)
        for i in range(oh):
            h0, h1 = (i * h) // oh, math.ceil((i + 1) * h / oh)
            for j in range(ow):
                w0, w1 = (j * w) // ow, math.ceil((j + 1) * w / ow)
                out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
        return out
    return ref


ADAPTIVE_CASES = [
    OpCase('_contrib_AdaptiveAvgPooling2D', dict(output_size=(3, 2)), [(2, 2, 5, 7)],
           ref=_adaptive_ref(3, 2), dtypes=F16),
    OpCase('_contrib_AdaptiveAvgPooling2D', {}, [(1, 3, 4, 3)], ref=_adaptive_ref(1, 1)),
    OpCase('_contrib_AdaptiveAvgPooling2D', dict(output_size=3), [(1, 2, 4, 5)],
           ref=_adaptive_ref(3, 3)),
    OpCase('_contrib_AdaptiveAvgPooling2D', dict(output_size=(5, 4)), [(1, 1, 3, 2)],
           ref=_adaptive_ref(5, 4)),
]


test_forward, test_gradient = case_tests(CASES + ADAPTIVE_CASES)


@pytest.mark.parametrize('mode, hw35, hw44', [
    ('odd_scale', (5, 13), (8, 12)), ('to_even_down', (2, 4), (4, 4)),
    ('to_even_up', (4, 6), (4, 4)), ('to_odd_down', (3, 5), (3, 3)),
    ('to_odd_up', (3, 5), (5, 5))])
def test_mode_shapes_as_in_mxnet(mode, hw35, hw44):
    sym = mx.sym.contrib.BilinearResize2D(mx.sym.var('data'), mode=mode, scale_height=2.0,
                                          scale_width=3.0)
    assert sym.infer_shape(data=(1, 2, 3, 5))[1] == [(1, 2) + hw35]
    assert sym.infer_shape(data=(1, 2, 4, 4))[1] == [(1, 2) + hw44]


def test_like_mode_takes_a_second_input_and_gives_it_no_gradient():
    data, like = mx.sym.var('data'), mx.sym.var('like')
    sym = mx.sym.contrib.BilinearResize2D(data, like, mode='like')
    assert sym.list_arguments() == ['data', 'like']
    assert sym.infer_shape(data=(1, 2, 3, 4), like=(1, 1, 6, 8))[1] == [(1, 2, 6, 8)]
    exe = sym.simple_bind(mx.cpu(), data=(1, 2, 3, 4), like=(1, 1, 6, 8))
    exe.forward(is_train=True, data=np.ones((1, 2, 3, 4)), like=np.full((1, 1, 6, 8), 5.0))
    exe.backward([mx.nd.ones((1, 2, 6, 8))])
    assert not exe.grad_dict['like'].asnumpy().any()
    # each output pixel's weights sum to one, so the data gradient sums to the output count
    assert exe.grad_dict['data'].asnumpy().sum() == pytest.approx(2 * 6 * 8)


def test_bad_shapes_name_the_operator():
    sym = mx.sym.contrib.BilinearResize2D(mx.sym.var('data'), height=4, width=4, name='rs')
    with pytest.raises(ShapeError, match="'rs'.*4-D"):
        sym.infer_shape(data=(2, 3, 4))
    sym = mx.sym.contrib.BilinearResize2D(mx.sym.var('data'), scale_height=0.1,
                                          scale_width=1.0, name='rs')
    with pytest.raises(ShapeError, match='not positive'):
        sym.infer_shape(data=(1, 1, 3, 3))
    sym = mx.sym.contrib.BilinearResize2D(mx.sym.var('data'), scale_height=2.0, name='rs')
    with pytest.raises(ShapeError, match='together'):     # MXNet 1.9.1 fails as well
        sym.infer_shape(data=(1, 1, 3, 3))


def test_adaptive_avg_pooling_shapes():
    x = mx.sym.var('x')
    pool = mx.sym.contrib.AdaptiveAvgPooling2D
    for size, hw in [((), (1, 1)), (3, (3, 3)), ((3,), (3, 3)), ((3, 2), (3, 2)),
                     ((8, 9), (8, 9)), ((1, 2, 3), (1, 1))]:          # as MXNet 1.9.1
        assert pool(x, output_size=size).infer_shape(x=(2, 3, 5, 7))[1] == [(2, 3) + hw]
    with pytest.raises(ShapeError, match='4-D'):
        pool(x, output_size=2).infer_shape(x=(2, 5, 7))
    with pytest.raises(TypeInferenceError, match='floating point'):
        pool(x).infer_type(x='int32')
    out = mx.nd.contrib.AdaptiveAvgPooling2D(mx.nd.array(np.arange(35.0).reshape(1, 1, 5, 7)),
                                             output_size=(3, 2))
    np.testing.assert_array_equal(out.asnumpy()[0, 0], [[5, 8], [15.5, 18.5], [26, 29]])
