"""Symbol-building behaviours checked against MXNet 1.9.1, written once for both frameworks
(Python 3.8 compatible): ``run(mx)`` returns {probe: JSON-able result}."""
import copy

import numpy as np


def run(mx):
    out = {}
    x = mx.sym.var('x')
    # None for an input: the operator makes the Variable itself
    out['none_inputs'] = [
        mx.sym.SoftmaxOutput(data=x, label=None, name='so').list_arguments(),
        mx.sym.FullyConnected(data=x, weight=None, num_hidden=2, name='f1').list_arguments(),
        mx.sym.FullyConnected(x, None, None, num_hidden=2, name='f2').list_arguments()]
    # NumPy scalars on the left
    with mx.name.NameManager():
        out['numpy_scalar_left'] = [(np.float32(0.5) * x).name, (np.float64(2) - x).name,
                                    (np.int64(3) > x).name]
        out['fluent'] = [x.astype('int32').name, x.sin().name, x.log1p().name,
                         x.reciprocal().name]
    # one shape for every Variable of that name (composition copies the Variable 'y':
    # two Variables made apart with one name are an error in symgraph, issue 14)
    a = mx.sym.var('y')
    out['same_name_shapes'] = [list(s) for s in
                               mx.sym.Group([a * 2, (a * 3)()]).infer_shape(y=(2, 3))[1]]
    # _set_attr re-parses an operator parameter
    fc = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    fc._set_attr(num_hidden='5')
    out['set_attr_param'] = [list(s) for s in fc.infer_shape(x=(2, 3))[1]]
    # copy.copy is deep
    c = copy.copy(fc)
    c._set_attr(__y__='1')
    out['copy_is_deep'] = fc.attr('__y__')
    # -1 is an unknown dimension
    out['minus_one_dim'] = [list(s) for s in mx.sym.Convolution(
        x, kernel=(3, 3), num_filter=8, name='c').infer_shape_partial(x=(-1, 3, 8, 8))[1]]
    # a failed call still uses up its automatic name
    with mx.name.NameManager():
        try:
            mx.sym.FullyConnected(x)
        except Exception:
            pass
        out['failed_call_uses_name'] = mx.sym.FullyConnected(x, num_hidden=2).name
    # composing by the name of an auxiliary state
    bn = mx.sym.BatchNorm(x, name='bn')
    out['compose_aux'] = bn(bn_moving_mean=mx.sym.var('mm')).list_auxiliary_states()
    # a Variable's storage type is recorded
    out['variable_stype'] = mx.sym.var('s', stype='default').list_attr()
    return out
