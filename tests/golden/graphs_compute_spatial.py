"""Golden cases of the spatial transformer family: GridGenerator, BilinearSampler,
SpatialTransformer (grids that cross the image border, so zero padding is exercised)."""
import numpy as np

from graphs_compute import case, op1, op2
from graphs import const, normal, uniform


def _theta(scale=1.0, noise=0.4):
    """Affine matrices near ``scale * identity`` (row-major 2x3), float32."""
    def make(rng, shape):
        base = np.array([scale, 0, 0, 0, scale, 0], dtype=np.float64)
        return (base + rng.uniform(-noise, noise, shape)).astype(np.float32)
    return make


def _grid_sample(transform_type, **attrs):
    """BilinearSampler(x, GridGenerator(y)): gradients reach the grid's source."""
    def build(mx):
        grid = mx.sym.GridGenerator(mx.sym.Variable('y'), transform_type=transform_type,
                                    name='grid', **attrs)
        return mx.sym.BilinearSampler(mx.sym.Variable('x'), grid, name='op')
    return build


def _st(**attrs):
    def build(mx):
        return mx.sym.SpatialTransformer(mx.sym.Variable('x'), mx.sym.Variable('y'),
                                         transform_type='affine', sampler_type='bilinear',
                                         name='op', **attrs)
    return build


case('spatial_grid_affine', op1('GridGenerator', transform_type='affine',
                                target_shape=(3, 4)), {'x': (2, 6)})
case('spatial_grid_affine_wide', op1('GridGenerator', transform_type='affine',
                                     target_shape=(5, 2)), {'x': (1, 6)})
case('spatial_grid_warp', op1('GridGenerator', transform_type='warp'), {'x': (2, 2, 3, 5)},
     inputs={'x': normal(2.0)})
case('spatial_sampler', op2('BilinearSampler'), {'x': (2, 3, 4, 5), 'y': (2, 2, 3, 6)},
     inputs={'y': uniform(-1.3, 1.3)}, note='grid crosses the border: zeros outside')
case('spatial_sampler_up', op2('BilinearSampler', cudnn_off=True),
     {'x': (1, 2, 3, 3), 'y': (1, 2, 7, 8)}, inputs={'y': uniform(-1.2, 1.2)})
case('spatial_sampler_far', op2('BilinearSampler'), {'x': (2, 1, 5, 4), 'y': (2, 2, 4, 4)},
     inputs={'y': uniform(-3.0, 3.0)}, note='many positions entirely outside the image')
case('spatial_sampler_f64', op2('BilinearSampler'), {'x': (1, 2, 4, 6), 'y': (1, 2, 5, 3)},
     inputs={'y': uniform(-1.3, 1.3)}, type_dict={'x': 'float64', 'y': 'float64'},
     rtol=1e-10, atol=1e-12)
case('spatial_affine_then_sample', _grid_sample('affine', target_shape=(4, 6)),
     {'x': (2, 3, 5, 5), 'y': (2, 6)}, inputs={'y': _theta(1.1)})
case('spatial_warp_then_sample', _grid_sample('warp'), {'x': (2, 2, 4, 5), 'y': (2, 2, 4, 5)},
     inputs={'y': normal(1.5)}, note='flow in pixels, some positions leave the image')
case('spatial_transformer', _st(target_shape=(4, 5)), {'x': (2, 3, 5, 6), 'y': (2, 6)},
     inputs={'y': _theta(1.1)})
case('spatial_transformer_zoom', _st(target_shape=(6, 3), cudnn_off=False),
     {'x': (1, 2, 4, 4), 'y': (1, 6)}, inputs={'y': _theta(1.6, 0.3)},
     note='zoomed out: the border of the output samples outside the image')
case('spatial_transformer_f64', _st(target_shape=(3, 4)), {'x': (2, 1, 4, 5), 'y': (2, 6)},
     inputs={'y': _theta(0.9)}, type_dict={'x': 'float64', 'y': 'float64'},
     rtol=1e-10, atol=1e-12)

# Correlation (FlowNet): products and absolute differences, strides, padding, kernels
for _nm, _kw, _shape in (
        ('default', {}, (2, 3, 5, 6)),
        ('k3_d2_pad', dict(kernel_size=3, max_displacement=2, pad_size=2), (1, 2, 6, 7)),
        ('strides', dict(kernel_size=1, max_displacement=3, stride1=2, stride2=2,
                         pad_size=3), (2, 3, 7, 9)),
        ('stride2_only', dict(max_displacement=4, stride2=3, pad_size=4), (1, 2, 5, 5)),
        ('k3_s1_3', dict(kernel_size=3, max_displacement=1, stride1=3, pad_size=1),
         (1, 2, 8, 7)),
        ('abs', dict(is_multiply=False), (2, 2, 4, 5)),
        ('abs_k3_pad', dict(kernel_size=3, max_displacement=2, stride2=2, pad_size=3,
                            is_multiply=False), (1, 3, 5, 6))):
    case('spatial_correlation_' + _nm, op2('Correlation', **_kw), {'x': _shape, 'y': _shape})
case('spatial_correlation_f64', op2('Correlation', kernel_size=3, max_displacement=2,
                                    pad_size=2, is_multiply=False),
     {'x': (1, 2, 4, 5), 'y': (1, 2, 4, 5)}, type_dict={'x': 'float64', 'y': 'float64'},
     rtol=1e-10, atol=1e-12)


def _corr_same(mx):
    x = mx.sym.Variable('x')
    return mx.sym.Correlation(x, x, max_displacement=1, pad_size=1, is_multiply=False,
                              name='op')


case('spatial_correlation_abs_same_input', _corr_same, {'x': (1, 2, 4, 4)},
     note='|a - b| with a == b at displacement 0: the gradient takes a >= b as positive')
# grid positions exactly on pixel centres and on the border: the one-sided gradients
_ON_GRID = np.array([[-1.0, -0.5, 0.0, 0.5, 1.0, 1.0], [-1.0, 0.0, 1.0, -1.0, 0.5, 1.0],
                     [-1.5, 1.5, 0.25, -0.25, 0.0, -1.0]] * 2).reshape(1, 2, 3, 6)
case('spatial_sampler_on_pixel_centres', op2('BilinearSampler'),
     {'x': (1, 2, 3, 5), 'y': (1, 2, 3, 6)}, inputs={'y': const(_ON_GRID)},
     note='x positions 0, 1, 2, 3, 4 (last column), y rows 0, 1, 2: integer positions')
