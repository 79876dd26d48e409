"""The ``_image_*`` operators (ops/image.py) against NumPy references written from MXNet
1.9.1's kernels (src/operator/image/), their gradients (the derivatives, checked by float64
central differences; the random augmenters given the values drawn in forward: rows with a
``seed``; MXNet 1.9.1's gradient is ``_copy`` of the head), the random ones' distributions
and the errors. MXNet's values: golden cases splitidx_img_*
(tests/golden/graphs_compute_split_index.py) and tests/golden/data/ops15."""
import colorsys

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op

_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]])


def pixels(rng, shapes, dtype):
    return [rng.randint(0, 256, s).astype(dtype) for s in shapes]


def _u8(v):
    return np.trunc(np.clip(v, 0, 255)).astype(np.uint8)


def colours(rng, shapes, dtype):
    """Pixels in (0, 255) away from ties between channels (the colour augmenters' kinks)."""
    return [np.round(rng.uniform(2, 253, s) / 3.0) * 3.0 + rng.uniform(-1, 1, s)
            for s in shapes]


def _contrast_ref(a):
    def ref(x):
        f = x.astype(np.float64)
        gray = (f[..., 0] * 0.299 + f[..., 1] * 0.587 + f[..., 2] * 0.114).mean()
        return f * a + (1 - a) * gray
    return ref


def _hue_ref(a):
    def ref(x):
        out = np.empty(x.shape)
        for i, j in np.ndindex(*x.shape[:2]):
            h, l, s = colorsys.rgb_to_hls(*(x[i, j] / 255.0))
            out[i, j] = np.array(colorsys.hls_to_rgb((h + a) % 1.0, l, s)) * 255
        return out
    return ref


def _bilinear_ref(x, oh, ow):
    """OpenCV's bilinear resize (half-pixel centres, edges clamped) of (N, H, W, C)."""
    def taps(n_out, n_in):
        f = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        i0 = np.minimum(np.floor(f).astype(int), n_in - 1)
        return i0, np.minimum(i0 + 1, n_in - 1), f - i0
    y0, y1, fy = taps(oh, x.shape[-3])
    x0, x1, fx = taps(ow, x.shape[-2])
    fy, fx = fy[:, None, None], fx[None, :, None]
    rows = x[..., y0, :, :] * (1 - fy) + x[..., y1, :, :] * fy
    return rows[..., x0, :] * (1 - fx) + rows[..., x1, :] * fx


#: a seed whose first draw flips (the random flips' rows check the flipped gradient)
SEED_FLIPS = 0

#: why the random rows have no reference value: their draws are random; what they check is
#: the gradient given the draws (the seed repeats them), the values are pinned elsewhere
FLIP = 'a random flip: test_image.py::test_random_flips_differentiate_the_drawn_flip'
DRAWN = ('random factors: the fixed-factor rows above pin the formulas, '
         'test_image.py::test_random_augmenters_draw_from_the_seeded_generator the draws')

CASES = [
    OpCase('_image_to_tensor', {}, [(4, 5, 3)], inputs=pixels, dtypes=('uint8',),
           ref=lambda x: np.transpose(x, (2, 0, 1)) / np.float32(255), grad=()),
    OpCase('_image_to_tensor', {}, [(2, 3, 4, 1)], dtypes=('float32', 'float64'),
           ref=lambda x: np.transpose(x, (0, 3, 1, 2)) / 255, eps=0.5),
    # float32 output whatever the input (MXNet's): linear, so a wide step is exact
    OpCase('_image_to_tensor', {}, [(3, 2, 3)], inputs=colours, dtypes=('float64', 'float16'),
           ref=lambda x: np.transpose(x, (2, 0, 1)) / 255, rtol=1e-3, eps=0.5),
    OpCase('_image_normalize', {'mean': (0.5, 0.4, 0.3), 'std': (0.2, 0.3, 0.4)},
           [(3, 4, 5)], ref=lambda x: (x - np.array([.5, .4, .3], np.float32)[:, None, None])
           / np.array([.2, .3, .4], np.float32)[:, None, None]),
    OpCase('_image_normalize', {'mean': '0.5', 'std': '(0.25,)'}, [(2, 1, 3, 4)],
           ref=lambda x: (x - 0.5) / 0.25),
    OpCase('_image_crop', {'x': 1, 'y': 2, 'width': 3, 'height': 2}, [(4, 5, 3)],
           ref=lambda x: x[2:4, 1:4]),
    OpCase('_image_crop', {'x': 0, 'y': 1, 'width': 4, 'height': 3}, [(2, 4, 5, 1)],
           inputs=pixels, dtypes=('uint8',), ref=lambda x: x[:, 1:4, 0:4], grad=()),
    OpCase('_image_resize', {'size': (3, 2)}, [(4, 6, 3)],
           ref=lambda x: (x[0::2, 0::2] + x[0::2, 1::2] + x[1::2, 0::2] + x[1::2, 1::2]) / 4),
    OpCase('_image_resize', {'size': (6, 4), 'interp': 0}, [(2, 2, 3, 1)],
           ref=lambda x: x.repeat(2, axis=1).repeat(2, axis=2)),
    OpCase('_image_resize', {'size': 5, 'keep_ratio': True}, [(3, 4, 2, 1)],
           ref=lambda x: _bilinear_ref(x, 10, 5), rtol=1e-5, atol=1e-5),
    OpCase('_image_resize', {'size': (3, 4)}, [(5, 7, 1)], inputs=pixels, dtypes=('uint8',),
           grad=(), no_ref='uint8 rounding of the interpolation: the float rows above pin the '
                           'values; this one shapes and dtypes'),
    OpCase('_image_flip_left_right', {}, [(4, 5, 3)], ref=lambda x: x[:, ::-1]),
    OpCase('_image_flip_top_bottom', {}, [(4, 5, 1)], ref=lambda x: x[::-1]),
    OpCase('_image_random_flip_left_right', {}, [(3, 4, 3)], no_ref=FLIP, seed=SEED_FLIPS),
    OpCase('_image_random_flip_top_bottom', {}, [(3, 4, 3)], no_ref=FLIP, seed=SEED_FLIPS),
    OpCase('_image_random_brightness', {'min_factor': 1.3, 'max_factor': 1.3}, [(4, 5, 3)],
           inputs=pixels, dtypes=('uint8',), ref=lambda x: _u8(x * np.float32(1.3)), grad=()),
    OpCase('_image_random_brightness', {'min_factor': 0.5, 'max_factor': 0.5}, [(2, 3, 1)],
           ref=lambda x: x * 0.5),
    OpCase('_image_random_contrast', {'min_factor': 0.6, 'max_factor': 0.6}, [(4, 5, 3)],
           inputs=pixels, ref=_contrast_ref(0.6), rtol=1e-5, atol=1e-4),
    OpCase('_image_random_saturation', {'min_factor': 1.7, 'max_factor': 1.7}, [(4, 5, 3)],
           inputs=pixels, ref=lambda x: x[..., 2:3] * 0.114 * (1 - 1.7) + x * 1.7,
           rtol=1e-5, atol=1e-4),
    OpCase('_image_random_hue', {'min_factor': 0.15, 'max_factor': 0.15}, [(4, 5, 3)],
           inputs=colours, ref=_hue_ref(0.15), rtol=1e-4, atol=2e-3),
    OpCase('_image_random_color_jitter', {'brightness': 0.0, 'contrast': 0.0,
                                          'saturation': 0.0, 'hue': 0.0}, [(3, 4, 3)],
           ref=lambda x: x),
    OpCase('_image_adjust_lighting', {'alpha': (0.1, -0.2, 0.3)}, [(4, 5, 3)],
           inputs=pixels, ref=lambda x: x + _EIG @ np.array([0.1, -0.2, 0.3]),
           rtol=1e-5, atol=1e-4),
    OpCase('_image_adjust_lighting', {'alpha': (1.5, -2.2, 0.3)}, [(4, 5, 3)], inputs=pixels,
           dtypes=('uint8',), ref=lambda x: _u8(x + _EIG @ np.array([1.5, -2.2, 0.3])),
           grad=()),
    OpCase('_image_random_lighting', {'alpha_std': 0.0}, [(3, 4, 3)], ref=lambda x: x),
    # the random augmenters differentiated given their draws (factors from ranges)
    OpCase('_image_random_brightness', {'min_factor': 0.5, 'max_factor': 1.5}, [(3, 4, 3)],
           no_ref=DRAWN, seed=3),
    OpCase('_image_random_contrast', {'min_factor': 0.2, 'max_factor': 1.8}, [(3, 4, 1)],
           inputs=colours, no_ref=DRAWN, seed=3),
    OpCase('_image_random_saturation', {'min_factor': 0.3, 'max_factor': 1.6}, [(3, 2, 3)],
           inputs=colours, no_ref=DRAWN, seed=3),
    OpCase('_image_random_hue', {'min_factor': 0.0, 'max_factor': 0.9}, [(3, 4, 3)],
           inputs=colours, no_ref=DRAWN, seed=3),
    OpCase('_image_random_color_jitter', {'brightness': 0.3, 'contrast': 0.4,
                                          'saturation': 0.5, 'hue': 0.2}, [(3, 4, 3)],
           inputs=colours, no_ref=DRAWN, seed=3),
    OpCase('_image_random_color_jitter', {'brightness': 0.0, 'contrast': 0.4,
                                          'saturation': 0.0, 'hue': 0.3}, [(2, 3, 3)],
           inputs=colours, no_ref=DRAWN, seed=5),
    OpCase('_image_random_lighting', {'alpha_std': 0.2}, [(3, 2, 3)], inputs=colours,
           no_ref=DRAWN, seed=3),
]

test_forward, test_gradient = case_tests(CASES)


def test_namespace_and_shapes():
    img = mx.nd.array(np.random.RandomState(0).randint(0, 256, (4, 5, 3)), dtype='uint8')
    t = mx.nd.image.to_tensor(img)
    assert t.shape == (3, 4, 5) and t.dtype == np.float32
    s = mx.sym.image.resize(mx.sym.var('x'), size=6, keep_ratio=True)
    assert s.infer_shape(x=(4, 5, 3))[1] == [(6, 7, 3)]
    assert mx.sym.image.resize(mx.sym.var('x'), size=6).infer_shape(x=(4, 5, 3))[1] == \
        [(6, 6, 3)]
    assert 'to_tensor' in dir(mx.nd.image)


def test_random_augmenters_draw_from_the_seeded_generator():
    img = mx.nd.array(np.random.RandomState(1).uniform(0, 255, (6, 7, 3)))
    mx.random.seed(3)
    a = [mx.nd.image.random_brightness(img, min_factor=0.5, max_factor=1.5) for _ in range(3)]
    mx.random.seed(3)
    b = [mx.nd.image.random_brightness(img, min_factor=0.5, max_factor=1.5) for _ in range(3)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    ratios = [float((x.asnumpy() / img.asnumpy()).mean()) for x in a]
    assert all(0.5 <= r <= 1.5 for r in ratios) and len(set(ratios)) == 3
    flips = {bool((mx.nd.image.random_flip_left_right(img).asnumpy() == img.asnumpy()).all())
             for _ in range(30)}
    assert flips == {True, False}
    lit = mx.nd.image.random_lighting(img, alpha_std=0.1).asnumpy() - img.asnumpy()
    assert np.allclose(lit, lit[0, 0]) and np.abs(lit).max() > 0   # one shift per channel
    jit = mx.nd.image.random_color_jitter(img, brightness=0.3, contrast=0.3, saturation=0.3,
                                          hue=0.1)
    assert jit.shape == img.shape and not np.allclose(jit.asnumpy(), img.asnumpy())


def test_errors():
    with pytest.raises(ShapeError, match='1 or 3 channels'):
        get_op('_image_flip_left_right')().infer_shape([(4, 5, 2)])
    with pytest.raises(ShapeError, match='does not fit'):
        get_op('_image_crop')(x=4, y=2, width=3, height=2).infer_shape([(4, 5, 3)])
    with pytest.raises(ShapeError, match='mean must have either 1 or 3'):
        get_op('_image_normalize')(mean=(0.1, 0.2)).infer_shape([(3, 4, 5)])
    with pytest.raises(MXNetError, match='unknown interpolation method interp=5'):
        get_op('_image_resize')(size=(3, 3), interp=5)
    with pytest.raises(MXNetError, match='must be >= 0'):
        get_op('_image_random_hue')(min_factor=-0.3, max_factor=0.3)
    with pytest.raises(MXNetError, match='alpha must have 3'):
        get_op('_image_adjust_lighting')(alpha=(0.1,))


def _grad(sym_fn, image, head, seed=None, **attrs):
    """Output and input gradient of ``sym_fn`` bound on ``image`` with head gradient
    ``head``."""
    s = sym_fn(mx.sym.var('img'), **attrs)
    g = mx.nd.zeros(image.shape, dtype=image.dtype)
    ex = s.bind(mx.cpu(), {'img': mx.nd.array(image, dtype=image.dtype)},
                args_grad={'img': g})
    if seed is not None:
        mx.random.seed(seed)
    y = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(mx.nd.array(head, dtype=head.dtype))
    return y, g.asnumpy()


def test_random_flips_differentiate_the_drawn_flip():
    """Both draws: the gradient is flipped exactly when the image is (MXNet: never)."""
    x = np.random.RandomState(0).uniform(0, 255, (3, 5, 3))
    head = np.random.RandomState(1).uniform(-1, 1, x.shape)
    for fn, axis in ((mx.sym.image.random_flip_left_right, 1),
                     (mx.sym.image.random_flip_top_bottom, 0)):
        seen = set()
        for seed in range(6):
            y, g = _grad(fn, x, head, seed=seed)
            flipped = np.array_equal(y, np.flip(x, axis))
            assert flipped or np.array_equal(y, x)
            np.testing.assert_array_equal(g, np.flip(head, axis) if flipped else head)
            seen.add(flipped)
        assert seen == {True, False}


def test_hidden_draws_output():
    op = get_op('_image_random_color_jitter')(brightness=0.3, contrast=0.0, saturation=0.5,
                                              hue=0.1)
    assert op.list_outputs() == ['output', 'draws'] and op.num_visible_outputs() == 1
    x = np.random.RandomState(0).uniform(0, 255, (2, 3, 3)).astype(np.float32)
    np.random.seed(4)
    y, d = op.forward(np, [x], [], True)
    assert sorted(d[:4]) == [0, 1, 2, 3] and d[5] == 0          # contrast skipped
    assert abs(d[4] - 1) <= 0.3 and abs(d[6] - 1) <= 0.5 and abs(d[7]) <= 0.1
    np.testing.assert_array_equal(op.apply(np, x, d), y)         # the draws make the output
    s = mx.sym.image.random_color_jitter(mx.sym.var('x'), brightness=0.3, contrast=0.0,
                                         saturation=0.5, hue=0.1)
    assert len(s.list_outputs()) == 1
    assert s.infer_shape(x=(2, 3, 3))[1] == [(2, 3, 3)]


def test_integer_images_are_not_differentiable():
    """uint8 images: 0 where the operator rounds values; flips and crop move the head."""
    x = np.random.RandomState(0).randint(0, 256, (3, 5, 3)).astype(np.uint8)
    head = np.random.RandomState(1).randint(0, 9, x.shape).astype(np.uint8)
    _, g = _grad(mx.sym.image.flip_left_right, x, head)
    np.testing.assert_array_equal(g, head[:, ::-1])
    _, g = _grad(mx.sym.image.crop, x, head[1:3, 0:2], x=0, y=1, width=2, height=2)
    want = np.zeros_like(x)
    want[1:3, 0:2] = head[1:3, 0:2]
    np.testing.assert_array_equal(g, want)
    for fn, attrs, h in ((mx.sym.image.random_brightness, dict(min_factor=2, max_factor=2),
                          head),
                         (mx.sym.image.adjust_lighting, dict(alpha=(0.1, 0.2, 0.3)), head),
                         (mx.sym.image.resize, dict(size=(2, 2)), head[:2, :2]),
                         (mx.sym.image.to_tensor, {}, np.ones((3, 3, 5), np.float32))):
        _, g = _grad(fn, x, h, **attrs)
        assert g.dtype == np.uint8 and not g.any(), fn


def test_flips_write_the_middle_of_odd_sizes():
    """MXNet 1.9.1's out-of-place flips leave the middle row (column) of an odd height
    (width) unwritten; here it is the input's (README, differences from MXNet)."""
    x = np.random.RandomState(0).randint(0, 256, (5, 7, 3)).astype(np.uint8)
    for fn, axis in ((mx.nd.image.flip_left_right, 1), (mx.nd.image.flip_top_bottom, 0)):
        for _ in range(3):          # fresh output memory each time
            np.testing.assert_array_equal(fn(mx.nd.array(x, dtype='uint8')).asnumpy(),
                                          np.flip(x, axis))
    for fn, axis in ((mx.nd.image.random_flip_left_right, 1),
                     (mx.nd.image.random_flip_top_bottom, 0)):
        outs = {fn(mx.nd.array(x, dtype='uint8')).asnumpy().tobytes() for _ in range(12)}
        assert outs == {x.tobytes(), np.ascontiguousarray(np.flip(x, axis)).tobytes()}


def test_color_jitter_with_every_factor_zero_returns_the_image():
    """MXNet 1.9.1 never writes the output then (README); here: the image, a new array."""
    x = mx.nd.array(np.random.RandomState(0).uniform(0, 255, (3, 4, 3)))
    y = mx.nd.image.random_color_jitter(x, brightness=0, contrast=0, saturation=0, hue=0)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    y[:] = 0
    assert x.asnumpy().any()
