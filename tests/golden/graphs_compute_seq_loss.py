"""Golden cases of the sequence operators, smooth_l1, softmax_cross_entropy, SVMOutput
(ops/loss.py), hard_sigmoid (ops/nn.py), softmin (ops/softmax.py) and GroupNorm
(ops/norm_layers.py); MXNet 1.9.1 values."""
from graphs_compute import case, op1, op2, lam
from graphs import const, ints, normal, uniform

_NO_LEN = {'x': 'write', 'y': 'null'}


def _seq(opname, **attrs):
    def build(mx):
        return getattr(mx.sym, opname)(mx.sym.Variable('x'), mx.sym.Variable('y'),
                                       use_sequence_length=True, name='op', **attrs)
    return build


for _op in ('SequenceMask', 'SequenceLast', 'SequenceReverse'):
    _nm = 'seqloss_' + _op[len('Sequence'):].lower()
    case(_nm + '_full', op1(_op), {'x': (4, 3, 2)})
    case(_nm + '_len', _seq(_op), {'x': (5, 3, 2), 'y': (3,)},
         inputs={'y': const([2, 5, 1])}, grad_req=_NO_LEN)
case('seqloss_mask_value_axis1', _seq('SequenceMask', value=-2.5, axis=1),
     {'x': (3, 4, 2), 'y': (3,)}, inputs={'y': const([4, 0, 2.6])}, grad_req=_NO_LEN,
     note='length 0 masks everything; 2.6 truncates to 2')
case('seqloss_last_axis1', _seq('SequenceLast', axis=1), {'x': (3, 4, 2), 'y': (3,)},
     inputs={'y': const([4, 1, 3])}, grad_req=_NO_LEN)
case('seqloss_last_full_axis1', op1('SequenceLast', axis=1), {'x': (3, 4)})
case('seqloss_reverse_len_zero', _seq('SequenceReverse'), {'x': (4, 3), 'y': (3,)},
     inputs={'y': const([0, 3, 4])}, grad_req=_NO_LEN)
case('seqloss_seq_int32_len', _seq('SequenceMask'), {'x': (4, 3), 'y': (3,)},
     inputs={'y': const([1, 4, 2])}, grad_req=_NO_LEN, type_dict={'x': 'float32', 'y': 'int32'})

case('seqloss_smooth_l1', op1('smooth_l1'), {'x': (3, 4, 5)}, inputs={'x': normal(2.0)})
case('seqloss_smooth_l1_sigma', op1('smooth_l1', scalar=2.0), {'x': (3, 4, 5)})
case('seqloss_hard_sigmoid', op1('hard_sigmoid'), {'x': (3, 4, 5)}, inputs={'x': normal(3.0)})
case('seqloss_hard_sigmoid_ab', op1('hard_sigmoid', alpha=0.4, beta=0.3), {'x': (3, 4, 5)})
case('seqloss_softmin', op1('softmin'), {'x': (3, 4, 5)})
case('seqloss_softmin_axis_temp', op1('softmin', axis=1, temperature=0.7), {'x': (3, 4, 5)})
case('seqloss_softmin_f64', op1('softmin', axis=0, dtype='float64'), {'x': (3, 4)})
case('seqloss_sce', op2('softmax_cross_entropy'), {'x': (4, 5), 'y': (4,)},
     inputs={'y': ints(0, 5)}, grad_req=_NO_LEN, note='MXNet refuses a label gradient')
case('seqloss_sce_graph',
     lam(lambda mx, x, y: mx.sym.softmax_cross_entropy(x * 2, y, name='op') * 0.5),
     {'x': (6, 3), 'y': (6,)}, inputs={'y': const([0, 2, 1, 1, 2, 0])}, grad_req=_NO_LEN)


def _svm(**attrs):
    def build(mx):
        return mx.sym.SVMOutput(mx.sym.Variable('x'), name='svm', **attrs)
    return build


case('seqloss_svm_l2', _svm(), {'x': (4, 5)}, inputs={'svm_label': ints(0, 5)},
     heads='none')
case('seqloss_svm_l1', _svm(use_linear=True), {'x': (4, 5)},
     inputs={'svm_label': ints(0, 5)}, heads='none')
case('seqloss_svm_params', _svm(margin=0.4, regularization_coefficient=2.5),
     {'x': (6, 3)}, inputs={'svm_label': const([0, 2, 5, -1, 1, 1])}, heads='none',
     note='labels out of range match no class')
case('seqloss_svm_nd', _svm(use_linear=True, margin=0.2), {'x': (2, 3, 4)},
     inputs={'svm_label': ints(0, 4)}, heads='none')


def _gn(**attrs):
    def build(mx):
        return mx.sym.GroupNorm(mx.sym.Variable('x'), name='gn', **attrs)
    return build


_GN_IN = {'gn_gamma': uniform(0.5, 1.5), 'gn_beta': normal()}
case('seqloss_groupnorm', _gn(), {'x': (2, 4, 3)}, inputs=_GN_IN)
case('seqloss_groupnorm_groups', _gn(num_groups=2), {'x': (3, 4, 2, 3)}, inputs=_GN_IN)
case('seqloss_groupnorm_mean_std', _gn(num_groups=3, eps=1e-3, output_mean_var=True),
     {'x': (2, 6, 5)}, inputs=_GN_IN, note='mean and std get random head gradients too')
