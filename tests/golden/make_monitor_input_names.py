"""Which operators MXNet 1.9.1 registers without input names (no ``FListInputNames``): its
monitor (``monitor_all``, Gluon's ``register_op_hook``) then reports an operator's inputs
as ``<node>_input<k>`` instead of ``<node>_<argument>``.

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_monitor_input_names.py OPS.json

``OPS.json`` maps operator names to their argument names (symgraph's registry: made by
``python tests/golden/make_monitor_input_names.py --ours OPS.json``). For each operator
MXNet can bind with every input of one of a few shapes and its default parameters, one
forward with ``monitor_all`` tells; writes tests/golden/data/monitor_input_names.json
({operator: true where MXNet says input<k>, false where it says the argument names}).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = ((2, 3), (2, 3, 4, 5), (6,))
#: parameters for operators that have required ones
PARAMS = {
    'Activation': {'act_type': 'relu'}, 'FullyConnected': {'num_hidden': 2},
    'Convolution': {'kernel': (1, 1), 'num_filter': 2},
    'Deconvolution': {'kernel': (1, 1), 'num_filter': 2},
    'Pooling': {'kernel': (1, 1)}, 'Reshape': {'shape': (-1,)},
    'Embedding': {'input_dim': 4, 'output_dim': 2}, 'Concat': {'num_args': 2},
    'SliceChannel': {'num_outputs': 1}, 'Cast': {'dtype': 'float32'},
    'clip': {'a_min': 0, 'a_max': 1}, 'slice_axis': {'axis': 0, 'begin': 0, 'end': 1},
    'expand_dims': {'axis': 0}, 'one_hot': {'depth': 3}, 'tile': {'reps': (1,)},
    'repeat': {'repeats': 2}, 'slice': {'begin': (0,), 'end': (1,)},
    'broadcast_to': {'shape': (2, 3)}, 'pad': {'mode': 'edge', 'pad_width': (0,) * 8},
    'UpSampling': {'scale': 1, 'sample_type': 'nearest', 'num_args': 1},
    'add_n': {'num_args': 2}, 'stack': {'num_args': 2}, 'LRN': {'nsize': 1},
}


def ours(path):
    sys.path.insert(0, os.path.join(HERE, '..', '..'))
    from symgraph import opdef
    rows = {}
    for name in opdef.list_ops():
        try:
            args = opdef.get_op(name)(**PARAMS.get(name, {})).list_arguments()
        except Exception:           # (an operator with required parameters)
            continue
        if args and not name.startswith('_backward'):
            rows[name] = args
    with open(path, 'w') as f:
        json.dump(rows, f, indent=1, sort_keys=True)


def probe(mx, name, args):
    """True/False (input<k> or not), or None where MXNet cannot run the operator so."""
    fn = getattr(mx.sym, name, None) or getattr(mx.sym._internal, name, None)
    if fn is None:
        return None
    ins = [mx.sym.var('v%d' % k) for k in range(len(args))]
    try:
        sym = fn(*ins, name='node', **PARAMS.get(name, {}))
    except Exception:
        return None
    for shape in SHAPES:
        seen = []
        try:
            exe = sym.simple_bind(mx.cpu(), grad_req='null',
                                  **{'v%d' % k: shape for k in range(len(args))})
            exe.set_monitor_callback(lambda n, a: seen.append(mx.base.py_str(n)),
                                     monitor_all=True)
            exe.forward(is_train=False)
            mx.nd.waitall()
        except Exception:
            continue
        names = [n[len('node_'):] for n in seen if n.startswith('node_')]
        if 'input0' in names:
            return True
        if any(a in names for a in args):
            return False
    return None


def monitor_network(mx):
    """MXNet's test_module.py::test_monitor network: two FullyConnected + sigmoid layers
    and a LinearRegressionOutput (the data input needs no gradient)."""
    x = mx.sym.Variable('data')
    x = mx.sym.FullyConnected(name='fc_0', data=x, num_hidden=2)
    x = mx.sym.Activation(name='act_0', data=x, act_type='sigmoid')
    x = mx.sym.FullyConnected(name='fc_1', data=x, num_hidden=2)
    x = mx.sym.Activation(name='act_1', data=x, act_type='sigmoid')
    return mx.sym.LinearRegressionOutput(data=x, name='softmax', grad_scale=2)


def monitor_run(mx, monitor_all):
    """The names an executor's monitor reports over one forward and backward of
    :func:`monitor_network`, in order, and their mean absolute values."""
    sym = monitor_network(mx)
    exe = sym.simple_bind(mx.cpu(), data=(1, 2), softmax_label=(1, 2),
                          grad_req={'data': 'null', 'softmax_label': 'null',
                                    'fc_0_weight': 'write', 'fc_0_bias': 'write',
                                    'fc_1_weight': 'write', 'fc_1_bias': 'write'})
    vals = {'data': [[0.05, .10]], 'softmax_label': [[.01, 0.99]],
            'fc_0_weight': [[.15, .20], [.25, .30]], 'fc_0_bias': [.35, .35],
            'fc_1_weight': [[.40, .45], [.50, .55]], 'fc_1_bias': [.60, .60]}
    for k, v in vals.items():
        exe.arg_dict[k][:] = mx.nd.array(v)
    seen = []

    def callback(name, arr):
        name = name if isinstance(name, str) else mx.base.py_str(name)
        if not isinstance(arr, mx.nd.NDArray):
            arr = mx.nd.NDArray(mx.base.ctypes.cast(arr, mx.base.NDArrayHandle),
                                writable=False)
        seen.append((name, float(arr.abs().mean().asscalar())))
    exe.set_monitor_callback(callback, monitor_all=monitor_all)
    exe.forward(is_train=True)
    exe.backward()
    mx.nd.waitall()
    return seen


def main(path):
    os.environ['MXNET_MKLDNN_ENABLED'] = '0'
    import mxnet as mx
    with open(path) as f:
        rows = json.load(f)
    with open(os.path.join(HERE, 'data', 'monitor_names_network.json'), 'w') as f:
        json.dump({'outputs': monitor_run(mx, False), 'all': monitor_run(mx, True)}, f,
                  indent=1)
    result = {}
    for name, args in sorted(rows.items()):
        verdict = probe(mx, name, args)
        if verdict is not None:
            result[name] = verdict
    with open(os.path.join(HERE, 'data', 'monitor_input_names.json'), 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    if sys.argv[1] == '--ours':
        ours(sys.argv[2])
    else:
        main(sys.argv[1])
    sys.stdout.flush()
    os._exit(0)     # MXNet 1.9.1 may hang at interpreter exit
