"""Golden cases of the legacy operators (ops/legacy.py) from MXNet 1.9.1."""
from graphs_compute import case, op1, lam
from graphs import normal, uniform

_X4 = (2, 3, 6, 5)
case('legacy_conv_v1', op1('Convolution_v1', kernel=(3, 3), num_filter=4, pad=(1, 0),
                           stride=(2, 1)), {'x': _X4})
case('legacy_conv_v1_group_nobias', op1('Convolution_v1', kernel=(2, 2), num_filter=4,
                                        num_group=2, no_bias=True, dilate=(2, 1)),
     {'x': (2, 4, 5, 5)})
case('legacy_conv_v1_f64', op1('Convolution_v1', kernel=(3, 3), num_filter=2),
     {'x': (1, 2, 5, 5)}, type_dict={'x': 'float64'}, rtol=1e-10, atol=1e-12)
case('legacy_pool_v1_max', op1('Pooling_v1', kernel=(3, 3), stride=(2, 2)), {'x': _X4})
case('legacy_pool_v1_avg_pad_full', op1('Pooling_v1', kernel=(2, 3), stride=(2, 2),
                                        pad=(1, 1), pool_type='avg',
                                        pooling_convention='full'), {'x': _X4})
case('legacy_pool_v1_sum', op1('Pooling_v1', kernel=(2, 2), pool_type='sum'), {'x': _X4})
case('legacy_pool_v1_global_avg', op1('Pooling_v1', kernel=(1, 1), global_pool=True,
                                      pool_type='avg'), {'x': _X4})


def _bn1(**attrs):
    def build(mx):
        return mx.sym.BatchNorm_v1(mx.sym.Variable('x'), name='bn', **attrs)
    return build


_bn_in = {'bn_gamma': uniform(0.5, 1.5), 'bn_beta': normal(0.5),
          'bn_moving_mean': normal(0.3), 'bn_moving_var': uniform(0.5, 1.5),
          'x': normal(2.0)}
case('legacy_bn_v1_fix_gamma', _bn1(), {'x': (4, 3, 2, 5)}, inputs=_bn_in, steps=3,
     phases=('train', 'infer'), note='moving stats are updated in backward')
case('legacy_bn_v1_free_gamma', _bn1(fix_gamma=False, momentum=0.8, eps=1e-5),
     {'x': (4, 3, 2, 5)}, inputs=_bn_in, steps=2, phases=('train', 'infer'))
case('legacy_bn_v1_2d_mean_var', _bn1(fix_gamma=False, output_mean_var=True), {'x': (6, 3)},
     inputs=_bn_in, steps=2, phases=('train', 'infer'), note="'var' is the variance")
case('legacy_bn_v1_global_stats', _bn1(fix_gamma=False, use_global_stats=True),
     {'x': (3, 2, 2, 3)}, inputs=_bn_in, steps=2, phases=('train', 'infer'))
case('legacy_identity_like_rhs',
     lam(lambda mx, x, y: mx.sym._internal._identity_with_attr_like_rhs(x, y, name='op')),
     {'x': (3, 4), 'y': (3, 4)})
case('legacy_scatter_plus_scalar',
     lam(lambda mx, x, y: mx.sym._internal._scatter_plus_scalar(x, scalar=2.5) * y),
     {'x': (3, 4), 'y': (3, 4)})
case('legacy_scatter_minus_scalar',
     lam(lambda mx, x, y: mx.sym._internal._scatter_minus_scalar(x, scalar=1.5) * y),
     {'x': (3, 4), 'y': (3, 4)})
case('legacy_scatter_elemwise_div',
     lam(lambda mx, x, y: mx.sym._internal._scatter_elemwise_div(x, y, name='op')),
     {'x': (3, 4), 'y': (3, 4)}, inputs={'y': uniform(0.5, 2.0)})
case('legacy_grad_add', lam(lambda mx, x, y: mx.sym._internal._grad_add(x, y, name='op')),
     {'x': (3, 4), 'y': (3, 4)}, phases=('infer',), grad_req='null')
case('legacy_slice_assign',
     lam(lambda mx, x, y: mx.sym._internal._slice_assign(x, y, begin=(1, None),
                                                         end=(3, None), step=(1, 2))),
     {'x': (4, 5), 'y': (2, 3)}, phases=('infer',), grad_req='null')
case('legacy_crop_assign_scalar',
     lam(lambda mx, x, y: mx.sym._internal._crop_assign_scalar(x, scalar=7, begin=(0, -3),
                                                               end=(2, None)) + y),
     {'x': (4, 5), 'y': (4, 5)}, phases=('infer',), grad_req='null')
case('legacy_kl_sparse_reg',
     op1('IdentityAttachKLSparseReg', sparseness_target=0.2, penalty=0.01, momentum=0.7),
     {'x': (4, 3)}, inputs={'x': uniform(0.1, 0.9), 'op_moving_avg': uniform(0.3, 0.6)},
     steps=2, phases=('train', 'infer'), note='moving_avg is updated in backward')
case('legacy_kl_sparse_reg_default_aux', op1('IdentityAttachKLSparseReg', penalty=0.01),
     {'x': (3, 5)}, inputs={'x': uniform(0.1, 0.9)}, steps=1,
     note='moving_avg starts at 0 and the penalty uses the updated average')
