"""The OpenCV operators (ops/image_io.py): ``_cvcopyMakeBorder`` and ``_cvimresize`` OpCases
against NumPy references, and all four against MXNet 1.9.1 (tests/golden/make_hawkes_cv.py,
data/hawkes_cv.npz: borders exact, nearest exact, bilinear within float rounding or 1 grey
level for uint8 (in at most 5% of the values; measured 4.3% at most), PNG decoding exact, JPEG decoding within 2 grey levels -- measured: exact
with Pillow 13's libjpeg-turbo); the decoders need Pillow (optional) and say so without it."""
import json
import os
import sys

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MissingFileError, NotSupportedError, ParameterError
from symgraph.opdef import MXNetError, ShapeError, TypeInferenceError, get_op

_DATA = os.path.join(os.path.dirname(__file__), os.pardir, 'golden', 'data')
GOLDEN = np.load(os.path.join(_DATA, 'hawkes_cv.npz'))
IMAGES = os.path.join(_DATA, 'image_io')
_CASES = sorted({k.split('/')[0] for k in GOLDEN.files})


def pixels(rng, shapes, dtype):
    return [rng.randint(0, 256, s).astype(dtype) for s in shapes]


_NP_MODES = {1: 'edge', 2: 'symmetric', 3: 'wrap', 4: 'reflect'}


def _border_ref(top, bot, left, right, type=0, value=0.0, values=()):
    def ref(x):
        pads = ((top, bot), (left, right), (0, 0))
        if type:
            return np.pad(x, pads, mode=_NP_MODES[type])
        out = np.pad(x, pads).astype(np.float64)
        fill = list(values) or [value, value, value, 0.0]
        mask = np.ones(out.shape[:2], bool)
        mask[top:top + x.shape[0], left:left + x.shape[1]] = False
        for c in range(x.shape[2]):
            out[..., c][mask] = fill[c]
        if x.dtype.kind in 'iu':
            info = np.iinfo(x.dtype)
            out = np.clip(np.rint(out), info.min, info.max)
        return out.astype(x.dtype)
    return ref


def _resize_ref(w, h, interp):
    def ref(x):
        H, W = x.shape[:2]
        if interp == 0:
            ys = [min(int(i * H / h), H - 1) for i in range(h)]
            xs = [min(int(j * W / w), W - 1) for j in range(w)]
            return x[ys][:, xs]
        out = np.zeros((h, w, x.shape[2]))

        def taps(i, n_out, n_in):
            f = (i + 0.5) * n_in / n_out - 0.5
            s = int(np.floor(f))
            f -= s
            if s < 0:
                return 0, 0, 0.0
            if s >= n_in - 1:
                return n_in - 1, n_in - 1, 0.0
            return s, s + 1, f
        for i in range(h):
            y0, y1, fy = taps(i, h, H)
            for j in range(w):
                x0, x1, fx = taps(j, w, W)
                out[i, j] = ((1 - fy) * ((1 - fx) * x[y0, x0] + fx * x[y0, x1])
                             + fy * ((1 - fx) * x[y1, x0] + fx * x[y1, x1]))
        return out.astype(x.dtype)
    return ref


def _b(**kw):
    kw.setdefault('type', 0)
    return OpCase('_cvcopyMakeBorder', kw, [(4, 5, 3)], ref=_border_ref(**kw), grad=(),
                  inputs=pixels, dtypes=('uint8', 'float32', 'float64', 'int32'))


CASES = [
    _b(top=1, bot=2, left=3, right=1),
    _b(top=2, bot=0, left=1, right=2, value=7.5),
    _b(top=1, bot=1, left=2, right=2, values=(3.0, 290.0, -4.5)),
    _b(top=2, bot=3, left=1, right=4, type=1),
    _b(top=3, bot=2, left=4, right=1, type=2),
    _b(top=2, bot=2, left=3, right=3, type=3),
    _b(top=3, bot=1, left=2, right=4, type=4),
    OpCase('_cvimresize', {'w': 7, 'h': 3, 'interp': 0}, [(5, 4, 3)], ref=_resize_ref(7, 3, 0),
           grad=(), inputs=pixels, dtypes=('uint8', 'float32', 'float64')),
    OpCase('_cvimresize', {'w': 3, 'h': 8, 'interp': 1}, [(6, 5, 2)], ref=_resize_ref(3, 8, 1),
           grad=(), inputs=pixels, dtypes=('float32', 'float64'), rtol=1e-5, atol=1e-4),
]

test_forward, test_gradient = case_tests(CASES)


def _golden(prefix):
    return [c for c in _CASES if c.startswith(prefix)]


def _call(name):
    attrs = json.loads(str(GOLDEN[name + '/attrs']))
    want = GOLDEN[name + '/out0']
    if name.startswith('resize'):
        x = GOLDEN[name + '/in0']
        got = mx.nd._internal._cvimresize(mx.nd.array(x, dtype=x.dtype), **attrs)
    elif name.startswith('border'):
        x = GOLDEN[name + '/in0']
        got = mx.nd._internal._cvcopyMakeBorder(mx.nd.array(x, dtype=x.dtype), **attrs)
    elif name.startswith('decode'):
        attrs.pop('file')
        got = mx.nd._internal._cvimdecode(mx.nd.array(GOLDEN[name + '/in0'], dtype='uint8'),
                                          **attrs)
    else:
        f = attrs.pop('file')
        got = mx.nd._internal._cvimread(filename=os.path.join(IMAGES, f), **attrs)
    got = got.asnumpy()
    assert got.shape == want.shape and got.dtype == want.dtype, \
        '%s: %s %s, MXNet %s %s' % (name, got.shape, got.dtype, want.shape, want.dtype)
    return got, want


@pytest.mark.parametrize('name', _golden('border_'))
def test_copy_make_border_matches_mxnet(name):
    got, want = _call(name)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize('name', _golden('resize_'))
def test_imresize_matches_mxnet(name):
    got, want = _call(name)
    if '_i0_' in name or '_f64_' in name:
        np.testing.assert_array_equal(got, want)         # nearest; float64 bilinear
    elif '_f32_' in name:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-7)
    else:       # uint8 bilinear: OpenCV's fixed point, a few values off by one grey level
        diff = np.abs(got.astype(int) - want)
        assert diff.max() <= 1 and (diff > 0).mean() < 0.05, (diff.max(), (diff > 0).mean())


@pytest.mark.parametrize('name', _golden('decode_') + _golden('imread_'))
def test_decoders_match_mxnet(name):
    pytest.importorskip('PIL')
    got, want = _call(name)
    if '_png_' in name:
        np.testing.assert_array_equal(got, want)
    else:       # JPEG: libjpeg builds may round the IDCT differently
        assert np.abs(got.astype(int) - want).max() <= 2


def test_decoders_without_pillow_say_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'PIL', None)       # import PIL now raises ImportError
    buf = mx.nd.array(GOLDEN['decode_rgb_png_f1_rgb/in0'], dtype='uint8')
    with pytest.raises(NotSupportedError, match=r'needs Pillow.*pip install "symgraph\[image\]"'):
        mx.nd._internal._cvimdecode(buf)
    with pytest.raises(NotSupportedError, match='needs Pillow'):
        mx.nd._internal._cvimread(filename=os.path.join(IMAGES, 'rgb.png'))


def test_decoder_errors():
    pytest.importorskip('PIL')
    garbage = mx.nd.array(np.frombuffer(b'not an image', np.uint8), dtype='uint8')
    with pytest.raises(ParameterError, match='decoding failed'):
        mx.nd._internal._cvimdecode(garbage)
    with pytest.raises(TypeInferenceError, match='uint8 buffer'):
        mx.nd._internal._cvimdecode(mx.nd.array([1.0, 2.0]))
    with pytest.raises(ParameterError, match='flag must be 0'):
        mx.nd._internal._cvimdecode(garbage, flag=2)
    with pytest.raises(MissingFileError, match='no such file') as e:
        mx.nd._internal._cvimread(filename=os.path.join(IMAGES, 'missing.png'))
    assert isinstance(e.value, FileNotFoundError)


def test_resize_and_border_errors():
    x = mx.nd.ones((4, 5, 3))
    with pytest.raises(ParameterError, match='unknown interpolation'):
        mx.nd._internal._cvimresize(x, w=3, h=3, interp=9)
    with pytest.raises(MXNetError, match='greater equal to 1'):
        mx.nd._internal._cvimresize(x, w=0, h=3)
    with pytest.raises(ShapeError, match='height, width, channels'):
        mx.nd._internal._cvimresize(mx.nd.ones((4, 5)), w=3, h=3)
    with pytest.raises(TypeInferenceError, match='int32 are not supported'):
        mx.nd._internal._cvimresize(mx.nd.ones((4, 5, 1), dtype='int32'), w=3, h=3)
    with pytest.raises(TypeInferenceError, match='float16'):
        mx.nd._internal._cvcopyMakeBorder(mx.nd.ones((4, 5, 1), dtype='float16'), 1, 1, 1, 1)
    with pytest.raises(ParameterError, match='unknown border type 16'):
        mx.nd._internal._cvcopyMakeBorder(x, 1, 1, 1, 1, type=16)
    with pytest.raises(MXNetError, match='greater equal to 0'):
        mx.nd._internal._cvcopyMakeBorder(x, -1, 1, 1, 1)
    with pytest.raises(ShapeError, match='values has 2 entries'):
        mx.nd._internal._cvcopyMakeBorder(x, 1, 1, 1, 1, values=(1, 2))
    with pytest.raises(ShapeError, match='one value for all'):
        mx.nd._internal._cvcopyMakeBorder(mx.nd.ones((2, 2, 5)), 1, 1, 1, 1, value=3)
    with pytest.raises(MXNetError, match='no gradient'):
        get_op('_cvimresize')(w=2, h=2).backward(np, [np.ones((2, 2, 3))], [None], [None], [],
                                                 [True])


def test_symbol_shapes():
    y = mx.sym._internal._cvcopyMakeBorder(mx.sym.var('x'), top=1, bot=2, left=3, right=4)
    assert y.infer_shape(x=(5, 6, 3))[1] == [(8, 13, 3)]
    y = mx.sym._internal._cvimresize(mx.sym.var('x'), w=9, h=4)
    assert y.infer_shape(x=(5, 6, 2))[1] == [(4, 9, 2)]


def test_mx_image_functions():
    """``mx.image`` (symgraph/image.py) as MXNet's Python calls the operators."""
    pytest.importorskip('PIL')
    assert mx.img is mx.image
    with open(os.path.join(IMAGES, 'photo.jpg'), 'rb') as f:
        data = f.read()
    want = GOLDEN['decode_photo_jpg_f1_rgb/out0']
    for buf in (data, bytearray(data), np.frombuffer(data, np.uint8)):
        np.testing.assert_array_equal(mx.image.imdecode(buf).asnumpy(), want)
    np.testing.assert_array_equal(mx.image.imdecode(data, 0).asnumpy(),
                                  GOLDEN['decode_photo_jpg_f0_rgb/out0'])
    np.testing.assert_array_equal(mx.image.imdecode(data, to_rgb=False).asnumpy(),
                                  GOLDEN['decode_photo_jpg_f1_bgr/out0'])
    np.testing.assert_array_equal(
        mx.image.imread(os.path.join(IMAGES, 'photo.jpg'), 1, False).asnumpy(),
        GOLDEN['imread_photo_jpg_f1_bgr/out0'])
    with pytest.raises(TypeError, match='convert to bytes'):
        mx.image.imdecode('photo.jpg')
    x = GOLDEN['resize_u8_i0_20x17/in0']
    np.testing.assert_array_equal(mx.image.imresize(mx.nd.array(x, dtype='uint8'), 20, 17,
                                                    interp=0).asnumpy(),
                                  GOLDEN['resize_u8_i0_20x17/out0'])
    x = GOLDEN['border_u8_t3/in0']
    np.testing.assert_array_equal(
        mx.image.copyMakeBorder(mx.nd.array(x, dtype='uint8'), 2, 1, 3, 2, 3).asnumpy(),
        GOLDEN['border_u8_t3/out0'])


def test_mxnet_written_graphs_load_and_run():
    x = GOLDEN['border_u8_t0/in0']
    for op, want_shape in (('cvimresize', (3, 5, 3)), ('cvcopyMakeBorder', (8, 9, 3))):
        y = mx.sym.load_json(str(GOLDEN['json_%s/attrs' % op]))
        assert y.list_arguments() == ['x']
        out = y.bind(mx.cpu(), {'x': mx.nd.array(x, dtype='uint8')}).forward()[0]
        assert out.shape == want_shape and out.dtype == np.uint8
    y = mx.sym.load_json(str(GOLDEN['json_cvcopyMakeBorder/attrs']))
    out = y.bind(mx.cpu(), {'x': mx.nd.array(x, dtype='uint8')}).forward()[0].asnumpy()
    np.testing.assert_array_equal(out, np.pad(x, ((1, 2), (0, 3), (0, 0)), mode='reflect'))
