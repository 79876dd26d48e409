"""Forward/backward golden cases: one graph per operator mode (see ``graphs.Case``).

Shared by ``make_graphs.py`` (real MXNet) and ``test_golden.py`` (symgraph); builders take
``mx`` as their only argument.  Python 3.8 compatible.
"""
import numpy as np

from graphs import Case, const, ints, normal, uniform, register_custom_ops

COMPUTE_CASES = []


def case(name, build, shapes, **kw):
    """Append a :class:`graphs.Case` to :data:`COMPUTE_CASES`."""
    COMPUTE_CASES.append(Case(name, build, shapes, **kw))


def _x(mx):
    return mx.sym.Variable('x')


def _xy(mx):
    return mx.sym.Variable('x'), mx.sym.Variable('y')


def op1(opname, **attrs):
    """Builder of ``mx.sym.<opname>(x, **attrs)`` (dotted names reach contrib)."""
    def build(mx):
        f = mx.sym
        for part in opname.split('.'):
            f = getattr(f, part)
        return f(_x(mx), name='op', **attrs)
    return build


def op2(opname, **attrs):
    """Builder of ``mx.sym.<opname>(x, y, **attrs)``."""
    def build(mx):
        x, y = _xy(mx)
        return getattr(mx.sym, opname)(x, y, name='op', **attrs)
    return build


def lam(fn):
    """Builder of ``fn(mx, x, y)`` for operator-overloading expressions."""
    def build(mx):
        x, y = _xy(mx)
        return fn(mx, x, y)
    return build


S23 = (2, 3)
S345 = (3, 4, 5)

# ---------------------------------------------------------------------------
# elementwise, scalar and broadcast arithmetic, comparisons

_pos = uniform(0.5, 2.0)
for nm, fn in [('add', lambda mx, x, y: x + y), ('sub', lambda mx, x, y: x - y),
               ('mul', lambda mx, x, y: x * y), ('div', lambda mx, x, y: x / y),
               ('mod', lambda mx, x, y: x % y), ('pow', lambda mx, x, y: x ** y),
               ('maximum', lambda mx, x, y: mx.sym.maximum(x, y)),
               ('minimum', lambda mx, x, y: mx.sym.minimum(x, y))]:
    case('elemwise_' + nm, lam(fn), {'x': S345, 'y': S345},
         inputs={'x': _pos, 'y': _pos} if nm in ('div', 'mod', 'pow') else {})

for nm, fn in [('add', lambda mx, x, y: x + 1.5), ('radd', lambda mx, x, y: 2 + x),
               ('sub', lambda mx, x, y: x - 1), ('rsub', lambda mx, x, y: 1.5 - x),
               ('mul', lambda mx, x, y: x * 3), ('rmul', lambda mx, x, y: 0.5 * x),
               ('div', lambda mx, x, y: x / 4), ('rdiv', lambda mx, x, y: 2 / x),
               ('mod', lambda mx, x, y: x % 0.7), ('rmod', lambda mx, x, y: 3 % x),
               ('pow', lambda mx, x, y: x ** 3), ('rpow', lambda mx, x, y: 2 ** x),
               ('neg', lambda mx, x, y: -x),
               ('max', lambda mx, x, y: mx.sym.maximum(x, 0.3)),
               ('rmin', lambda mx, x, y: mx.sym.minimum(0.2, x))]:
    case('scalar_' + nm, lambda mx, fn=fn: fn(mx, _x(mx), None), {'x': S345},
         inputs={'x': _pos} if nm in ('rdiv', 'mod', 'rmod') else {})

_tie = ints(-2, 3)
for nm, fn in [('eq', lambda mx, x, y: x == y), ('ne', lambda mx, x, y: x != y),
               ('gt', lambda mx, x, y: x > y), ('ge', lambda mx, x, y: x >= y),
               ('lt', lambda mx, x, y: x < y), ('le', lambda mx, x, y: x <= y),
               ('eq_scalar', lambda mx, x, y: (x == 1) + (x > 0) + (0 >= x) + y),
               ('ne_scalar', lambda mx, x, y: (x != 1) * (x <= 1) * (x < 2) + y)]:
    case('compare_' + nm, lam(fn), {'x': S345, 'y': S345}, inputs={'x': _tie, 'y': _tie})

for nm in ['add', 'sub', 'mul', 'div', 'mod', 'power', 'maximum', 'minimum',
           'equal', 'not_equal', 'greater', 'greater_equal', 'lesser', 'lesser_equal',
           'hypot']:
    positive = nm in ('div', 'mod', 'power')
    case('broadcast_' + nm, op2('broadcast_' + nm), {'x': (2, 1, 5), 'y': (1, 3, 5)},
         inputs={'x': _pos, 'y': _pos} if positive else (
             {'x': _tie, 'y': _tie} if 'equal' in nm or 'less' in nm or 'great' in nm
             else {}))
case('broadcast_add_rank', op2('broadcast_add'), {'x': (3, 1), 'y': (2, 1, 4)})
case('broadcast_to', op1('broadcast_to', shape=(2, 3, 4)), {'x': (2, 1, 4)})
case('broadcast_to_zero', op1('broadcast_to', shape=(0, 3, 0)), {'x': (2, 1, 4)})
case('broadcast_axis', op1('broadcast_axis', axis=(0, 2), size=(3, 2)), {'x': (1, 4, 1)})
case('broadcast_like', op2('broadcast_like'), {'x': (1, 4, 1), 'y': (3, 4, 2)})

# ---------------------------------------------------------------------------
# dense layers and activations

case('fc_flatten', op1('FullyConnected', num_hidden=5), {'x': (3, 2, 4)})
case('fc_no_flatten', op1('FullyConnected', num_hidden=5, flatten=False), {'x': (3, 2, 4)})
case('fc_no_bias', op1('FullyConnected', num_hidden=4, no_bias=True), {'x': (3, 7)})
for act in ['relu', 'sigmoid', 'tanh', 'softrelu', 'softsign']:
    case('activation_' + act, op1('Activation', act_type=act), {'x': S345})
case('leaky', op1('LeakyReLU', act_type='leaky', slope=0.2), {'x': S345})
case('leaky_elu', op1('LeakyReLU', act_type='elu', slope=0.7), {'x': S345})
case('leaky_selu', op1('LeakyReLU', act_type='selu'), {'x': S345})
case('leaky_gelu', op1('LeakyReLU', act_type='gelu'), {'x': S345}, rtol=1e-3, atol=1e-4,
     note='gelu uses erf; different erf implementations')
case('leaky_prelu', op1('LeakyReLU', act_type='prelu'), {'x': (2, 3, 4, 5)},
     inputs={'op_gamma': uniform(0.1, 0.5)})
case('leaky_prelu_2d', op1('LeakyReLU', act_type='prelu'), {'x': (4, 3)},
     inputs={'op_gamma': uniform(0.1, 0.5)})
case('leaky_rrelu_infer', op1('LeakyReLU', act_type='rrelu', lower_bound=0.1,
                              upper_bound=0.3), {'x': S345}, phases=('infer',),
     ignore_outputs=(1,),
     note='rrelu is random in training; inference uses the mean slope; its visible mask '
     'output is left uninitialised by MXNet in inference')

# ---------------------------------------------------------------------------
# losses and output layers


def _softmax_out(**attrs):
    def build(mx):
        return mx.sym.SoftmaxOutput(_x(mx), name='sm', **attrs)
    return build


case('softmax_output', _softmax_out(), {'x': (4, 5)}, inputs={'sm_label': ints(0, 5)},
     heads='none')
case('softmax_output_scale_smooth', _softmax_out(grad_scale=0.5, smooth_alpha=0.1),
     {'x': (4, 5)}, inputs={'sm_label': ints(0, 5)}, heads='none')
case('softmax_output_batch', _softmax_out(normalization='batch'), {'x': (4, 5)},
     inputs={'sm_label': ints(0, 5)}, heads='none')
case('softmax_output_ignore_valid', _softmax_out(use_ignore=True, ignore_label=2,
                                                 normalization='valid'),
     {'x': (6, 4)}, inputs={'sm_label': const([2, 0, 2, 3, 1, 2])}, heads='none')
case('softmax_output_ignore_off', _softmax_out(ignore_label=2, normalization='valid'),
     {'x': (6, 4)}, inputs={'sm_label': const([2, 0, 2, 3, 1, 2])}, heads='none',
     note='ignore_label acts only with use_ignore=True')
for norm in ['null', 'batch', 'valid']:
    case('softmax_output_multi_' + norm,
         _softmax_out(multi_output=True, normalization=norm, use_ignore=True,
                      ignore_label=0),
         {'x': (2, 4, 3, 5)}, inputs={'sm_label': ints(0, 4)}, heads='none')
case('softmax_output_preserve', _softmax_out(preserve_shape=True), {'x': (2, 3, 4)},
     inputs={'sm_label': ints(0, 4)}, heads='none')
case('softmax_activation_instance', op1('SoftmaxActivation'), {'x': (3, 5)})
case('softmax_activation_channel', op1('SoftmaxActivation', mode='channel'),
     {'x': (2, 4, 3, 2)})


def _regression(opname, **attrs):
    def build(mx):
        return getattr(mx.sym, opname)(_x(mx), name='reg', **attrs)
    return build


for nm in ['LinearRegressionOutput', 'LogisticRegressionOutput', 'MAERegressionOutput']:
    case(nm, _regression(nm), {'x': (4, 3, 2)}, heads='none')
    case(nm + '_scale', _regression(nm, grad_scale=0.3), {'x': (5, 3)}, heads='none')
for norm in ['null', 'batch', 'valid']:
    case('makeloss_' + norm, op1('MakeLoss', normalization=norm, grad_scale=0.7,
                                 valid_thresh=0.2),
         {'x': (4, 5)}, inputs={'x': uniform(-1, 1)}, heads='none')
case('makeloss_expr', lambda mx: mx.sym.MakeLoss(mx.sym.square(_x(mx) - 1)), {'x': S23},
     heads='none')
case('blockgrad', lam(lambda mx, x, y: mx.sym.BlockGrad(x) * y + x), {'x': S23, 'y': S23})
case('stop_gradient', lam(lambda mx, x, y: mx.sym.stop_gradient(x * y) + x * y),
     {'x': S23, 'y': S23})
case('loss_and_blockgrad_heads_none',
     lam(lambda mx, x, y: mx.sym.Group([mx.sym.MakeLoss(x * y), mx.sym.BlockGrad(x)])),
     {'x': S23, 'y': S23}, heads='none')

# ---------------------------------------------------------------------------
# shape manipulation

for nm, shp, kw in [('flatten', (2, 3, 4), {}),
                    ('reshape_0_m1', (2, 3, 4), {'shape': (0, -1)}),
                    ('reshape_m2', (2, 3, 4), {'shape': (-2,)}),
                    ('reshape_m3', (2, 3, 4, 5), {'shape': (-3, -2)}),
                    ('reshape_m4', (6, 5), {'shape': (-4, 2, -1, -2)}),
                    ('reshape_m4_last', (2, 15), {'shape': (0, -4, -1, 5)}),
                    ('reshape_reverse', (2, 3, 4), {'shape': (-1, 0), 'reverse': True}),
                    ('transpose', (2, 3, 4), {}),
                    ('transpose_axes', (2, 3, 4, 5), {'axes': (2, 0, 3, 1)}),
                    ('SwapAxis', (2, 3, 4), {'dim1': 0, 'dim2': 2}),
                    ('expand_dims', (2, 3), {'axis': 1}),
                    ('expand_dims_neg', (2, 3), {'axis': -1}),
                    ('squeeze', (2, 1, 3, 1), {}),
                    ('squeeze_axis', (2, 1, 3, 1), {'axis': 1}),
                    ('slice', (5, 6, 4), {'begin': (1, 4, 0), 'end': (4, None, None),
                                          'step': (2, -1, None)}),
                    # begin None with a negative step starts at the end: an empty result
                    ('slice_empty', (5, 6, 4), {'begin': (1, None, 0), 'end': (4, 5, None),
                                                'step': (2, -1, None)}),
                    ('slice_neg', (5, 6), {'begin': (-4, 1), 'end': (-1, None)}),
                    ('slice_axis', (5, 6, 4), {'axis': 1, 'begin': -4, 'end': None}),
                    ('slice_axis_0', (5, 6), {'axis': 0, 'begin': 1, 'end': 3}),
                    ('tile', (2, 3), {'reps': (2, 1, 3)}),
                    ('repeat', (2, 3), {'repeats': 3, 'axis': 1}),
                    ('repeat_flat', (2, 3), {'repeats': 2}),
                    ('clip', S345, {'a_min': -0.5, 'a_max': 0.7}),
                    ('zeros_like', S23, {}), ('ones_like', S23, {}),
                    ('Cast', S23, {'dtype': 'float64'}),
                    ('Cast_int', S23, {'dtype': 'int32'})]:
    opname = {'flatten': 'Flatten', 'slice_neg': 'slice', 'slice_empty': 'slice',
              'slice_axis_0': 'slice_axis',
              'repeat_flat': 'repeat', 'Cast_int': 'Cast', 'squeeze_axis': 'squeeze',
              'transpose_axes': 'transpose', 'expand_dims_neg': 'expand_dims',
              'reshape_m4_last': 'Reshape'}.get(nm, nm)
    if nm.startswith('reshape'):
        opname = 'Reshape'
    case(nm, op1(opname, **kw), {'x': shp},
         inputs={'x': normal(3.0)} if nm == 'Cast_int' else {},
         phases=('fwd',) if nm == 'Cast_int' else ('train',))


def _concat(dim):
    def build(mx):
        a, b, c = [mx.sym.Variable(n) for n in 'abc']
        return mx.sym.Concat(a, b, c, dim=dim, name='cat')
    return build


case('concat_1', _concat(1), {'a': (2, 3, 4), 'b': (2, 1, 4), 'c': (2, 2, 4)})
case('concat_0', _concat(0), {'a': (2, 3), 'b': (1, 3), 'c': (3, 3)})
case('concat_neg', _concat(-1), {'a': (2, 3), 'b': (2, 1), 'c': (2, 4)})
case('stack', lambda mx: mx.sym.stack(*_xy(mx), axis=1, name='st'), {'x': S23, 'y': S23})
case('stack_last', lambda mx: mx.sym.stack(*_xy(mx), axis=-1), {'x': S23, 'y': S23})
case('slice_channel', op1('SliceChannel', num_outputs=3, axis=1), {'x': (2, 6, 5)})
case('slice_channel_squeeze', op1('SliceChannel', num_outputs=3, axis=2,
                                  squeeze_axis=True), {'x': (2, 4, 3)})
case('split_partial_use', lambda mx: mx.sym.split(_x(mx), num_outputs=3, axis=0)[1] * 2,
     {'x': (6, 2)})

# ---------------------------------------------------------------------------
# indexing


def _take(**attrs):
    def build(mx):
        return mx.sym.take(_x(mx), mx.sym.Variable('idx'), name='take', **attrs)
    return build


_nograd_idx = {'x': 'write', 'idx': 'null'}
case('take', _take(), {'x': (5, 3), 'idx': (2, 3)}, inputs={'idx': ints(0, 5)},
     grad_req=_nograd_idx)
case('take_axis1_wrap', _take(axis=1, mode='wrap'), {'x': (2, 4, 3), 'idx': (5,)},
     inputs={'idx': const([0, -1, 5, 3, 9])}, grad_req=_nograd_idx)
case('take_clip', _take(mode='clip'), {'x': (4, 3), 'idx': (4,)},
     inputs={'idx': const([-2, 0, 7, 2])}, grad_req=_nograd_idx)
case('embedding', lambda mx: mx.sym.Embedding(mx.sym.Variable('idx'), input_dim=6,
                                              output_dim=4, name='emb'),
     {'idx': (2, 5)}, inputs={'idx': const([[0, 1, 5, 1, 3], [3, 3, 2, 0, 4]])},
     grad_req={'idx': 'null', 'emb_weight': 'write'})
case('one_hot', lambda mx: mx.sym.one_hot(_x(mx), depth=5, on_value=2.0, off_value=-1.0)
     + mx.sym.Variable('y'), {'x': (2, 3), 'y': (2, 3, 5)},
     inputs={'x': const([[0, 4, 2], [1, 7, -1]])}, grad_req={'x': 'null', 'y': 'write'})
case('pick', lambda mx: mx.sym.pick(_x(mx), mx.sym.Variable('idx'), axis=1),
     {'x': (3, 4), 'idx': (3,)}, inputs={'idx': const([0, 3, 1])}, grad_req=_nograd_idx)
case('pick_keepdims_wrap', lambda mx: mx.sym.pick(_x(mx), mx.sym.Variable('idx'), axis=0,
                                                  keepdims=True, mode='wrap'),
     {'x': (3, 4), 'idx': (4,)}, inputs={'idx': const([0, -1, 4, 2])}, grad_req=_nograd_idx)
case('where', lambda mx: mx.sym.where(mx.sym.Variable('c'), *_xy(mx)),
     {'c': S345, 'x': S345, 'y': S345}, inputs={'c': ints(0, 2)})
case('argmax', op1('argmax', axis=1), {'x': (3, 5, 2)}, phases=('fwd',))
case('argmax_keepdims', op1('argmax', axis=-1, keepdims=True), {'x': (3, 5)},
     phases=('fwd',))
case('argmin', op1('argmin', axis=0), {'x': (3, 5)}, phases=('fwd',))
for typ in ['value', 'indices', 'both', 'mask']:
    case('topk_' + typ, op1('topk', k=2, axis=1, ret_typ=typ), {'x': (3, 5, 2)},
         phases=('fwd',) if typ in ('indices', 'mask') else ('train',))
case('topk_ascend_last', op1('topk', k=3, is_ascend=True), {'x': (2, 6)})
case('topk_axis_none', op1('topk', k=4, axis=None, ret_typ='both'), {'x': (3, 4)})

# ---------------------------------------------------------------------------
# reductions and linear algebra

for nm in ['sum', 'mean', 'max', 'min', 'prod', 'norm']:
    case('reduce_%s_all' % nm, op1(nm), {'x': S345},
         inputs={'x': uniform(0.5, 1.5)} if nm == 'prod' else {})
    case('reduce_%s_axis' % nm, op1(nm, axis=1), {'x': S345})
    kw = {'axis': (0, 2), 'keepdims': True}
    case('reduce_%s_keepdims' % nm, op1(nm, **kw), {'x': S345})
    if nm != 'norm':
        case('reduce_%s_exclude' % nm, op1(nm, axis=1, exclude=True), {'x': S345})
case('norm_ord1', op1('norm', ord=1, axis=-1), {'x': S345})
case('sum_neg_axis', op1('sum', axis=-2), {'x': S345})
case('nansum', op1('nansum', axis=0), {'x': S345})

case('dot', op2('dot'), {'x': (3, 4), 'y': (4, 5)})
case('dot_ta', op2('dot', transpose_a=True), {'x': (4, 3), 'y': (4, 5)})
case('dot_tb', op2('dot', transpose_b=True), {'x': (3, 4), 'y': (5, 4)})
case('dot_tab', op2('dot', transpose_a=True, transpose_b=True), {'x': (4, 3), 'y': (5, 4)})
case('dot_vec', op2('dot'), {'x': (5,), 'y': (5,)})
case('dot_nd', op2('dot'), {'x': (2, 3, 4), 'y': (4, 5)})
case('batch_dot', op2('batch_dot'), {'x': (2, 3, 4), 'y': (2, 4, 5)})
case('batch_dot_ta', op2('batch_dot', transpose_a=True), {'x': (2, 4, 3), 'y': (2, 4, 5)})
case('batch_dot_tb', op2('batch_dot', transpose_b=True), {'x': (2, 3, 4), 'y': (2, 5, 4)})
case('batch_dot_tab', op2('batch_dot', transpose_a=True, transpose_b=True),
     {'x': (2, 4, 3), 'y': (2, 5, 4)})
for nm in ['softmax', 'log_softmax']:
    case(nm, op1(nm), {'x': S345})
    case(nm + '_axis0', op1(nm, axis=0), {'x': S345})
    case(nm + '_temp', op1(nm, axis=1, temperature=2.5), {'x': S345})

# ---------------------------------------------------------------------------
# unary math

_UNARY_DOMAIN = {
    'sqrt': uniform(0.5, 3), 'rsqrt': uniform(0.5, 3), 'log': uniform(0.5, 3),
    'log10': uniform(0.5, 3), 'log2': uniform(0.5, 3), 'gamma': uniform(0.5, 3),
    'gammaln': uniform(0.5, 3), 'log1p': uniform(-0.5, 2), 'arcsin': uniform(-0.9, 0.9),
    'arccos': uniform(-0.9, 0.9), 'arctanh': uniform(-0.9, 0.9),
    'erfinv': uniform(-0.9, 0.9), 'arccosh': uniform(1.2, 3),
    'reciprocal': uniform(0.5, 2), 'rcbrt': uniform(0.5, 2), 'cbrt': uniform(0.3, 2),
    'tan': uniform(-1, 1),
}
for nm in ['abs', 'sign', 'round', 'rint', 'ceil', 'floor', 'trunc', 'fix', 'sqrt', 'rsqrt',
           'cbrt', 'rcbrt', 'square', 'exp', 'log', 'log10', 'log2', 'log1p', 'expm1', 'sin',
           'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh', 'arcsinh',
           'arccosh', 'arctanh', 'degrees', 'radians', 'reciprocal', 'negative', 'relu',
           'sigmoid', 'softsign', 'gamma', 'gammaln', 'erf', 'erfinv']:
    loose = nm in ('gamma', 'gammaln', 'erf', 'erfinv')
    case('unary_' + nm, op1(nm), {'x': S345}, inputs={'x': _UNARY_DOMAIN.get(nm, normal())},
         rtol=1e-3 if loose else 1e-4, atol=1e-4 if loose else 1e-5,
         note='special functions: implementations differ in the last bits' if loose else '')

# the worked example of docs/operators.md: contrib.quadratic in float32, float16 and float64
case('unary_quadratic', op1('contrib.quadratic', a=0.3, b=-1.1, c=2.0), {'x': (3, 4)})
case('unary_quadratic_f16', op1('contrib.quadratic', a=0.3, b=-1.1, c=2.0), {'x': (2, 5)},
     type_dict={'x': 'float16'}, rtol=2e-3, atol=2e-3, note='float16 results')
case('unary_quadratic_f64', op1('contrib.quadratic', a=0.3), {'x': (2, 3)},
     type_dict={'x': 'float64'}, rtol=1e-12, atol=1e-12)

# ---------------------------------------------------------------------------
# convolution, deconvolution, pooling, upsampling


def _conv(opname, **attrs):
    def build(mx):
        return getattr(mx.sym, opname)(_x(mx), name='conv', **attrs)
    return build


_CONV_TOL = dict(rtol=1e-4, atol=1e-4)
case('conv1d', _conv('Convolution', kernel=(3,), num_filter=4, pad=(2,), stride=(2,)),
     {'x': (2, 3, 11)}, **_CONV_TOL)
case('conv2d_odd', _conv('Convolution', kernel=(3, 5), num_filter=5, stride=(2, 1),
                         pad=(2, 3)), {'x': (2, 3, 9, 7)}, **_CONV_TOL)
case('conv2d_dilate_stride', _conv('Convolution', kernel=(3, 3), num_filter=3,
                                   dilate=(2, 2), stride=(2, 3), pad=(1, 2)),
     {'x': (2, 2, 11, 10)}, **_CONV_TOL)
case('conv2d_groups', _conv('Convolution', kernel=(3, 3), num_filter=6, num_group=2,
                            pad=(1, 1)), {'x': (2, 4, 7, 6)}, **_CONV_TOL)
case('conv2d_depthwise', _conv('Convolution', kernel=(3, 3), num_filter=8, num_group=4,
                               stride=(2, 2)), {'x': (2, 4, 7, 8)}, **_CONV_TOL)
case('conv2d_no_bias', _conv('Convolution', kernel=(2, 3), num_filter=3, no_bias=True),
     {'x': (1, 2, 5, 6)}, **_CONV_TOL)
case('conv3d', _conv('Convolution', kernel=(2, 3, 2), num_filter=2, pad=(1, 0, 1)),
     {'x': (1, 2, 4, 5, 3)}, **_CONV_TOL)
case('deconv2d', _conv('Deconvolution', kernel=(3, 3), stride=(2, 2), num_filter=4),
     {'x': (2, 3, 5, 4)}, **_CONV_TOL)
case('deconv2d_adj', _conv('Deconvolution', kernel=(3, 4), stride=(2, 3), pad=(1, 1),
                           adj=(1, 2), num_filter=3, no_bias=False),
     {'x': (2, 2, 4, 3)}, **_CONV_TOL)
case('deconv2d_target', _conv('Deconvolution', kernel=(3, 3), stride=(2, 2),
                              target_shape=(10, 9), num_filter=2),
     {'x': (1, 3, 5, 4)}, **_CONV_TOL)
case('deconv2d_groups', _conv('Deconvolution', kernel=(3, 3), num_group=2, num_filter=6,
                              no_bias=False, pad=(1, 0)), {'x': (2, 4, 4, 5)}, **_CONV_TOL)
case('deconv1d', _conv('Deconvolution', kernel=(4,), stride=(3,), num_filter=2, pad=(1,)),
     {'x': (2, 3, 5)}, **_CONV_TOL)

_POOL = [
    ('max_valid', {'kernel': (3, 2), 'stride': (2, 2), 'pool_type': 'max'}),
    ('max_full', {'kernel': (3, 3), 'stride': (2, 2), 'pool_type': 'max',
                  'pooling_convention': 'full', 'pad': (1, 0)}),
    ('avg_valid_pad', {'kernel': (3, 3), 'stride': (2, 1), 'pool_type': 'avg',
                       'pad': (1, 1)}),
    ('avg_valid_pad_excl', {'kernel': (3, 3), 'stride': (2, 1), 'pool_type': 'avg',
                            'pad': (1, 1), 'count_include_pad': False}),
    ('avg_full', {'kernel': (3, 2), 'stride': (2, 2), 'pool_type': 'avg',
                  'pooling_convention': 'full'}),
    ('avg_full_pad', {'kernel': (3, 3), 'stride': (2, 2), 'pool_type': 'avg',
                      'pooling_convention': 'full', 'pad': (1, 1)}),
    ('avg_full_pad_excl', {'kernel': (3, 3), 'stride': (2, 2), 'pool_type': 'avg',
                           'pooling_convention': 'full', 'pad': (1, 1),
                           'count_include_pad': False}),
    ('sum', {'kernel': (2, 3), 'stride': (1, 2), 'pool_type': 'sum', 'pad': (1, 1)}),
    ('global_max', {'kernel': (1, 1), 'global_pool': True, 'pool_type': 'max'}),
    ('global_avg', {'kernel': (2, 2), 'global_pool': True, 'pool_type': 'avg'}),
]
for nm, kw in _POOL:
    case('pool_' + nm, _conv('Pooling', **kw), {'x': (2, 3, 9, 7)})
case('pool_1d_avg', _conv('Pooling', kernel=(3,), stride=(2,), pool_type='avg', pad=(1,)),
     {'x': (2, 3, 10)})
case('pool_1d_max_full', _conv('Pooling', kernel=(2,), stride=(2,), pool_type='max',
                               pooling_convention='full'), {'x': (2, 3, 9)})
case('pool_3d_max', _conv('Pooling', kernel=(2, 2, 2), stride=(2, 1, 2), pool_type='max'),
     {'x': (1, 2, 4, 3, 5)})
case('upsampling_nearest', _conv('UpSampling', scale=2, sample_type='nearest'),
     {'x': (2, 3, 3, 4)})


def _ups_two(mode):
    def build(mx):
        return mx.sym.UpSampling(mx.sym.Variable('a'), mx.sym.Variable('b'), scale=2,
                                 sample_type='nearest', num_args=2, multi_input_mode=mode,
                                 name='up')
    return build


case('upsampling_concat', _ups_two('concat'), {'a': (1, 2, 2, 4), 'b': (1, 3, 1, 2)},
     note='b is upsampled to the size of a times scale (factor 4)')
case('upsampling_sum', _ups_two('sum'), {'a': (1, 2, 2, 4), 'b': (1, 2, 1, 2)})
for nm, kw, shape in (
        ('size', dict(height=5, width=7), (2, 3, 3, 4)),
        ('size_noalign', dict(height=5, width=7, align_corners=False), (2, 3, 3, 4)),
        ('down_noalign', dict(height=3, width=2, align_corners=False), (1, 2, 7, 5)),
        ('scale', dict(scale_height=2.0, scale_width=0.5), (1, 2, 3, 5)),
        ('odd_scale', dict(mode='odd_scale', scale_height=2.0, scale_width=3.0), (1, 2, 3, 4)),
        ('to_odd_up', dict(mode='to_odd_up'), (1, 2, 4, 5))):
    case('bilinear_resize_' + nm, op1('contrib.BilinearResize2D', **kw), {'x': shape})


def _resize_like(mx):
    return mx.sym.contrib.BilinearResize2D(mx.sym.Variable('x'), mx.sym.Variable('y'),
                                           mode='like', name='op')


case('bilinear_resize_like', _resize_like, {'x': (2, 2, 3, 4), 'y': (2, 1, 6, 5)})

# ---------------------------------------------------------------------------
# normalisation


def _bn(**attrs):
    def build(mx):
        return mx.sym.BatchNorm(_x(mx), name='bn', **attrs)
    return build


_bn_in = {'bn_gamma': uniform(0.5, 1.5), 'bn_beta': normal(0.5),
          'bn_moving_mean': normal(0.3), 'bn_moving_var': uniform(0.5, 1.5),
          'x': normal(2.0)}
_BN_NOTE = 'moving stats after 3 training forwards, then an inference forward'
case('batchnorm_fix_gamma', _bn(), {'x': (4, 3, 2, 5)}, inputs=_bn_in, steps=3,
     phases=('train', 'infer'), note=_BN_NOTE)
case('batchnorm_free_gamma', _bn(fix_gamma=False, momentum=0.8, eps=1e-5),
     {'x': (4, 3, 2, 5)}, inputs=_bn_in, steps=3, phases=('train', 'infer'), note=_BN_NOTE)
case('batchnorm_global_stats', _bn(fix_gamma=False, use_global_stats=True),
     {'x': (4, 3, 5)}, inputs=_bn_in, steps=2, phases=('train', 'infer'))
case('batchnorm_default_aux', _bn(fix_gamma=False), {'x': (5, 4)},
     inputs={'bn_gamma': uniform(0.5, 1.5)}, steps=3, phases=('train', 'infer'),
     note='aux arrays keep the zeros simple_bind gives them (moving_var too)')
case('batchnorm_axis_last', _bn(fix_gamma=False, axis=-1), {'x': (3, 4, 5)},
     inputs=_bn_in, steps=3, phases=('train', 'infer'))
case('batchnorm_axis1_2d', _bn(fix_gamma=False, axis=1), {'x': (6, 3)},
     inputs=_bn_in, steps=2, phases=('train', 'infer'))
case('batchnorm_output_mean_var', _bn(fix_gamma=False, output_mean_var=True),
     {'x': (4, 3, 5)}, inputs=_bn_in, phases=('train', 'infer'))
case('instancenorm', lambda mx: mx.sym.InstanceNorm(_x(mx), eps=1e-3, name='inorm'),
     {'x': (2, 3, 4, 5)}, inputs={'inorm_gamma': uniform(0.5, 1.5),
                                  'inorm_beta': normal()})
case('layernorm', lambda mx: mx.sym.LayerNorm(_x(mx), name='ln'), {'x': (3, 4, 5)},
     inputs={'ln_gamma': uniform(0.5, 1.5), 'ln_beta': normal()})
case('layernorm_axis1_mean_std',
     lambda mx: mx.sym.LayerNorm(_x(mx), axis=1, eps=1e-3, output_mean_var=True, name='ln'),
     {'x': (3, 4, 5)}, inputs={'ln_gamma': uniform(0.5, 1.5), 'ln_beta': normal()})
for mode in ['instance', 'channel', 'spatial']:
    case('l2norm_' + mode, op1('L2Normalization', mode=mode, eps=1e-8), {'x': (2, 3, 4, 5)})
case('lrn', op1('LRN', nsize=3, alpha=0.001, beta=0.75, knorm=2.0), {'x': (2, 5, 3, 4)},
     inputs={'x': normal(3.0)})
case('dropout_infer', op1('Dropout', p=0.5), {'x': S345}, phases=('infer',))

# ---------------------------------------------------------------------------
# detection


def _boxes(rows):
    return const(np.asarray(rows, dtype=np.float32)[None])


# [id, score, x1, y1, x2, y2]; rows 0/1 tie in score, row 4 is invalid (id -1),
# row 6 has a score below valid_thresh
_NMS_ROWS = [[0, 0.9, 0.0, 0.0, 2.0, 2.0],
             [1, 0.9, 0.1, 0.1, 2.1, 2.0],
             [0, 0.8, 0.2, 0.0, 2.2, 2.1],
             [1, 0.75, 3.0, 3.0, 4.0, 5.0],
             [-1, 0.95, 0.0, 0.0, 2.0, 2.0],
             [0, 0.6, 3.1, 3.0, 4.1, 5.2],
             [1, 0.05, 0.0, 0.0, 1.0, 1.0],
             [2, 0.7, 0.0, 0.1, 2.0, 2.0]]
_NMS_IN = {'x': _boxes(_NMS_ROWS)}
for nm, kw in [('default', {'overlap_thresh': 0.5}),
               ('id_index', {'overlap_thresh': 0.5, 'id_index': 0, 'valid_thresh': 0.1}),
               ('force_suppress', {'overlap_thresh': 0.5, 'id_index': 0,
                                   'force_suppress': True}),
               ('topk', {'overlap_thresh': 0.5, 'topk': 3, 'id_index': 0}),
               ('background', {'overlap_thresh': 0.5, 'id_index': 0, 'background_id': 0,
                               'valid_thresh': 0.1}),
               ('center', {'overlap_thresh': 0.3, 'in_format': 'center',
                           'out_format': 'corner'}),
               ('center_out', {'overlap_thresh': 0.3, 'out_format': 'center',
                               'id_index': 0})]:
    case('box_nms_' + nm, op1('contrib.box_nms', **kw), {'x': (1, 8, 6)}, inputs=_NMS_IN)
case('box_nms_batch', op1('contrib.box_nms', overlap_thresh=0.4, coord_start=1,
                          score_index=0), {'x': (2, 5, 5)}, inputs={'x': uniform(0, 3)})
case('box_iou', lambda mx: mx.sym.contrib.box_iou(*_xy(mx)), {'x': (3, 4), 'y': (2, 5, 4)},
     inputs={'x': const([[0, 0, 2, 2], [1, 1, 3, 4], [0, 0, 0, 0]]),
             'y': lambda rng, shape: np.sort(rng.uniform(0, 4, (2, 5, 2, 2)), axis=2)
             .transpose(0, 1, 3, 2).reshape(shape).astype(np.float32)},
     phases=('fwd',))
case('box_iou_center', lambda mx: mx.sym.contrib.box_iou(*_xy(mx), format='center'),
     {'x': (3, 4), 'y': (4, 4)}, inputs={'x': uniform(0.5, 3), 'y': uniform(0.5, 3)},
     phases=('fwd',))
_ROIS = const([[0, 1, 1, 10, 8], [1, 0, 0, 13, 15], [0, 4.5, 2.2, 7.3, 9.9]])
case('roi_pooling', lambda mx: mx.sym.ROIPooling(_x(mx), mx.sym.Variable('rois'),
                                                 pooled_size=(2, 3), spatial_scale=0.5),
     {'x': (2, 3, 8, 7), 'rois': (3, 5)}, inputs={'rois': _ROIS},
     grad_req={'x': 'write', 'rois': 'null'})
for nm, kw in [('', {}), ('_aligned', {'aligned': True}), ('_adaptive', {'sample_ratio': -1})]:
    kw = dict(kw)
    kw.setdefault('sample_ratio', 2)
    case('roi_align' + nm,
         lambda mx, kw=kw: mx.sym.contrib.ROIAlign(_x(mx), mx.sym.Variable('rois'),
                                                   pooled_size=(2, 3), spatial_scale=0.5,
                                                   **kw),
         {'x': (2, 3, 8, 7), 'rois': (3, 5)}, inputs={'rois': _ROIS},
         grad_req={'x': 'write', 'rois': 'null'})

# ---------------------------------------------------------------------------
# whole graphs, grad_req, Custom


def _mlp(mx):
    data = mx.sym.Variable('data')
    h = mx.sym.FullyConnected(data, num_hidden=7, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=3, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


case('mlp_train', _mlp, {'data': (5, 11)}, inputs={'softmax_label': ints(0, 3)},
     heads='none', phases=('train', 'infer'))


def _fc_tanh(mx):
    return mx.sym.tanh(mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=4, name='fc'))


case('grad_req_add', _fc_tanh, {'x': (3, 5)}, grad_req='add', steps=2,
     note='gradients accumulate over two backward calls from the zeros of simple_bind')
case('grad_req_null_some', _fc_tanh, {'x': (3, 5)},
     grad_req={'x': 'null', 'fc_weight': 'write', 'fc_bias': 'null'})
case('grad_req_mixed_add', _fc_tanh, {'x': (3, 5)}, steps=2,
     grad_req={'x': 'add', 'fc_weight': 'write', 'fc_bias': 'add'})
case('fanout_sum', lam(lambda mx, x, y: x * y + mx.sym.sin(x) * x + y),
     {'x': S23, 'y': S23}, note='gradient sums on fan-out')


def _custom_mul(mx):
    register_custom_ops(mx)
    x, w = _xy(mx)
    return mx.sym.Custom(x, w, op_type='golden_scaled_mul', scale=1.5, name='cmul')


def _custom_softmax(mx):
    register_custom_ops(mx)
    h = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
    return mx.sym.Custom(h, mx.sym.Variable('label'), op_type='golden_softmax',
                         grad_scale=0.5, name='csm')


case('custom_scaled_mul', _custom_mul, {'x': (3, 4), 'y': (3, 4)}, steps=2, custom=True,
     phases=('train', 'infer'), note='aux count: 2 training forwards')
case('custom_scaled_mul_add', _custom_mul, {'x': (2, 5), 'y': (2, 5)}, steps=2, custom=True,
     grad_req={'x': 'add', 'y': 'write'},
     note="the custom op sees req 'add' for x (bound with add) and 'write' for y")
case('custom_softmax_loss', _custom_softmax, {'data': (4, 6), 'label': (4,)},
     inputs={'label': ints(0, 4)}, heads='none', custom=True,
     grad_req={'data': 'write', 'fc_weight': 'write', 'fc_bias': 'write', 'label': 'null'})

# ---------------------------------------------------------------------------
# linear algebra (mx.sym.linalg): well-conditioned inputs; the triangle an operator does
# not read (trmm/trsm/potri, and potrf's upper one) holds unrelated numbers


def _la(opname, *names, **attrs):
    """Builder of ``mx.sym.linalg.<opname>(<variables names>, **attrs)`` named 'op'."""
    def build(mx):
        return getattr(mx.sym.linalg, opname)(*[mx.sym.Variable(n) for n in names],
                                              name='op', **attrs)
    return build


def _la_triangular(lower=True):
    """Triangular factors, diagonal magnitude in [1.5, 2.5], junk in the other triangle."""
    def make(rng, shape):
        n = shape[-1]
        a = rng.uniform(-0.5, 0.5, shape)
        a[..., np.arange(n), np.arange(n)] = (rng.uniform(1.5, 2.5, shape[:-1])
                                              * rng.choice([-1, 1], shape[:-1]))
        a = np.tril(a) if lower else np.triu(a)
        junk = rng.uniform(-3, 3, shape)
        return (a + (np.triu(junk, 1) if lower else np.tril(junk, -1))).astype(np.float32)
    return make


def _la_spd(junk_upper=False):
    """Symmetric positive definite ``M M^T / n + I`` (upper triangle junk if asked)."""
    def make(rng, shape):
        m = rng.uniform(-1, 1, shape)
        a = np.matmul(m, np.swapaxes(m, -1, -2)) / shape[-1] + np.eye(shape[-1])
        if junk_upper:
            a = np.tril(a) + np.triu(rng.uniform(-3, 3, shape), 1)
        return a.astype(np.float32)
    return make


def _la_nonsingular(rng, shape):
    """``D (R + 2.5 I)`` with a random +-1 diagonal D: some determinants negative."""
    a = rng.uniform(-0.5, 0.5, shape) + 2.5 * np.eye(shape[-1])
    return (a * rng.choice([-1.0, 1.0], shape[:-1])[..., None]).astype(np.float32)


def _la_positive_diag(rng, shape):
    a = rng.uniform(-1, 1, shape)
    n = shape[-1]
    a[..., np.arange(n), np.arange(n)] = rng.uniform(0.5, 2.0, shape[:-1])
    return a.astype(np.float32)


_F64 = {'x': 'float64', 'y': 'float64'}
case('linalg_gemm', _la('gemm', 'x', 'y', 'z'), {'x': (3, 4), 'y': (4, 5), 'z': (3, 5)})
case('linalg_gemm_trans_alpha_beta', _la('gemm', 'x', 'y', 'z', transpose_a=True,
                                         transpose_b=True, alpha=0.7, beta=-1.5),
     {'x': (2, 4, 3), 'y': (2, 5, 4), 'z': (2, 3, 5)})
case('linalg_gemm_axis0', _la('gemm', 'x', 'y', 'z', transpose_b=True, axis=0),
     {'x': (3, 2, 4), 'y': (5, 2, 4), 'z': (3, 2, 5)})
case('linalg_gemm2', lambda mx: mx.sym.linalg.gemm2(*_xy(mx)), {'x': (2, 3, 4), 'y': (2, 4, 5)},
     note='unnamed: MXNet names the node gemm20')
case('linalg_gemm2_alias', lambda mx: mx.sym.linalg_gemm2(*_xy(mx), transpose_a=True),
     {'x': (4, 3), 'y': (4, 5)}, note='unnamed: MXNet names the node linalg_gemm20')
case('linalg_gemm2_ta_alpha', _la('gemm2', 'x', 'y', transpose_a=True, alpha=-0.5),
     {'x': (2, 2, 4, 3), 'y': (2, 2, 4, 5)})
case('linalg_gemm2_axis1_tb', _la('gemm2', 'x', 'y', transpose_b=True, axis=1),
     {'x': (2, 3, 6, 4), 'y': (2, 5, 6, 4)})
case('linalg_gemm2_f64', _la('gemm2', 'x', 'y', alpha=0.3), {'x': (3, 4), 'y': (4, 2)},
     type_dict=_F64, rtol=1e-10, atol=1e-12, note='float64 with alpha=0.3 (not a float)')
case('linalg_syrk', _la('syrk', 'x'), {'x': (3, 4)})
case('linalg_syrk_trans_alpha', _la('syrk', 'x', transpose=True, alpha=-1.5), {'x': (2, 3, 4)})
for _tr in (False, True):
    for _rs in (False, True):
        for _lo in (False, True):
            _kw = dict(transpose=_tr, rightside=_rs, lower=_lo,
                       alpha=-0.5 if _tr == _rs else 1.5)
            _nm = '%s%s%s' % ('_t' if _tr else '', '_right' if _rs else '',
                              '_lower' if _lo else '_upper')
            _sh = {'x': (2, 3, 3), 'y': (2, 4, 3) if _rs else (2, 3, 4)}
            for _op in ('trmm', 'trsm'):
                case('linalg_' + _op + _nm, _la(_op, 'x', 'y', **_kw), _sh,
                     inputs={'x': _la_triangular(_lo)})
case('linalg_trsm_f64', _la('trsm', 'x', 'y', alpha=0.3), {'x': (4, 4), 'y': (4, 3)},
     inputs={'x': _la_triangular()}, type_dict=_F64, rtol=1e-10, atol=1e-12)
case('linalg_potrf', _la('potrf', 'x'), {'x': (3, 3)}, inputs={'x': _la_spd()},
     note='MXNet gives the symmetric gradient, that of potrf((A + A^T) / 2)')
case('linalg_potrf_junk_upper', _la('potrf', 'x'), {'x': (2, 4, 4)},
     inputs={'x': _la_spd(junk_upper=True)},
     note='only the lower triangle is read; the gradient is still the symmetric one')
case('linalg_potrf_f64', _la('potrf', 'x'), {'x': (2, 3, 3)}, inputs={'x': _la_spd()},
     type_dict={'x': 'float64'}, rtol=1e-9, atol=1e-11)
case('linalg_potri', _la('potri', 'x'), {'x': (2, 3, 3)}, inputs={'x': _la_triangular()})
case('linalg_potri_single', _la('potri', 'x'), {'x': (4, 4)}, inputs={'x': _la_triangular()})
for _op in ('inverse', 'det', 'slogdet'):
    case('linalg_' + _op, _la(_op, 'x'), {'x': (2, 3, 3)}, inputs={'x': _la_nonsingular})
    case('linalg_%s_single' % _op, _la(_op, 'x'), {'x': (4, 4)},
         inputs={'x': _la_nonsingular}, note='one matrix: det and slogdet give shape (1,)')
case('linalg_sumlogdiag', _la('sumlogdiag', 'x'), {'x': (2, 3, 3)},
     inputs={'x': _la_positive_diag})
case('linalg_sumlogdiag_single', _la('sumlogdiag', 'x'), {'x': (3, 3)},
     inputs={'x': _la_positive_diag})
for _off in (0, 2, -1):
    _nm = str(_off).replace('-', 'm')
    case('linalg_extractdiag_' + _nm, _la('extractdiag', 'x', offset=_off), {'x': (2, 4, 4)})
    case('linalg_makediag_' + _nm, _la('makediag', 'x', offset=_off), {'x': (2, 3)})
for _off, _lo in ((0, True), (0, False), (1, True), (-2, False)):
    _nm = '%s_%s' % (str(_off).replace('-', 'm'), 'lower' if _lo else 'upper')
    case('linalg_extracttrian_' + _nm, _la('extracttrian', 'x', offset=_off, lower=_lo),
         {'x': (2, 4, 4)})
    case('linalg_maketrian_' + _nm, _la('maketrian', 'x', offset=_off, lower=_lo),
         {'x': (2, 6)})


def _gp_nll(mx):
    """A Gaussian-process style graph: K = X X^T + D, L = potrf(K), z = L^-1 y,
    sumlogdiag(L) + 0.5 * sum(z^2)."""
    x, y, d = mx.sym.Variable('x'), mx.sym.Variable('y'), mx.sym.Variable('d')
    low = mx.sym.linalg.potrf(mx.sym.linalg.syrk(x, alpha=0.5) + d)
    z = mx.sym.linalg.trsm(low, y)
    return mx.sym.linalg.sumlogdiag(low) + 0.5 * mx.sym.sum(mx.sym.square(z))


case('linalg_gp_nll', _gp_nll, {'x': (4, 3), 'y': (4, 2), 'd': (4, 4)},
     inputs={'d': const(2.0 * np.eye(4))}, note='potrf, trsm, sumlogdiag and syrk chained')

# more families live in graphs_compute_<family>.py modules, which call case() too
def _load_family_modules():
    import glob
    import importlib
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, 'graphs_compute_*.py'))):
        importlib.import_module(os.path.splitext(os.path.basename(path))[0])


_load_family_modules()
_names = [c.name for c in COMPUTE_CASES]
assert len(_names) == len(set(_names)), 'duplicate golden case names'
