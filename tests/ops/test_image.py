"""The ``_image_*`` operators (ops/image.py) against NumPy references written from MXNet
1.9.1's kernels (src/operator/image/), their gradients (MXNet's ``_copy`` for the
augmenters), the random ones' distributions and the errors. MXNet's values: golden cases
splitidx_img_* (tests/golden/graphs_compute_split_index.py)."""
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


def _copy_grad(inputs, outputs, out_grads):
    return [out_grads[0]]


def _to_tensor_grad(inputs, outputs, out_grads):
    return [out_grads[0].reshape(inputs[0].shape)]


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


CASES = [
    OpCase('_image_to_tensor', {}, [(4, 5, 3)], inputs=pixels, dtypes=('uint8',),
           ref=lambda x: np.transpose(x, (2, 0, 1)) / np.float32(255), grad=()),
    OpCase('_image_to_tensor', {}, [(2, 3, 4, 1)], dtypes=('float32', 'float64'),
           ref=lambda x: np.transpose(x, (0, 3, 1, 2)) / 255, grad_ref=_to_tensor_grad),
    OpCase('_image_normalize', {'mean': (0.5, 0.4, 0.3), 'std': (0.2, 0.3, 0.4)},
           [(3, 4, 5)], ref=lambda x: (x - np.array([.5, .4, .3], np.float32)[:, None, None])
           / np.array([.2, .3, .4], np.float32)[:, None, None]),
    OpCase('_image_normalize', {'mean': '0.5', 'std': '(0.25,)'}, [(2, 1, 3, 4)],
           ref=lambda x: (x - 0.5) / 0.25),
    OpCase('_image_crop', {'x': 1, 'y': 2, 'width': 3, 'height': 2}, [(4, 5, 3)],
           ref=lambda x: x[2:4, 1:4]),
    OpCase('_image_crop', {'x': 0, 'y': 1, 'width': 4, 'height': 3}, [(2, 4, 5, 1)],
           inputs=pixels, dtypes=('uint8',), ref=lambda x: x[:, 1:4, 0:4], grad=()),
    OpCase('_image_resize', {'size': (3, 2)}, [(4, 6, 3)], grad=(),
           ref=lambda x: (x[0::2, 0::2] + x[0::2, 1::2] + x[1::2, 0::2] + x[1::2, 1::2]) / 4),
    OpCase('_image_resize', {'size': (6, 4), 'interp': 0}, [(2, 2, 3, 1)], grad=(),
           ref=lambda x: x.repeat(2, axis=1).repeat(2, axis=2)),
    OpCase('_image_flip_left_right', {}, [(4, 5, 3)], ref=lambda x: x[:, ::-1],
           grad_ref=_copy_grad),
    OpCase('_image_flip_top_bottom', {}, [(4, 5, 1)], ref=lambda x: x[::-1],
           grad_ref=_copy_grad),
    OpCase('_image_random_flip_left_right', {}, [(3, 4, 3)], ref=None, grad_ref=_copy_grad),
    OpCase('_image_random_flip_top_bottom', {}, [(3, 4, 3)], ref=None, grad_ref=_copy_grad),
    OpCase('_image_random_brightness', {'min_factor': 1.3, 'max_factor': 1.3}, [(4, 5, 3)],
           inputs=pixels, dtypes=('uint8',), ref=lambda x: _u8(x * np.float32(1.3)), grad=()),
    OpCase('_image_random_brightness', {'min_factor': 0.5, 'max_factor': 0.5}, [(2, 3, 1)],
           ref=lambda x: x * 0.5, grad_ref=_copy_grad),
    OpCase('_image_random_contrast', {'min_factor': 0.6, 'max_factor': 0.6}, [(4, 5, 3)],
           inputs=pixels, ref=_contrast_ref(0.6), rtol=1e-5, atol=1e-4, grad_ref=_copy_grad),
    OpCase('_image_random_saturation', {'min_factor': 1.7, 'max_factor': 1.7}, [(4, 5, 3)],
           inputs=pixels, ref=lambda x: x[..., 2:3] * 0.114 * (1 - 1.7) + x * 1.7,
           rtol=1e-5, atol=1e-4, grad_ref=_copy_grad),
    OpCase('_image_random_hue', {'min_factor': 0.15, 'max_factor': 0.15}, [(4, 5, 3)],
           inputs=pixels, ref=_hue_ref(0.15), rtol=1e-4, atol=2e-3, grad_ref=_copy_grad),
    OpCase('_image_random_color_jitter', {'brightness': 0.0, 'contrast': 0.0,
                                          'saturation': 0.0, 'hue': 0.0}, [(3, 4, 3)],
           ref=lambda x: x, grad_ref=_copy_grad),
    OpCase('_image_adjust_lighting', {'alpha': (0.1, -0.2, 0.3)}, [(4, 5, 3)],
           inputs=pixels, ref=lambda x: x + _EIG @ np.array([0.1, -0.2, 0.3]),
           rtol=1e-5, atol=1e-4, grad_ref=_copy_grad),
    OpCase('_image_adjust_lighting', {'alpha': (1.5, -2.2, 0.3)}, [(4, 5, 3)], inputs=pixels,
           dtypes=('uint8',), ref=lambda x: _u8(x + _EIG @ np.array([1.5, -2.2, 0.3])),
           grad=()),
    OpCase('_image_random_lighting', {'alpha_std': 0.0}, [(3, 4, 3)], ref=lambda x: x,
           grad_ref=_copy_grad),
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
    with pytest.raises(MXNetError, match='interp=2'):
        get_op('_image_resize')(size=(3, 3), interp=2)
    with pytest.raises(MXNetError, match='must be >= 0'):
        get_op('_image_random_hue')(min_factor=-0.3, max_factor=0.3)
    with pytest.raises(MXNetError, match='alpha must have 3'):
        get_op('_image_adjust_lighting')(alpha=(0.1,))
