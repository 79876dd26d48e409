"""Golden cases of ops/rearrange.py, ops/shape.py, ops/slicing.py, ops/diagonal.py,
ops/reduce.py and ops/legacy.py: Pad, reverse, slice_like,
reshape_like, shape_array, size_array, depth_to_space, space_to_depth, diag, cumsum,
moments, Crop (Python 3.8 compatible)."""
from graphs_compute import case, op1, op2


def _pw(*spatial):
    return (0, 0, 0, 0) + tuple(spatial)


for _mode in ('constant', 'edge', 'reflect'):
    case('shapex_pad_%s' % _mode, op1('Pad', mode=_mode, pad_width=_pw(2, 1, 1, 3),
                                      constant_value=0.5),
         {'x': (2, 3, 4, 5)})
    case('shapex_pad_%s_5d' % _mode, op1('pad', mode=_mode, pad_width=_pw(1, 2, 0, 1, 2, 1)),
         {'x': (1, 2, 3, 4, 3)})
case('shapex_pad_edge_wide', op1('Pad', mode='edge', pad_width=_pw(4, 0, 1, 5)),
     {'x': (1, 2, 2, 3)}, note='edge padding wider than the axis')

case('shapex_reverse', op1('reverse', axis=1), {'x': (2, 3, 4)})
case('shapex_flip_tuple', op1('flip', axis=(0, 2)), {'x': (2, 3, 4)})
case('shapex_reverse_twice', op1('reverse', axis=(1, 1)), {'x': (2, 3)},
     note='an axis given twice is flipped back')

case('shapex_slice_like', op2('slice_like'), {'x': (4, 5, 3), 'y': (2, 3, 3)})
case('shapex_slice_like_axes', op2('slice_like', axes=(0, -1)), {'x': (4, 5, 6), 'y': (2, 7, 4)})
case('shapex_reshape_like', op2('reshape_like'), {'x': (2, 3, 4), 'y': (6, 4)})
case('shapex_reshape_like_ranges', op2('reshape_like', lhs_begin=1, lhs_end=3, rhs_begin=-1),
     {'x': (2, 3, 4), 'y': (5, 12)})

case('shapex_shape_array', op1('shape_array'), {'x': (2, 3, 4)}, phases=('fwd',))
case('shapex_size_array', op1('size_array'), {'x': (2, 3, 4)}, phases=('fwd',))


def _scaled_by_size(mx):
    x = mx.sym.Variable('x')
    return mx.sym.broadcast_mul(x, mx.sym.cast(mx.sym.size_array(x), 'float32'), name='op')


case('shapex_size_array_in_graph', _scaled_by_size, {'x': (2, 3)},
     note='size_array adds no gradient of its own')

case('shapex_depth_to_space', op1('depth_to_space', block_size=2), {'x': (2, 8, 2, 3)})
case('shapex_space_to_depth', op1('space_to_depth', block_size=3), {'x': (1, 2, 3, 6)})

case('shapex_diag_make', op1('diag', k=-1), {'x': (3,)})
case('shapex_diag_extract', op1('diag', k=1), {'x': (3, 4)})
case('shapex_diag_axes', op1('diag', k=1, axis1=-1, axis2=0), {'x': (3, 2, 4)})

case('shapex_cumsum_flat', op1('cumsum'), {'x': (2, 3, 2)})
case('shapex_cumsum_axis', op1('cumsum', axis=1), {'x': (2, 3, 4)})
case('shapex_cumsum_f64', op1('cumsum', axis=0, dtype='float64'), {'x': (4, 3)},
     note='float64 output and accumulator from float32 data')

case('shapex_moments', op1('moments', axes=(1,)), {'x': (2, 3, 4)})
case('shapex_moments_keepdims', op1('moments', axes=(2, 0), keepdims=True), {'x': (2, 3, 4)})

case('shapex_crop_hw', op1('Crop', num_args=1, h_w=(2, 3), offset=(1, 2)), {'x': (2, 2, 5, 6)})
case('shapex_crop_center', op1('Crop', num_args=1, h_w=(3, 2), center_crop=True),
     {'x': (1, 2, 6, 5)})
case('shapex_crop_like', op2('Crop', offset=(2, 1)), {'x': (2, 2, 5, 6), 'y': (1, 3, 3, 4)})
case('shapex_crop_like_center', op2('Crop', center_crop=True),
     {'x': (1, 2, 5, 6), 'y': (2, 1, 2, 2)})
