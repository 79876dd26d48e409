"""GridGenerator, BilinearSampler and SpatialTransformer against per-pixel loops of MXNet's
formulas, plus shape rules and errors; golden values from MXNet 1.9.1 are in tests/golden
(graphs_compute_spatial.py)."""
import json

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError


def _affine_loop(theta, h, w):
    out = np.zeros((theta.shape[0], 2, h, w))
    for n in range(theta.shape[0]):
        m = theta[n].astype(np.float64).reshape(2, 3)
        for i in range(h):
            for j in range(w):
                x, y = -1 + 2.0 * j / (w - 1), -1 + 2.0 * i / (h - 1)
                out[n, :, i, j] = m @ np.array([x, y, 1.0])
    return out.astype(theta.dtype)


def _warp_loop(flow):
    n, _, h, w = flow.shape
    out = np.zeros(flow.shape)
    for i in range(h):
        for j in range(w):
            out[:, 0, i, j] = (flow[:, 0, i, j] + j) / ((w - 1) / 2.0) - 1
            out[:, 1, i, j] = (flow[:, 1, i, j] + i) / ((h - 1) / 2.0) - 1
    return out.astype(flow.dtype)


def _pixel(img, y, x):
    h, w = img.shape[-2:]
    return img[..., y, x] if 0 <= y < h and 0 <= x < w else np.zeros(img.shape[:-2])


def _sampler_loop(data, grid):
    n, c, h, w = data.shape
    oh, ow = grid.shape[2:]
    d = data.astype(np.float64)
    out = np.zeros((n, c, oh, ow))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                xs = (float(grid[b, 0, i, j]) + 1) * (w - 1) / 2
                ys = (float(grid[b, 1, i, j]) + 1) * (h - 1) / 2
                x0, y0 = int(np.floor(xs)), int(np.floor(ys))
                ax, ay = xs - x0, ys - y0
                out[b, :, i, j] = ((1 - ay) * (1 - ax) * _pixel(d[b], y0, x0)
                                   + (1 - ay) * ax * _pixel(d[b], y0, x0 + 1)
                                   + ay * (1 - ax) * _pixel(d[b], y0 + 1, x0)
                                   + ay * ax * _pixel(d[b], y0 + 1, x0 + 1))
    return out.astype(data.dtype)


def _grid_inputs(lo, hi):
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), rng.uniform(lo, hi, shapes[1])]
    return make


def _loc_inputs(scale, noise=0.4):
    def make(rng, shapes, dtype):
        base = np.array([scale, 0, 0, 0, scale, 0])
        return [rng.uniform(-1, 1, shapes[0]), base + rng.uniform(-noise, noise, shapes[1])]
    return make


def _theta(rng, shapes, dtype):
    return [np.array([1.1, 0.2, -0.1, -0.3, 0.9, 0.2]) + rng.uniform(-0.3, 0.3, shapes[0])]


def _corr_loop(k=1, md=1, s1=1, s2=1, pad=0, mul=True):
    """FlowNet correlation written out per output element (MXNet's CPU loop)."""
    def ref(a, b):
        n, c, h, w = a.shape
        pa = np.pad(a.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        pb = np.pad(b.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        border = md + (k - 1) // 2
        th = int(np.ceil((h + 2 * pad - 2 * border) / s1))
        tw = int(np.ceil((w + 2 * pad - 2 * border) / s1))
        r = md // s2
        d = 2 * r + 1
        out = np.zeros((n, d * d, th, tw))
        for i in range(th):
            for j in range(tw):
                y1, x1 = i * s1 + md, j * s1 + md
                for t in range(d * d):
                    y2, x2 = y1 + (t // d - r) * s2, x1 + (t % d - r) * s2
                    pa_ = pa[:, :, y1:y1 + k, x1:x1 + k]
                    pb_ = pb[:, :, y2:y2 + k, x2:x2 + k]
                    v = pa_ * pb_ if mul else np.abs(pa_ - pb_)
                    out[:, t, i, j] = v.sum(axis=(1, 2, 3)) / (k * k * c)
        return out.astype(a.dtype)
    return ref


def _st_ref(h, w):
    return lambda data, loc: _sampler_loop(data, _affine_loop(loc, h, w))


CASES = [
    OpCase('GridGenerator', dict(transform_type='affine', target_shape=(3, 4)), [(2, 6)],
           ref=lambda t: _affine_loop(t, 3, 4), inputs=_theta),
    OpCase('GridGenerator', dict(transform_type='affine', target_shape='(5, 2)'), [(1, 6)],
           ref=lambda t: _affine_loop(t, 5, 2)),
    OpCase('GridGenerator', dict(transform_type='warp'), [(2, 2, 3, 5)], ref=_warp_loop),
    OpCase('GridGenerator', dict(transform_type='warp', target_shape=(7, 7)), [(1, 2, 4, 2)],
           ref=_warp_loop, id='GridGenerator[warp ignores target_shape]'),
    OpCase('BilinearSampler', {}, [(2, 3, 4, 5), (2, 2, 3, 6)], ref=_sampler_loop,
           inputs=_grid_inputs(-1.3, 1.3), dtypes=('float16', 'float32', 'float64')),
    OpCase('BilinearSampler', dict(cudnn_off=True), [(1, 2, 3, 3), (1, 2, 5, 4)],
           ref=_sampler_loop, inputs=_grid_inputs(-1.2, 1.2)),
    OpCase('BilinearSampler', {}, [(2, 1, 5, 4), (2, 2, 4, 4)], ref=_sampler_loop,
           inputs=_grid_inputs(-3.0, 3.0), id='BilinearSampler[far outside]'),
    OpCase('BilinearSampler', {}, [(1, 2, 1, 4), (1, 2, 3, 3)], ref=_sampler_loop,
           inputs=_grid_inputs(-1.2, 1.2), id='BilinearSampler[one row]'),
    OpCase('SpatialTransformer', dict(target_shape=(4, 5), transform_type='affine',
                                      sampler_type='bilinear'),
           [(2, 3, 5, 6), (2, 6)], ref=_st_ref(4, 5), inputs=_loc_inputs(1.1)),
    OpCase('SpatialTransformer', dict(target_shape=(6, 3), transform_type='affine',
                                      sampler_type='bilinear', cudnn_off=False),
           [(1, 2, 4, 4), (1, 6)], ref=_st_ref(6, 3), inputs=_loc_inputs(1.6, 0.3)),
]
_CORR = [
    ({}, (2, 3, 5, 6)),
    (dict(kernel_size=3, max_displacement=2, pad_size=2), (1, 2, 6, 7)),
    (dict(kernel_size=1, max_displacement=3, stride1=2, stride2=2, pad_size=3), (2, 2, 7, 9)),
    (dict(max_displacement=4, stride2=3, pad_size=4), (1, 2, 5, 5)),
    (dict(kernel_size=3, max_displacement=1, stride1=3, pad_size=1), (1, 2, 8, 7)),
    (dict(is_multiply=False), (2, 2, 4, 5)),
    (dict(kernel_size=3, max_displacement=2, stride2=2, pad_size=3, is_multiply=False),
     (1, 3, 5, 6)),
]
CASES += [
    OpCase('Correlation', kw, [shape, shape],
           ref=_corr_loop(kw.get('kernel_size', 1), kw.get('max_displacement', 1),
                          kw.get('stride1', 1), kw.get('stride2', 1), kw.get('pad_size', 0),
                          kw.get('is_multiply', True)))
    for kw, shape in _CORR]


test_forward, test_gradient = case_tests(CASES)


def test_mxnet_doc_examples():
    data = mx.nd.array([[[[1, 4, 3, 6], [1, 8, 8, 9], [0, 4, 1, 5], [1, 0, 1, 3]]]])
    zoom = mx.nd.array([[2, 0, 0, 0, 2, 0]])
    grid = mx.nd.GridGenerator(data=zoom, transform_type='affine', target_shape=(4, 4))
    expected = [[0, 0, 0, 0], [0, 3.5, 6.5, 0], [0, 1.25, 2.5, 0], [0, 0, 0, 0]]
    np.testing.assert_allclose(mx.nd.BilinearSampler(data, grid).asnumpy()[0, 0], expected,
                               rtol=1e-5)
    out = mx.nd.SpatialTransformer(data, zoom, target_shape=(4, 4), transform_type='affine',
                                   sampler_type='bilinear')
    np.testing.assert_allclose(out.asnumpy()[0, 0], expected, rtol=1e-5)
    flow = np.zeros((1, 2, 4, 4), dtype=np.float32)
    flow[:, 0] = 1                                       # shift left by one pixel
    grid = mx.nd.GridGenerator(mx.nd.array(flow), transform_type='warp')
    shifted = [[4, 3, 6, 0], [8, 8, 9, 0], [4, 1, 5, 0], [0, 1, 3, 0]]
    np.testing.assert_allclose(mx.nd.BilinearSampler(data, grid).asnumpy()[0, 0], shifted,
                               rtol=1e-5, atol=1e-6)


def test_grid_channels_are_x_then_y_and_corners_are_pixel_centres():
    grid = mx.nd.GridGenerator(mx.nd.array([[1, 0, 0, 0, 1, 0]]), transform_type='affine',
                               target_shape=(2, 3)).asnumpy()
    np.testing.assert_array_equal(grid[0, 0], [[-1, 0, 1], [-1, 0, 1]])
    np.testing.assert_array_equal(grid[0, 1], [[-1, -1, -1], [1, 1, 1]])
    data = mx.nd.array(np.arange(12.0).reshape(1, 1, 3, 4))
    g = mx.nd.array([[[[-1, 1, 0, -1.2, 1.2]], [[-1, 1, 0, 0.5, -1]]]])
    # values from MXNet 1.9.1
    np.testing.assert_allclose(mx.nd.BilinearSampler(data, g).asnumpy().ravel(),
                               [0, 11, 5.5, 4.2, 2.0999994], rtol=1e-6)


def test_size_one_target_gives_nan_as_in_mxnet():
    out = mx.nd.GridGenerator(mx.nd.array([[1, 0, 0, 0, 1, 0]]), transform_type='affine',
                              target_shape=(1, 3)).asnumpy()
    assert np.isnan(out).all()
    out = mx.nd.GridGenerator(mx.nd.zeros((1, 2, 1, 3)), transform_type='warp').asnumpy()
    np.testing.assert_array_equal(out[0, 0, 0], [-1, 0, 1])
    assert np.isnan(out[0, 1]).all()


def test_hidden_outputs_and_json():
    d, g = mx.sym.var('d'), mx.sym.var('g')
    cases = [(mx.sym.GridGenerator(d, transform_type='affine', target_shape=(3, 4)), 2),
             (mx.sym.BilinearSampler(d, g), 2),
             (mx.sym.SpatialTransformer(d, g, target_shape=(3, 4), transform_type='affine',
                                        sampler_type='bilinear'), 3)]
    for sym, n_out in cases:
        assert len(sym.list_outputs()) == 1
        graph = json.loads(sym.tojson())
        assert graph['node_row_ptr'][-1] - graph['node_row_ptr'][-2] == n_out
    assert cases[0][0].infer_shape(d=(2, 6))[1] == [(2, 2, 3, 4)]
    assert cases[1][0].infer_shape(d=(2, 3, 5, 6), g=(2, 2, 4, 7))[1] == [(2, 3, 4, 7)]
    assert cases[2][0].infer_shape(d=(2, 3, 5, 6), g=(2, 6))[1] == [(2, 3, 3, 4)]
    warp = mx.sym.GridGenerator(d, transform_type='warp')
    assert warp.infer_shape(d=(2, 2, 5, 6))[1] == [(2, 2, 5, 6)]
    assert mx.sym.BilinearSampler(d, g).infer_type(d='float64')[1] == [np.float64]


def test_required_parameters():
    d, g = mx.sym.var('d'), mx.sym.var('g')
    with pytest.raises(MXNetError, match='transform_type'):
        mx.sym.GridGenerator(d, target_shape=(2, 3))
    with pytest.raises(MXNetError, match='sampler_type'):
        mx.sym.SpatialTransformer(d, g, target_shape=(2, 3), transform_type='affine')
    with pytest.raises(MXNetError, match='transform_type'):
        mx.sym.SpatialTransformer(d, g, target_shape=(2, 3), transform_type='warp',
                                  sampler_type='bilinear')


@pytest.mark.parametrize('build, shapes, match', [
    (lambda d, g: mx.sym.GridGenerator(d, transform_type='affine', target_shape=(2, 2)),
     dict(d=(1, 5)), r'\(batch, 6\)'),
    (lambda d, g: mx.sym.GridGenerator(d, transform_type='affine', target_shape=(2, 2)),
     dict(d=(1, 2, 6)), r'\(batch, 6\)'),
    (lambda d, g: mx.sym.GridGenerator(d, transform_type='affine'),
     dict(d=(1, 6)), 'positive target_shape'),
    (lambda d, g: mx.sym.GridGenerator(d, transform_type='warp'),
     dict(d=(1, 3, 5, 5)), 'optical flow'),
    (lambda d, g: mx.sym.BilinearSampler(d, g), dict(d=(1, 2, 3), g=(1, 2, 3, 3)), '4-D'),
    (lambda d, g: mx.sym.BilinearSampler(d, g), dict(d=(1, 2, 3, 4), g=(1, 2, 3)), '4-D'),
    (lambda d, g: mx.sym.BilinearSampler(d, g), dict(d=(1, 2, 3, 4), g=(2, 2, 3, 3)),
     'batch'),
    (lambda d, g: mx.sym.BilinearSampler(d, g), dict(d=(1, 2, 3, 4), g=(1, 3, 3, 3)),
     'batch, 2'),
    (lambda d, g: mx.sym.SpatialTransformer(d, g, target_shape=(2, 3),
                                            transform_type='affine', sampler_type='bilinear'),
     dict(d=(1, 2, 3, 4), g=(1, 5)), r'\(batch, 6\)'),
    (lambda d, g: mx.sym.SpatialTransformer(d, g, transform_type='affine',
                                            sampler_type='bilinear'),
     dict(d=(1, 2, 3, 4), g=(1, 6)), 'target_shape'),
    (lambda d, g: mx.sym.SpatialTransformer(d, g, target_shape=(2, 3),
                                            transform_type='affine', sampler_type='bilinear'),
     dict(d=(1, 2, 3, 4), g=(2, 6)), 'batch'),
])
def test_shape_errors_name_the_operator(build, shapes, match):
    sym = build(mx.sym.var('d'), mx.sym.var('g'))
    with pytest.raises(ShapeError, match=match):
        sym.infer_shape(**shapes)


def test_partial_shapes():
    d, g = mx.sym.var('d'), mx.sym.var('g')
    args, outs, _ = mx.sym.BilinearSampler(d, g).infer_shape_partial(d=(1, 2, 3, 4))
    assert args[0] == (1, 2, 3, 4)
    st = mx.sym.SpatialTransformer(d, g, target_shape=(2, 3), transform_type='affine',
                                   sampler_type='bilinear')
    args, outs, _ = st.infer_shape_partial(g=(1, 6))
    assert args[1] == (1, 6)


def test_data_gradient_only_and_grid_gradient_only():
    rng = np.random.RandomState(0)
    data, grid = rng.uniform(-1, 1, (1, 2, 3, 4)), rng.uniform(-1.2, 1.2, (1, 2, 2, 3))
    full = None
    for req in ({'d': 'write', 'g': 'write'}, {'d': 'write', 'g': 'null'},
                {'d': 'null', 'g': 'write'}):
        sym = mx.sym.BilinearSampler(mx.sym.var('d'), mx.sym.var('g'))
        exe = sym.simple_bind(mx.cpu(), d=data.shape, g=grid.shape, grad_req=req,
                              type_dict={'d': 'float64', 'g': 'float64'})
        exe.forward(is_train=True, d=data, g=grid)
        exe.backward([mx.nd.ones((1, 2, 2, 3), dtype='float64')])
        got = {k: exe.grad_dict[k].asnumpy() for k in req if req[k] == 'write'}
        if full is None:
            full = got
        for k, v in got.items():
            np.testing.assert_allclose(v, full[k])


def test_correlation_shapes_and_errors():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    sym = mx.sym.Correlation(a, b, kernel_size=1, max_displacement=3, stride1=2, stride2=2,
                             pad_size=3)
    assert sym.infer_shape(a=(2, 3, 7, 9), b=(2, 3, 7, 9))[1] == [(2, 9, 4, 5)]
    graph = json.loads(sym.tojson())
    assert graph['node_row_ptr'][-1] - graph['node_row_ptr'][-2] == 3     # two hidden
    assert mx.sym.Correlation(a, b).infer_shape_partial(a=(1, 2, 5, 6))[0] == \
        [(1, 2, 5, 6), (1, 2, 5, 6)]
    with pytest.raises(ShapeError, match='do not fit'):      # as MXNet 1.9.1
        mx.sym.Correlation(a, b, kernel_size=3, max_displacement=2).infer_shape(
            a=(1, 2, 5, 6), b=(1, 2, 5, 6))
    with pytest.raises(ShapeError, match='odd'):
        mx.sym.Correlation(a, b, kernel_size=2).infer_shape(a=(1, 1, 5, 5), b=(1, 1, 5, 5))
    with pytest.raises(ShapeError, match='same shape'):
        mx.sym.Correlation(a, b).infer_shape(a=(1, 2, 5, 6), b=(1, 3, 5, 6))
    with pytest.raises(ShapeError, match='4-D'):
        mx.sym.Correlation(a, b).infer_shape(a=(2, 5, 6), b=(2, 5, 6))
    with pytest.raises(MXNetError, match='stride1'):
        mx.sym.Correlation(a, b, stride1=0)


def test_correlation_abs_ties_count_as_positive():
    x = np.random.RandomState(0).uniform(-1, 1, (1, 1, 3, 3))
    sym = mx.sym.Correlation(mx.sym.var('a'), mx.sym.var('b'), max_displacement=0,
                             is_multiply=False)
    exe = sym.simple_bind(mx.cpu(), a=x.shape, b=x.shape,
                          type_dict={'a': 'float64', 'b': 'float64'})
    exe.forward(is_train=True, a=x, b=x)
    exe.backward([mx.nd.ones((1, 1, 3, 3), dtype='float64')])
    np.testing.assert_array_equal(exe.grad_dict['a'].asnumpy(), np.ones(x.shape))
    np.testing.assert_array_equal(exe.grad_dict['b'].asnumpy(), -np.ones(x.shape))
