"""Golden cases of the issue-15 shape, indexing and attention operators: ``_split_v2``
(ops/slicing.py), ``_ravel_multi_index`` / ``_unravel_index`` (ops/indexing.py),
``_histogram`` (ops/sorting.py) and the four ``_contrib_interleaved_matmul_*``
(ops/attention.py). ``_scatter_set_nd`` has none: MXNet runs it only in place
(``out=lhs``), which a graph cannot express. Python 3.8 compatible."""
import numpy as np

from graphs_compute import case
from graphs import const, ints, normal, uniform


def _v(mx, *names):
    return [mx.sym.Variable(n) for n in names]


def _split(ios, **kw):
    def build(mx):
        return mx.sym.Group(list(mx.sym.split_v2(mx.sym.Variable('x'), ios, **kw)))
    return build


def _internal(opname, *names, **attrs):
    def build(mx):
        out = getattr(mx.sym._internal, opname)(*_v(mx, *names), name='op', **attrs)
        return out
    return build


def _contrib(opname, *names, **attrs):
    def build(mx):
        return getattr(mx.sym.contrib, opname)(*_v(mx, *names), name='op', **attrs)
    return build


case('splitidx_split_v2_indices', _split((1, 3), axis=1), {'x': (2, 5, 3)})
case('splitidx_split_v2_sections', _split(3, axis=-1, squeeze_axis=True), {'x': (2, 5, 3)})
case('splitidx_split_v2_axis0', _split((2,)), {'x': (4, 3)})
case('splitidx_ravel', _internal('_ravel_multi_index', 'x', shape=(7, 6)), {'x': (2, 5)},
     inputs={'x': const([[3, 6, 6, -1, 7], [4, 5, 1, 2.5, 9.7]])},
     note='no bounds check, each entry truncated; zero gradient')
case('splitidx_unravel', _internal('_unravel_index', 'x', shape=(7, 6)), {'x': (6,)},
     inputs={'x': const([22, 41, 50, -1, 3.7, 0])},
     note='first row not wrapped, C remainder for negative values; zero gradient')
case('splitidx_histogram', _internal('_histogram', 'x', bin_cnt=4, range=(0, 5)),
     {'x': (2, 5)}, inputs={'x': const([[0, 1, 1, 2.5, 3], [4, 5, 5.5, -1, 10]])},
     phases=('infer',), grad_req='null', note='MXNet registers no gradient')
case('splitidx_histogram_bins', _internal('_histogram', 'x', 'y'), {'x': (9,), 'y': (5,)},
     inputs={'x': const([0, 1, 1, 2.5, 3, 4, 5, 5.5, -1]), 'y': const([0, 1, 2, 5, 6])},
     phases=('infer',), grad_req='null')
case('splitidx_selfatt_qk', _contrib('interleaved_matmul_selfatt_qk', 'x', heads=2),
     {'x': (4, 3, 2 * 3 * 5)})
case('splitidx_selfatt_valatt', _contrib('interleaved_matmul_selfatt_valatt', 'x', 'y',
                                          heads=2),
     {'x': (4, 3, 2 * 3 * 5), 'y': (3 * 2, 4, 4)})
case('splitidx_encdec_qk', _contrib('interleaved_matmul_encdec_qk', 'x', 'y', heads=3),
     {'x': (2, 2, 3 * 4), 'y': (5, 2, 3 * 2 * 4)})
case('splitidx_encdec_valatt', _contrib('interleaved_matmul_encdec_valatt', 'x', 'y',
                                        heads=3),
     {'x': (5, 2, 3 * 2 * 4), 'y': (2 * 3, 2, 5)})


def _la(opname):
    def build(mx):
        return getattr(mx.sym.linalg, opname)(mx.sym.Variable('x'), name='op')
    return build


_SYM = [[2.0, 0.3, -0.7, 0.1], [0.3, 1.1, 0.4, -0.2], [-0.7, 0.4, -1.5, 0.6],
        [0.1, -0.2, 0.6, 0.5]]
case('splitidx_gelqf', _la('gelqf'), {'x': (3, 5)}, type_dict={'x': 'float64'},
     rtol=1e-9, atol=1e-10)
case('splitidx_gelqf_batch', _la('gelqf'), {'x': (2, 2, 3)}, rtol=1e-4, atol=1e-5)
case('splitidx_syevd', _la('syevd'), {'x': (4, 4)}, inputs={'x': const(_SYM)},
     type_dict={'x': 'float64'}, rtol=1e-9, atol=1e-10)
case('splitidx_syevd_f32_batch', _la('syevd'), {'x': (2, 4, 4)},
     inputs={'x': const([_SYM, [[r * 0.5 + (i == j) for j, r in enumerate(row)]
                                for i, row in enumerate(_SYM)]])})
case('splitidx_syevd_lower', _la('syevd'), {'x': (3, 3)},
     inputs={'x': const([[1.0, 9.0, 9.0], [0.5, 2.0, 9.0], [-0.3, 0.2, 3.0]])},
     phases=('infer',), grad_req='null', note='which triangle syevd reads')


# straight-through estimators, gradient multiplier, index_array, allclose
_HALVES = const([[-1.5, -0.5, 0.5, 0.0], [1.5, 2.5, 0.2, -0.7], [3.49, -2.51, 7.0, -0.0]])
case('splitidx_round_ste', _contrib('round_ste', 'x'), {'x': (3, 4)}, inputs={'x': _HALVES})
case('splitidx_sign_ste', _contrib('sign_ste', 'x'), {'x': (3, 4)}, inputs={'x': _HALVES})
case('splitidx_gradientmultiplier', _contrib('gradientmultiplier', 'x', scalar=-2.5),
     {'x': (3, 4)})
case('splitidx_gradientmultiplier_f64', _contrib('gradientmultiplier', 'x', scalar=0.3),
     {'x': (2, 3)}, type_dict={'x': 'float64'}, rtol=1e-12, atol=1e-12)
case('splitidx_index_array', _contrib('index_array', 'x'), {'x': (2, 3)}, phases=('infer',),
     grad_req='null')
case('splitidx_index_array_axes', _contrib('index_array', 'x', axes=(2, -3)), {'x': (2, 3, 4)},
     phases=('infer',), grad_req='null')
def _allclose(**attrs):
    def build(mx):
        c = mx.sym.contrib.allclose(*_v(mx, 'x', 'y'), name='op', **attrs)
        # MXNet's output has shape (), which its asnumpy gives as (1,): reshaped to compare
        return mx.sym.reshape(c, shape=(1,), name='r')
    return build


case('splitidx_allclose', _allclose(rtol=0.5, atol=0.1), {'x': (2, 3), 'y': (2, 3)},
     inputs={'x': const([[1, 2, 3], [4, 5, 6]]), 'y': const([[1.2, 2.5, 4], [5, 6, 7]])},
     phases=('infer',), grad_req='null', note='true: within atol + rtol * |b|')
case('splitidx_allclose_false', _allclose(), {'x': (2, 3), 'y': (2, 3)},
     inputs={'x': const([[1, 2, 3], [4, 5, 6]]), 'y': const([[1, 2, 3], [4, 5, 6.001]])},
     phases=('infer',), grad_req='null')


# box coders (ops/detection.py)
def _box_encode(mx):
    names = ('samples', 'matches', 'anchors', 'refs', 'means', 'stds')
    return mx.sym.contrib.box_encode(*_v(mx, *names), name='op')


_ANCH = [[[0, 0, 2, 2], [1, 1, 4, 3], [2, 0, 5, 5]], [[0.5, 0.5, 1.5, 2], [1, 0, 2, 1],
                                                      [0, 0, 3, 3]]]
case('splitidx_box_encode', _box_encode,
     {'samples': (2, 3), 'matches': (2, 3), 'anchors': (2, 3, 4), 'refs': (2, 2, 4),
      'means': (4,), 'stds': (4,)},
     inputs={'samples': const([[1, -1, 1], [0, 1, 1]]), 'matches': const([[0, 1, 1], [1, 0, 1]]),
             'anchors': const(_ANCH),
             'refs': const([[[0.2, 0.1, 2.5, 1.8], [1, 2, 4, 4.5]],
                            [[0, 0.5, 1, 2.5], [0.5, 0.2, 3.5, 2]]]),
             'means': const([0.1, -0.1, 0.05, 0]), 'stds': const([0.1, 0.1, 0.2, 0.2])},
     note='zero gradients')
case('splitidx_box_decode', _contrib('box_decode', 'x', 'y', std0=0.1, std1=0.1, std2=2.0,
                                     std3=2.0, clip=1.0),
     {'x': (2, 3, 4), 'y': (1, 3, 4)},
     inputs={'y': const([[[1, 1, 2, 2], [3, 2, 1, 4], [0.5, 0.5, 1, 1]]])},
     note='center anchors; clip bounds the scaled size offsets (x > 0.5 reaches it)')
case('splitidx_box_decode_corner', _contrib('box_decode', 'x', 'y', format='corner'),
     {'x': (1, 3, 4), 'y': (1, 3, 4)}, inputs={'y': const([_ANCH[0]])})


# im2col / col2im (ops/im2col.py)
def _op1(opname, **attrs):
    def build(mx):
        return getattr(mx.sym, opname)(mx.sym.Variable('x'), name='op', **attrs)
    return build


case('splitidx_im2col', _op1('im2col', kernel=(2, 3), stride=(1, 2), pad=(1, 0)),
     {'x': (2, 3, 4, 6)})
case('splitidx_im2col_dilate', _op1('im2col', kernel=(3, 2), dilate=(2, 1), pad=(2, 1)),
     {'x': (1, 2, 5, 4)})
case('splitidx_col2im', _op1('col2im', output_size=(4, 6), kernel=(2, 3), stride=(1, 2),
                             pad=(1, 0)), {'x': (2, 18, 10)})
# no 1-D or 3-D cases: MXNet 1.9.1's CPU im2col fails on a 1-D kernel ("index = 3 must be
# in range [0, 3)") and col2im on a 3-D one ("new and old shape do not match")


# BatchNormWithReLU has no golden case: MXNet 1.9.1's CPU build registers no compute for it
# without oneDNN ("Neither FCompute nor FComputeEx registered") and crashes with oneDNN
# (segmentation fault in simple_bind/forward), so its values come from BatchNorm's golden
# cases plus relu (tests/ops/test_norm.py)


# PSROIPooling (ops/deformable.py)
_ROIS = const([[0, 0, 0, 4, 4], [0, 1, 1, 5, 3], [1, 2.5, 0.4, 7, 6.6], [1, 6, 6, 9, 9]])
case('splitidx_psroi', _contrib('PSROIPooling', 'x', 'y', spatial_scale=1.0, output_dim=2,
                                pooled_size=2), {'x': (2, 8, 6, 7), 'y': (4, 5)},
     inputs={'y': _ROIS}, note='the last roi lies partly outside the map')
case('splitidx_psroi_scale', _contrib('PSROIPooling', 'x', 'y', spatial_scale=0.5,
                                      output_dim=3, pooled_size=3, group_size=2),
     {'x': (2, 12, 5, 5), 'y': (4, 5)}, inputs={'y': _ROIS},
     note='group_size 2 with 3 bins per side')


# deformable convolutions (ops/deformable.py): offsets of a few pixels reach the borders
def _dconv(opname, names, **attrs):
    def build(mx):
        return getattr(mx.sym.contrib, opname)(*_v(mx, *names), name='op', **attrs)
    return build


case('splitidx_dconv', _dconv('DeformableConvolution', ('x', 'off', 'w', 'b'), kernel=(3, 3),
                              pad=(1, 1), num_filter=4),
     {'x': (2, 4, 5, 6), 'off': (2, 18, 5, 6), 'w': (4, 4, 3, 3), 'b': (4,)},
     inputs={'off': normal(1.5)}, phases=('infer',), grad_req='null',
     note="MXNet's CPU backward is 'only implemented in GPU'")
case('splitidx_dconv_groups', _dconv('DeformableConvolution', ('x', 'off', 'w'), kernel=(2, 3),
                                     stride=(2, 1), dilate=(1, 2), num_filter=4, num_group=2,
                                     num_deformable_group=2, no_bias=True),
     {'x': (1, 4, 6, 7), 'off': (1, 24, 3, 3), 'w': (4, 2, 2, 3)},
     inputs={'off': normal(2.0)}, phases=('infer',), grad_req='null')
case('splitidx_mdconv', _dconv('ModulatedDeformableConvolution', ('x', 'off', 'm', 'w', 'b'),
                               kernel=(3, 3), pad=(1, 1), num_filter=3),
     {'x': (2, 4, 5, 6), 'off': (2, 18, 5, 6), 'm': (2, 9, 5, 6), 'w': (3, 4, 3, 3),
      'b': (3,)}, inputs={'off': normal(1.5)}, phases=('infer',), grad_req='null',
     note="MXNet's CPU backward is 'only implemented in GPU'")
case('splitidx_mdconv_groups', _dconv('ModulatedDeformableConvolution',
                                      ('x', 'off', 'm', 'w'), kernel=(2, 2), stride=(2, 2),
                                      num_filter=4, num_group=2, num_deformable_group=2,
                                      no_bias=True),
     {'x': (1, 4, 6, 7), 'off': (1, 16, 3, 3), 'm': (1, 8, 3, 3), 'w': (4, 2, 2, 2)},
     inputs={'off': normal(2.0)}, phases=('infer',), grad_req='null')


# DeformablePSROIPooling (ops/deformable.py)
_DROIS = const([[0, 0, 0, 4, 4], [0, 1, 1, 5, 3], [1, 2.5, 0.4, 7, 6.6], [1, 5, 5, 9, 8]])
case('splitidx_dpsroi', _dconv('DeformablePSROIPooling', ('x', 'y', 't'), spatial_scale=1.0,
                               output_dim=2, group_size=2, pooled_size=2, trans_std=0.1),
     {'x': (2, 8, 6, 7), 'y': (4, 5), 't': (4, 2, 2, 2)}, inputs={'y': _DROIS,
                                                                 't': normal(1.0)})
case('splitidx_dpsroi_parts', _dconv('DeformablePSROIPooling', ('x', 'y', 't'),
                                     spatial_scale=0.5, output_dim=4, group_size=3,
                                     pooled_size=3, part_size=2, sample_per_part=2,
                                     trans_std=0.2),
     {'x': (2, 36, 5, 5), 'y': (4, 5), 't': (4, 4, 2, 2)}, inputs={'y': _DROIS,
                                                                  't': normal(1.0)},
     note='two classes of offsets, 2x2 parts for 3x3 bins, 4 samples per bin')


def _dpsroi_no_trans(mx):
    return mx.sym.contrib.DeformablePSROIPooling(
        data=mx.sym.Variable('x'), rois=mx.sym.Variable('y'), spatial_scale=1.0,
        output_dim=2, group_size=2, pooled_size=2, no_trans=True, name='op')


case('splitidx_dpsroi_no_trans', _dpsroi_no_trans, {'x': (2, 8, 6, 7), 'y': (4, 5)},
     inputs={'y': _DROIS})


# RROIAlign (ops/deformable.py)
_RROIS = const([[0, 3, 3, 4, 2, 30], [1, 2.2, 4.1, 5.5, 3.2, -60], [0, 6.5, 1, 4, 6, 135],
                [1, 0.5, 0.5, 2, 2, 0]])
case('splitidx_rroi', _dconv('RROIAlign', ('x', 'y'), pooled_size=(2, 3), spatial_scale=1.0),
     {'x': (2, 3, 6, 7), 'y': (4, 6)}, inputs={'y': _RROIS}, phases=('infer',),
     grad_req='null', note='adaptive sampling grid; rois partly outside the map; MXNet '
     'registers no gradient (binding one fails)')
case('splitidx_rroi_ratio', _dconv('RROIAlign', ('x', 'y'), pooled_size=(3, 2),
                                   spatial_scale=0.5, sampling_ratio=2),
     {'x': (2, 2, 5, 4), 'y': (4, 6)}, inputs={'y': _RROIS}, phases=('infer',),
     grad_req='null')


# image operators (ops/image.py); the random augmenters with min_factor == max_factor are
# deterministic
def _img(opname, **attrs):
    def build(mx):
        return getattr(mx.sym.image, opname)(mx.sym.Variable('x'), name='op', **attrs)
    return build


_PIX = ints(0, 256)
_U8 = {'x': 'uint8'}
case('splitidx_img_to_tensor', _img('to_tensor'), {'x': (4, 5, 3)}, inputs={'x': _PIX},
     note="gradient: MXNet's _copy of the head gradient (ours: the derivative, "
     "test_golden.MXNET_COPY_GRADIENT)")
case('splitidx_img_to_tensor_batch', _img('to_tensor'), {'x': (2, 3, 4, 1)}, inputs={'x': _PIX},
     type_dict=_U8, phases=('infer',), grad_req='null')
case('splitidx_img_normalize', _img('normalize', mean=(0.5, 0.4, 0.3), std=(0.2, 0.3, 0.4)),
     {'x': (3, 4, 5)})
case('splitidx_img_normalize_batch', _img('normalize', mean=0.5, std=0.25), {'x': (2, 1, 3, 4)})
case('splitidx_img_crop', _img('crop', x=1, y=2, width=3, height=2), {'x': (4, 5, 3)})
case('splitidx_img_crop_u8', _img('crop', x=0, y=1, width=4, height=3), {'x': (2, 4, 5, 3)},
     inputs={'x': _PIX}, type_dict=_U8, phases=('infer',), grad_req='null')
case('splitidx_img_flip_lr', _img('flip_left_right'), {'x': (4, 6, 3)},
     note="gradient: MXNet's _copy, not flipped (ours: the derivative, "
     "test_golden.MXNET_COPY_GRADIENT)")
case('splitidx_img_flip_tb', _img('flip_top_bottom'), {'x': (4, 5, 1)}, inputs={'x': _PIX},
     type_dict=_U8, phases=('infer',), grad_req='null')
case('splitidx_img_lighting', _img('adjust_lighting', alpha=(0.1, -0.2, 0.3)), {'x': (4, 5, 3)},
     inputs={'x': uniform(0, 255)})
case('splitidx_img_lighting_u8', _img('adjust_lighting', alpha=(1.5, -2.2, 0.3)),
     {'x': (4, 5, 3)}, inputs={'x': _PIX}, type_dict=_U8, phases=('infer',), grad_req='null',
     note='clamped to [0, 255]')
case('splitidx_img_resize', _img('resize', size=(3, 2)), {'x': (4, 5, 3)}, phases=('infer',),
     grad_req='null', note='MXNet registers no gradient for resize')
case('splitidx_img_resize_up_batch', _img('resize', size=(7, 6)), {'x': (2, 4, 5, 3)},
     phases=('infer',), grad_req='null')
case('splitidx_img_resize_keep_u8', _img('resize', size=(9, 6)), {'x': (4, 5, 3)},
     inputs={'x': _PIX}, type_dict=_U8, phases=('infer',), grad_req='null', atol=1.5,
     note='OpenCV fixed point: a few values next to the border may differ by 1')
case('splitidx_img_resize_nearest', _img('resize', size=6, keep_ratio=True, interp=0),
     {'x': (4, 5, 3)}, inputs={'x': _PIX}, type_dict=_U8, phases=('infer',),
     grad_req='null')
case('splitidx_img_brightness', _img('random_brightness', min_factor=1.3, max_factor=1.3),
     {'x': (4, 5, 3)}, inputs={'x': _PIX}, type_dict=_U8, phases=('infer',), grad_req='null')
case('splitidx_img_contrast', _img('random_contrast', min_factor=0.6, max_factor=0.6),
     {'x': (4, 5, 3)}, inputs={'x': uniform(0, 255)})
case('splitidx_img_saturation', _img('random_saturation', min_factor=1.7, max_factor=1.7),
     {'x': (4, 5, 3)}, inputs={'x': _PIX}, type_dict=_U8, phases=('infer',),
     grad_req='null', note="MXNet's gray is the blue channel times 0.114 only")
case('splitidx_img_hue', _img('random_hue', min_factor=0.15, max_factor=0.15),
     {'x': (4, 5, 3)}, inputs={'x': uniform(0, 255)}, phases=('infer',), grad_req='null',
     rtol=1e-3, atol=1e-3)
case('splitidx_img_hue_u8', _img('random_hue', min_factor=0.7, max_factor=0.7),
     {'x': (4, 5, 3)}, inputs={'x': _PIX}, type_dict=_U8, phases=('infer',), grad_req='null',
     atol=1.5, note='float rounding may move a truncated uint8 value by 1')
case('splitidx_img_lighting_zero', _img('random_lighting', alpha_std=0.0), {'x': (3, 4, 3)},
     phases=('infer',), grad_req='null', note='alpha_std 0: the image unchanged')


# calibrate_entropy (ops/calibrate.py): threshold exact, divergence to float32 rounding
def _calib_inputs(n, seed, nonzero=1.0):
    r = np.random.RandomState(seed)
    hist, _ = np.histogram(r.normal(size=20000), bins=n, range=(-4, 4))
    hist = hist * (r.uniform(size=n) < nonzero)
    return {'x': const(hist.astype(np.float32).tolist()),
            'y': const(np.linspace(-3, 3, n + 1).astype(np.float32).tolist())}


case('splitidx_calibrate', _dconv('calibrate_entropy', ('x', 'y'), num_quantized_bins=31),
     {'x': (513,), 'y': (514,)}, inputs=_calib_inputs(513, 1), phases=('infer',),
     grad_req='null', rtol=2e-5, atol=1e-6)
case('splitidx_calibrate_sparse', _dconv('calibrate_entropy', ('x', 'y')),
     {'x': (1001,), 'y': (1002,)}, inputs=_calib_inputs(1001, 2, 0.4), phases=('infer',),
     grad_req='null', rtol=2e-5, atol=1e-6)
