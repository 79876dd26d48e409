"""Make the golden data for loading symbol JSON written by old MXNet versions.

Run from the repository root with MXNet's interpreter::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_json_legacy.py

The files below are written by hand in the layouts of old MXNet releases ("param"/"attr"
keys, no ``node_row_ptr``, an old ``mxnet_version`` or none, which means 0.8.0). MXNet 1.9.1
upgrades them when it loads them (src/nnvm/legacy_json_util.cc). For each one this script
writes ``tests/golden/data/json_legacy/<case>.json`` holding the text, and what MXNet makes
of it: argument, output and auxiliary names, ``attr_dict()``, the nodes of its ``tojson()``,
``infer_shape`` and forward outputs for fixed inputs.

It also writes ``fills_missing_inputs.json``: for every operator name symgraph registers
(listed by running the system ``python3``, or ``$SYMGRAPH_PYTHON``), whether MXNet's 0.8 -> 0.9
upgrade adds the node's missing inputs ('append'), leaves the node short ('none'), or could
not be asked ('skipped': the optimizer updates crash MXNet's loader, Custom needs a
registered op).
"""
import json
import os
import subprocess
import sys

import numpy as np

os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'json_legacy')
ROOT = os.path.dirname(os.path.dirname(HERE))


def var(name, **attr):
    d = {'op': 'null', 'name': name, 'inputs': [], 'backward_source_id': -1}
    if attr:
        d['attr'] = attr
    return d


def op(op_name, name, inputs, param=None, attr=None):
    d = {'op': op_name, 'name': name, 'param': param or {},
         'inputs': [list(e) for e in inputs], 'backward_source_id': -1}
    if attr:
        d['attr'] = attr
    return d


def graph(nodes, heads, version=None, key_style='old'):
    doc = {'nodes': nodes,
           'arg_nodes': [i for i, n in enumerate(nodes) if n['op'] == 'null'],
           'heads': heads}
    if version is not None:
        doc['attrs'] = {'mxnet_version': ['int', version]}
    if key_style == 'new':      # 1.x layout: everything under "attrs"
        for n in nodes:
            a = dict(n.pop('param', {}))
            a.update(n.pop('attr', {}))
            n.pop('backward_source_id', None)
            if a:
                n['attrs'] = a
    return json.dumps(doc, indent=2)


def inception_bn(version=None):
    """Conv -> BatchNorm (no aux stored, as before 0.9) -> ReLU -> Pool -> FC -> Softmax."""
    bn_p = {'eps': '1e-05', 'fix_gamma': 'False', 'momentum': '0.9',
            'use_global_stats': 'False'}
    return graph([
        var('data'),
        var('conv_weight'), var('conv_bias'),
        op('Convolution', 'conv', [(0, 0), (1, 0), (2, 0)],
           {'kernel': '(3, 3)', 'num_filter': '4', 'pad': '(1, 1)', 'stride': '(1, 1)',
            'no_bias': 'False', 'workspace': '512'}),
        var('bn_gamma'), var('bn_beta'),
        op('BatchNorm', 'bn', [(3, 0), (4, 0), (5, 0)], bn_p,
           {'lr_mult': '2', 'ctx_group': 'stage1'}),
        op('Activation', 'relu', [(6, 0)], {'act_type': 'relu'}),
        op('Pooling', 'pool', [(7, 0)],
           {'kernel': '(2, 2)', 'pool_type': 'avg', 'stride': '(2, 2)'}),
        op('Flatten', 'flatten', [(8, 0)]),
        var('fc_weight'), var('fc_bias'),
        op('FullyConnected', 'fc', [(9, 0), (10, 0), (11, 0)], {'num_hidden': '3'}),
        var('softmax_label'),
        op('SoftmaxOutput', 'softmax', [(12, 0), (13, 0)], {'grad_scale': '1'}),
    ], [[14, 0]], version)


def bn_with_aux(version):
    """BatchNorm with its aux states stored; moving_var already has an initializer."""
    return graph([
        var('x'), var('g'), var('b'), var('mean'),
        var('var', __init__='["constant", {"value": 2.0}]'),
        op('BatchNorm', 'bn', [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)],
           {'fix_gamma': 'False', 'use_global_stats': 'True'}),
    ], [[5, 0]], version)


def argmax_flat(version):
    """argmax/argmin with axis -1: before 0.9.5 this meant 'flatten' (no axis)."""
    return graph([
        var('x'),
        op('argmax', 'amax', [(0, 0)], {'axis': '-1'}),
        op('argmin', 'amin', [(0, 0)], {'axis': '-1', 'keepdims': 'True'}),
        op('argmax', 'amax1', [(0, 0)], {'axis': '1'}),
    ], [[1, 0], [2, 0], [3, 0]], version)


def hidden_keys(version, key_style='old'):
    """Plain hidden keys on Variables and operators, and <input>_<key> on an operator."""
    return graph([
        var('data', ctx_group='dev0', lr_mult_x='7', xlr_mult='8', profiler_scope='s:'),
        var('fc_weight', lr_mult='3', weight_lr_mult='9'),
        var('fc_bias', __wd_mult__='4', wd_mult='5'),
        op('FullyConnected', 'fc', [(0, 0), (1, 0), (2, 0)],
           {'num_hidden': '3'},
           {'weight_lr_mult': '0.5', 'bias_wd_mult': '0', 'data_ctx_group': 'dev1',
            'ctx_group': 'dev2', 'force_mirroring': 'True', 'mirror_stage': 'True'}),
        op('Activation', 'act', [(3, 0)], {'act_type': 'tanh'}, {'lr_mult': '1.5'}),
        var('fc2_weight'), var('fc2_bias'),
        op('FullyConnected', 'fc2', [(4, 0), (5, 0), (6, 0)], {'num_hidden': '2'},
           {'weight_wd_mult': '0.1'}),
    ], [[7, 0]], version, key_style)


def missing_inputs_v800():
    """0.8 files: a missing bias, a missing right-hand side."""
    return graph([
        var('x'), var('w'),
        op('FullyConnected', 'fc', [(0, 0), (1, 0)], {'num_hidden': '4'}, {'lr_mult': '2'}),
        var('y'),
        op('elemwise_add', 'plus', [(3, 0)]),
        op('Concat', 'cat', [(2, 0)], {'num_args': '2', 'dim': '1'}),
    ], [[5, 0], [4, 0]])


#: name -> (JSON text, infer_shape kwargs or None)
CASES = {
    'inception_bn_v800': (inception_bn(), {'data': (2, 3, 6, 6)}),
    'inception_bn_v800_explicit': (inception_bn(800), {'data': (2, 3, 6, 6)}),
    'inception_bn_v900': (None, None),      # filled below: aux present from 0.9 on
    'bn_aux_v903': (bn_with_aux(903), {'x': (2, 3, 4)}),
    'bn_aux_v904': (bn_with_aux(904), {'x': (2, 3, 4)}),
    'argmax_v800': (argmax_flat(None), {'x': (3, 4, 2)}),
    'argmax_v904': (argmax_flat(904), {'x': (3, 4, 2)}),
    'argmax_v905': (argmax_flat(905), {'x': (3, 4, 2)}),
    'argmax_v10901': (argmax_flat(10901), {'x': (3, 4, 2)}),
    'hidden_v800': (hidden_keys(None), {'data': (2, 5)}),
    'hidden_v10900': (hidden_keys(10900, 'new'), {'data': (2, 5)}),
    'missing_inputs_v800': (missing_inputs_v800(),
                            {'x': (2, 3), 'w': (4, 3), 'y': (2, 4), 'cat_arg1': (2, 2)}),
}


def _v900_with_aux():
    doc = json.loads(inception_bn(900))
    nodes = doc['nodes']
    # add the aux Variables as 0.9 files store them, before the BatchNorm node
    mean, vr = var('bn_moving_mean'), var('bn_moving_var')
    nodes[6:6] = [mean, vr]

    def shift(e):
        return [e[0] + 2 if e[0] >= 6 else e[0], e[1]]
    for n in nodes:
        n['inputs'] = [shift(e) for e in n['inputs']]
    nodes[8]['inputs'] += [[6, 0], [7, 0]]
    doc['heads'] = [shift(h) for h in doc['heads']]
    doc['arg_nodes'] = [i for i, n in enumerate(nodes) if n['op'] == 'null']
    return json.dumps(doc, indent=2)


CASES['inception_bn_v900'] = (_v900_with_aux(), {'data': (2, 3, 6, 6)})


def _nodes_of(sym):
    doc = json.loads(sym.tojson())
    return [{'op': n['op'], 'name': n['name'], 'attrs': n.get('attrs', {}),
             'inputs': [e[:2] for e in n['inputs']]} for n in doc['nodes']]


def run_case(name, text, shapes, seed):
    rng = np.random.RandomState(seed)
    sym = mx.sym.load_json(text)
    rec = {'json': text, 'shapes': {k: list(v) for k, v in shapes.items()},
           'arguments': sym.list_arguments(), 'outputs': sym.list_outputs(),
           'aux': sym.list_auxiliary_states(), 'attr_dict': sym.attr_dict(),
           'nodes': _nodes_of(sym)}
    arg_s, out_s, aux_s = sym.infer_shape(**shapes)
    rec['infer_shape'] = [[list(s) for s in arg_s], [list(s) for s in out_s],
                          [list(s) for s in aux_s]]
    args = {n: rng.uniform(-1, 1, s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_s)}
    if 'softmax_label' in args:
        args['softmax_label'] = rng.randint(0, 3, arg_s[-1]).astype(np.float32)
    aux = {n: rng.uniform(0.5, 1.5, s).astype(np.float32)
           for n, s in zip(sym.list_auxiliary_states(), aux_s)}
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()},
                   aux_states={k: mx.nd.array(v) for k, v in aux.items()}, grad_req='null')
    outs = exe.forward(is_train=False)
    rec['inputs'] = {k: v.tolist() for k, v in args.items()}
    rec['aux_inputs'] = {k: v.tolist() for k, v in aux.items()}
    rec['forward'] = [o.asnumpy().astype(np.float64).tolist() for o in outs]
    with open(os.path.join(OUT, name + '.json'), 'w') as f:
        json.dump(rec, f, indent=1, sort_keys=True)


#: values for required parameters when probing operators with no inputs
PROBE_VALUES = {
    'lr': '0.1', 'num_args': '2', 'begin': '(0,)', 'end': '(1,)', 'kernel': '(1, 1)',
    'num_filter': '2', 'pooled_size': '(1, 1)', 'spatial_scale': '1.0', 'axis': '0',
    'dtype': 'float32', 'mode': 'constant', 'pad_width': '(0, 0, 0, 0, 1, 1, 1, 1)',
    'num_outputs': '2', 'eta': '0.1', 'low': '0', 'high': '1', 'block_size': '2',
    'act_type': 'relu', 'input_dim': '3', 'output_dim': '2', 'num_hidden': '2',
    'transform_type': 'affine', 'sampler_type': 'bilinear', 'nsize': '3', 'scale': '2',
    'sample_type': 'nearest', 'start': '0', 'key': 'a', 'N': '2', 'value': '1', 'stop': '2',
    'num': '2', 'a_min': '0', 'a_max': '1', 't': '1', 'depth': '2', 'repeats': '2',
    'shape': '(1,)', 'reps': '(1,)',
}
#: Pooling's kernel is optional in the parser but checked when it parses
PROBE_EXTRA = {'Pooling': {'kernel': '(2, 2)'}, 'Pooling_v1': {'kernel': '(2, 2)'},
               'UpSampling': {'num_args': '1'}}


def symgraph_ops():
    py = os.environ.get('SYMGRAPH_PYTHON', 'python3')
    code = ('import json, symgraph; from symgraph import opdef\n'
            'print(json.dumps({n: [k for k, p in opdef.get_op(n)._params.items() '
            'if p.default is opdef.REQUIRED] for n in opdef.list_ops(aliases=True)}))')
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    out = subprocess.run([py, '-c', code], cwd=ROOT, env=env, check=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out.decode().strip().splitlines()[-1])


def probe_fills(ops):
    res = {}
    for name, required in sorted(ops.items()):
        if name.endswith('_update') or name == 'Custom':
            res[name] = 'skipped'
            continue
        attrs = {k: PROBE_VALUES.get(k, '1') for k in required}
        attrs.update(PROBE_EXTRA.get(name, {}))
        doc = {'nodes': [{'op': name, 'name': 'n', 'attrs': attrs, 'inputs': []}],
               'arg_nodes': [], 'heads': [[0, 0, 0]]}
        try:
            s = mx.sym.load_json(json.dumps(doc))
        except mx.MXNetError:
            res[name] = 'skipped'
            continue
        res[name] = 'append' if s.list_arguments() + s.list_auxiliary_states() else 'none'
    with open(os.path.join(OUT, 'fills_missing_inputs.json'), 'w') as f:
        json.dump(res, f, indent=0, sort_keys=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    for seed, (name, (text, shapes)) in enumerate(sorted(CASES.items())):
        run_case(name, text, shapes, seed)
    probe_fills(symgraph_ops())
    print('wrote', OUT, file=sys.stderr)


if __name__ == '__main__':
    main()
