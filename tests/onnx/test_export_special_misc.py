"""ONNX export of the sorts, resizes, sequence operators, BERT's fused attention and the
other tensor operators of symgraph/onnx/_convert_misc.py: each graph exported, checked by
onnx.checker and run by ONNX Runtime against symgraph's forward."""
import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import check, export

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

RNG = np.random.RandomState(0)


def _x(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _ties(*shape):
    return RNG.randint(0, 4, shape).astype(np.float32)


# ---------------------------------------------------------------------------- sorting
@pytest.mark.parametrize('ret_typ', ['value', 'indices', 'both', 'mask'])
@pytest.mark.parametrize('axis,k,asc', [(-1, 2, False), (0, 3, True), (1, 0, False),
                                        (None, 5, False)])
def test_topk(ret_typ, axis, k, asc):
    x = mx.sym.var('x')
    y = mx.sym.topk(x, axis=axis, k=k, ret_typ=ret_typ, is_ascend=asc, dtype='int32')
    # ties everywhere: ONNX TopK and symgraph both take the lower index first
    check(y, {'x': _ties(3, 4, 5)}, exact=True)


@pytest.mark.parametrize('axis,asc', [(-1, True), (0, False), (None, True)])
def test_sort_argsort(axis, asc):
    x = mx.sym.var('x')
    y = mx.sym.Group([mx.sym.sort(x, axis=axis, is_ascend=asc),
                      mx.sym.argsort(x, axis=axis, is_ascend=asc)])
    check(y, {'x': _ties(4, 6)}, exact=True)


# ---------------------------------------------------------------------------- resizes
@pytest.mark.parametrize('size', [(1,), (3,), (4, 3), (5, 7), (2, 9)])
def test_adaptive_avg_pooling(size):
    x = mx.sym.var('x')
    y = mx.sym.contrib.AdaptiveAvgPooling2D(x, output_size=size)
    check(y, {'x': _x(2, 3, 7, 9)})


@pytest.mark.parametrize('align', [True, False])
@pytest.mark.parametrize('kw', [dict(height=11, width=5), dict(height=1, width=1),
                                dict(scale_height=2.0, scale_width=1.5),
                                dict(mode='to_odd_up'), dict(mode='odd_scale',
                                                             scale_height=0.5,
                                                             scale_width=2.0)])
def test_bilinear_resize(align, kw):
    x = mx.sym.var('x')
    y = mx.sym.contrib.BilinearResize2D(x, align_corners=align, **kw)
    check(y, {'x': _x(2, 3, 6, 8)})


def test_bilinear_resize_like():
    x, like = mx.sym.var('x'), mx.sym.var('like')
    y = mx.sym.contrib.BilinearResize2D(x, like, mode='like', align_corners=False)
    check(y, {'x': _x(1, 2, 5, 4), 'like': _x(1, 1, 9, 3)})


def test_upsampling_bilinear_and_nearest():
    x, w = mx.sym.var('x'), mx.sym.var('w')
    up = mx.sym.UpSampling(x, w, scale=2, sample_type='bilinear', num_filter=3)
    weight = _x(3, 1, 4, 4)
    check(up, {'x': _x(2, 3, 4, 5)}, params={'w': weight})
    near = mx.sym.UpSampling(x, scale=3, sample_type='nearest')
    check(near, {'x': _x(1, 2, 3, 2)})
    a, b = mx.sym.var('a'), mx.sym.var('b')
    for mode in ('concat', 'sum'):
        multi = mx.sym.UpSampling(a, b, scale=2, sample_type='nearest', num_args=2,
                                  multi_input_mode=mode)
        check(multi, {'a': _x(1, 2, 2, 3), 'b': _x(1, 2, 4, 6)})


# ------------------------------------------------------------------ sequence operators
@pytest.mark.parametrize('axis', [0, 1])
@pytest.mark.parametrize('use_len', [False, True])
def test_sequence_mask_last(axis, use_len):
    x, ln = mx.sym.var('x'), mx.sym.var('len')
    kw = dict(use_sequence_length=use_len, axis=axis)
    args = [x, ln] if use_len else [x]
    y = mx.sym.Group([mx.sym.SequenceMask(*args, value=-2.5, **kw),
                      mx.sym.SequenceLast(*args, **kw)])
    data = _x(5, 3, 4) if axis == 0 else _x(3, 5, 4)
    inputs = {'x': data}
    if use_len:
        inputs['len'] = np.array([2.7, 5, 1], np.float32)
    check(y, inputs, exact=True)


@pytest.mark.parametrize('use_len', [False, True])
def test_sequence_reverse(use_len):
    x, ln = mx.sym.var('x'), mx.sym.var('len')
    args = [x, ln] if use_len else [x]
    y = mx.sym.SequenceReverse(*args, use_sequence_length=use_len)
    inputs = {'x': _x(6, 3, 2)}
    if use_len:
        inputs['len'] = np.array([6, 0, 3.9], np.float32)
    check(y, inputs, exact=True)


# ---------------------------------------------------------------- BERT's attention
def test_interleaved_attention():
    qkv, q, kv = mx.sym.var('qkv'), mx.sym.var('q'), mx.sym.var('kv')
    heads = 2
    att = mx.sym.softmax(mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=heads))
    self_out = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=heads)
    att2 = mx.sym.contrib.interleaved_matmul_encdec_qk(q, kv, heads=heads)
    cross = mx.sym.contrib.interleaved_matmul_encdec_valatt(kv, mx.sym.softmax(att2),
                                                            heads=heads)
    y = mx.sym.Group([att, self_out, att2, cross])
    check(y, {'qkv': _x(5, 3, heads * 3 * 4), 'q': _x(4, 3, heads * 4),
              'kv': _x(5, 3, heads * 2 * 4)})


def test_div_sqrt_dim_arange_like():
    x = mx.sym.var('x')
    y = mx.sym.Group([mx.sym.contrib.div_sqrt_dim(x),
                      mx.sym.contrib.arange_like(x, start=1.5, step=0.5, repeat=2),
                      mx.sym.contrib.arange_like(x, axis=1)])
    check(y, {'x': _x(2, 3, 7)})


# ----------------------------------------------------------------- tensor operators
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_erfinv(dtype):
    x = mx.sym.var('x')
    # float64 data is rounded to float32 first, which erfinv amplifies near +-1
    edge = 0.999999 if dtype == np.float32 else 0.999
    data = np.concatenate([np.linspace(-edge, edge, 201),
                           [-1.0, 1.0, 1.5, -2.0, 0.0]]).astype(dtype)
    # float64 is computed in float32 (ONNX Runtime has no float64 Erf)
    ref, got = check(mx.sym.erfinv(x), {'x': data}, rtol=1e-5)
    assert np.isinf(got[0][201:203]).all() and np.isnan(got[0][203:205]).all()


def test_gather_scatter_nd():
    data, idx = mx.sym.var('data'), mx.sym.var('idx')
    y = mx.sym.Group([mx.sym.gather_nd(data, idx),
                      mx.sym.scatter_nd(mx.sym.var('val'), idx, shape=(4, 5, 2))])
    index = np.array([[0, 3, 1, 2], [4, 0, 2, 1]], np.float32)
    check(y, {'data': _x(4, 5, 2), 'idx': index, 'val': _x(4, 2)}, exact=True)


@pytest.mark.parametrize('ta,tb,axis', [(False, False, -2), (True, False, -2),
                                        (False, True, -2), (True, True, 1)])
def test_linalg_gemm2(ta, tb, axis):
    a, b = mx.sym.var('a'), mx.sym.var('b')
    y = mx.sym.linalg.gemm2(a, b, transpose_a=ta, transpose_b=tb, alpha=1.5, axis=axis)
    if axis == -2:
        sa = (2, 4, 3) if ta else (2, 3, 4)
        sb = (2, 5, 4) if tb else (2, 4, 5)
    else:
        sa = (2, 4, 6, 3) if ta else (2, 3, 6, 4)     # rows on axis 1, columns last
        sb = (2, 5, 6, 4) if tb else (2, 4, 6, 5)
    check(y, {'a': _x(*sa), 'b': _x(*sb)})


@pytest.mark.parametrize('shape,k,axes', [((5,), 0, (0, 1)), ((4,), 2, (0, 1)),
                                          ((3,), -1, (0, 1)), ((4, 6), 1, (0, 1)),
                                          ((4, 6), -2, (0, 1)), ((2, 5, 3, 4), 0, (1, 3)),
                                          ((2, 5, 3, 4), 1, (-1, 1))])
def test_diag(shape, k, axes):
    x = mx.sym.var('x')
    check(mx.sym.diag(x, k=k, axis1=axes[0], axis2=axes[1]), {'x': _x(*shape)}, exact=True)


def test_argmax_channel_crop():
    x, like = mx.sym.var('x'), mx.sym.var('like')
    y = mx.sym.Group([mx.sym.argmax_channel(x),
                      mx.sym.Crop(x, h_w=(3, 2), offset=(1, 2), num_args=1),
                      mx.sym.Crop(x, h_w=(3, 2), center_crop=True, num_args=1),
                      mx.sym.Crop(x, like, num_args=2, offset=(2, 1))])
    check(y, {'x': _x(2, 3, 6, 5), 'like': _x(1, 1, 4, 4)}, exact=True)


@pytest.mark.parametrize('transform', ['affine', 'warp'])
def test_grid_generator_bilinear_sampler(transform):
    data, param = mx.sym.var('data'), mx.sym.var('p')
    if transform == 'affine':
        grid = mx.sym.GridGenerator(param, transform_type='affine', target_shape=(5, 7))
        p = np.tile(np.array([[0.9, 0.2, 0.1, -0.1, 1.1, 0.05]], np.float32), (2, 1))
        p += 0.05 * _x(2, 6)
    else:
        grid = mx.sym.GridGenerator(param, transform_type='warp')
        p = 1.5 * _x(2, 2, 5, 7)
    y = mx.sym.Group([grid, mx.sym.BilinearSampler(data, grid)])
    check(y, {'data': _x(2, 3, 6, 8), 'p': p})


def test_ctc_loss_is_a_clear_error():
    from symgraph.onnx import ExportError
    data, label = mx.sym.var('data'), mx.sym.var('label')
    loss = mx.sym.contrib.CTCLoss(data, label)
    with pytest.raises(ExportError, match='CTCLoss is not expressible in ONNX'):
        export(loss, {'data': _x(6, 2, 5), 'label': np.ones((2, 3), np.float32)})


def test_spatial_transformer():
    data, loc = mx.sym.var('data'), mx.sym.var('loc')
    y = mx.sym.SpatialTransformer(data, loc, target_shape=(4, 6), transform_type='affine',
                                  sampler_type='bilinear')
    theta = np.array([[0.8, -0.3, 0.1, 0.25, 1.2, -0.05]], np.float32) + 0.1 * _x(3, 6)
    check(y, {'data': _x(3, 2, 7, 5), 'loc': theta})


@pytest.mark.parametrize('modulated', [False, True])
@pytest.mark.parametrize('kw', [dict(kernel=(3, 3), pad=(1, 1), num_filter=4),
                                dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(2, 1),
                                     num_filter=6, num_group=2, num_deformable_group=2,
                                     no_bias=True)])
def test_deformable_convolution(modulated, kw):
    """Offsets large enough to reach past every border, and positions at exactly the
    last row and column (v1's clamped border)."""
    args = [mx.sym.var('data'), mx.sym.var('offset')]
    if modulated:
        args.append(mx.sym.var('mask'))
    args.append(mx.sym.var('weight'))
    if not kw.get('no_bias'):
        args.append(mx.sym.var('bias'))
    op = mx.sym.contrib.ModulatedDeformableConvolution if modulated else \
        mx.sym.contrib.DeformableConvolution
    y = op(*args, **kw)
    shapes = {'data': (2, 4, 6, 7)}
    arg_shapes, _, _ = y.infer_shape(**shapes)
    inputs = {}
    for name, shape in zip(y.list_arguments(), arg_shapes):
        inputs[name] = _x(*shape)
    inputs['offset'] = 2.5 * inputs['offset']
    inputs['offset'][:, ::7] = np.round(inputs['offset'][:, ::7])   # integer positions
    check(y, inputs)


@pytest.mark.parametrize('kw', [dict(), dict(kernel_size=3, max_displacement=2, stride1=2,
                                             stride2=2, pad_size=2),
                                dict(kernel_size=1, max_displacement=3, stride2=1,
                                     pad_size=3, is_multiply=False)])
def test_correlation(kw):
    a, b = mx.sym.var('a'), mx.sym.var('b')
    check(mx.sym.Correlation(a, b, **kw), {'a': _x(2, 3, 7, 8), 'b': _x(2, 3, 7, 8)})
