"""Golden cases of index-driven and contrib operators (ops/gather_scatter.py, ops/indexing.py,
ops/dot.py, ops/unary.py, ops/init.py, ops/resize.py): gather_nd, scatter_nd, batch_take,
pick's alias choose_element_0index, khatri_rao and the contrib index_copy, div_sqrt_dim,
arange_like and AdaptiveAvgPooling2D. fill_element_0index has none: MXNet 1.9.1's symbol
function cannot compose it ("Not enough argument to call operator fill_element_0index").
Python 3.8 compatible."""
from graphs_compute import case, op1, op2
from graphs import const


def _v(mx, *names):
    return [mx.sym.Variable(n) for n in names]


def _contrib(opname, *names, **attrs):
    def build(mx):
        return getattr(mx.sym.contrib, opname)(*_v(mx, *names), name='op', **attrs)
    return build


# gather_nd: MXNet's backward does not wrap negative indices (it writes out of bounds), so
# the training cases use non-negative ones and negative / fractional ones run forward only
case('idxx_gather_nd', op2('gather_nd'), {'x': (2, 3, 4), 'y': (2, 5)},
     inputs={'y': const([[1, 0, 1, 0.7, 1], [2, 0, 2, 1.5, 1]])},
     note='repeated indices: the gradient accumulates')
case('idxx_gather_nd_full', op2('gather_nd'), {'x': (2, 3, 4), 'y': (3, 2, 2)},
     inputs={'y': const([[[0, 1], [1, 1]], [[2, 0], [2, 2]], [[3, 0], [3, 1]]])})
case('idxx_gather_nd_negative', op2('gather_nd'), {'x': (2, 3, 4), 'y': (2, 4)},
     inputs={'y': const([[-1, -2, -0.5, 0.9], [-3, 2, -1, -2.5]])}, phases=('infer',),
     grad_req='null', note='negative indices count from the end, then truncate')
case('idxx_scatter_nd', op2('scatter_nd', shape=(3, 4, 2)), {'x': (5, 2), 'y': (2, 5)},
     inputs={'y': const([[0, 2, 1, 2, 0], [1, 3, 0, 0, 2.9]])},
     note="fractional 3.9 would fail in MXNet's backward (gather_nd's float check)")
case('idxx_scatter_nd_fraction', op2('scatter_nd', shape=(3, 4, 2)), {'x': (5, 2), 'y': (2, 5)},
     inputs={'y': const([[0, 2, 1, 2, 0.5], [1, 3, 0, 0, 3.9]])}, phases=('infer',),
     grad_req='null', note='the forward truncates 3.9 to 3')
case('idxx_scatter_nd_1d', op2('scatter_nd', shape=(6,)), {'x': (2, 2), 'y': (1, 2, 2)},
     inputs={'y': const([[[5, 0], [3, 1]]])})
case('idxx_scatter_nd_repeated', op2('scatter_nd', shape=(2, 2)), {'x': (3, 2), 'y': (1, 3)},
     inputs={'y': const([[1, 0, 1]])}, phases=('infer',), grad_req='null',
     note='repeated places keep the last write (MXNet CPU order)')
case('idxx_batch_take', op2('batch_take'), {'x': (4, 3), 'y': (4,)},
     inputs={'y': const([0, 2, 7, -3])}, type_dict={'x': 'float32', 'y': 'int32'},
     phases=('infer',), grad_req='null',
     note='int32 indices (MXNet refuses float ones), clipped; no gradient')
case('idxx_choose_element_0index', op2('choose_element_0index'), {'x': (3, 4), 'y': (3,)},
     inputs={'y': const([3, 0, 1.5])}, note="an alias of pick: the JSON says 'pick'")


def _khatri_rao(mx):
    return mx.sym.khatri_rao(*_v(mx, 'a', 'b', 'c'), name='op')


case('idxx_khatri_rao', _khatri_rao, {'a': (2, 3), 'b': (4, 3), 'c': (3, 3)},
     phases=('infer',), grad_req='null', note='MXNet has no gradient for khatri_rao')
case('idxx_khatri_rao_one', op1('khatri_rao'), {'x': (3, 2)}, phases=('infer',),
     grad_req='null')
case('idxx_div_sqrt_dim', op1('contrib.div_sqrt_dim'), {'x': (3, 4, 5)})
case('idxx_div_sqrt_dim_f64', op1('contrib.div_sqrt_dim'), {'x': (2, 9)},
     type_dict={'x': 'float64'}, rtol=1e-12, atol=1e-14)
case('idxx_div_sqrt_dim_unnamed', lambda mx: mx.sym.contrib.div_sqrt_dim(_v(mx, 'x')[0]),
     {'x': (2, 4)}, note='automatic node name')
case('idxx_arange_like', op1('contrib.arange_like'), {'x': (3, 4)},
     note='zero gradient for data')
case('idxx_arange_like_repeat', op1('contrib.arange_like', start=2, step=0.5, repeat=2),
     {'x': (3, 4)})
case('idxx_arange_like_axis', op1('contrib.arange_like', axis=-2, repeat=2, start=1.5),
     {'x': (3, 4)})
case('idxx_arange_like_f64', op1('contrib.arange_like', axis=1, step=-0.1, start=3),
     {'x': (2, 7)}, type_dict={'x': 'float64'}, rtol=1e-12, atol=1e-14)
case('idxx_adaptive_avg_pool', op1('contrib.AdaptiveAvgPooling2D', output_size=(3, 2)),
     {'x': (2, 3, 5, 7)})
case('idxx_adaptive_avg_pool_default', op1('contrib.AdaptiveAvgPooling2D'),
     {'x': (2, 2, 4, 3)})
case('idxx_adaptive_avg_pool_square', op1('contrib.AdaptiveAvgPooling2D', output_size=3),
     {'x': (1, 2, 4, 5)})
case('idxx_adaptive_avg_pool_up', op1('contrib.AdaptiveAvgPooling2D', output_size=(8, 9)),
     {'x': (1, 2, 5, 7)})
case('idxx_index_copy', _contrib('index_copy', 'x', 'i', 'y'),
     {'x': (5, 3), 'i': (2,), 'y': (2, 3)}, inputs={'i': const([4, 1.7])})
case('idxx_index_copy_3d', _contrib('index_copy', 'x', 'i', 'y'),
     {'x': (4, 2, 3), 'i': (3,), 'y': (3, 2, 3)}, inputs={'i': const([0, 3, 2])})
case('idxx_index_copy_repeated', _contrib('index_copy', 'x', 'i', 'y'),
     {'x': (5, 3), 'i': (2,), 'y': (2, 3)}, inputs={'i': const([4, 4])},
     note='the last write wins; both new rows get the head gradient of row 4')
