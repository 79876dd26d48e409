"""Golden data of bfloat16 AMP (``amp.convert_symbol`` / ``convert_model`` with
``target_dtype='bfloat16'``, ``amp.init(target_dtype='bfloat16')``) and of bfloat16
``.params`` files, from MXNet 1.9.1's CPU build (oneDNN on: MXNet holds bfloat16 arrays
only there):

    $MXNET_PYTHON tests/golden/make_amp_bf16.py

writes ``tests/golden/data/amp_bf16/``:

* ``convert.json``: as make_amp.py's (``inputs``: the float32 graphs; ``cases``: the
  call, MXNet's result with and without its casts, the parameters' dtypes after
  ``convert_model``) for the graphs of make_amp.py converted to bfloat16: a conv net
  (``resnet``: plain, ``data_names``, ``convert_model`` with and without
  ``cast_optional_params``, ``excluded_sym_names``, own lists), recurrent ones
  (``others``: Embedding + fused RNN; ``foreach_rnn``), ``transformer``, ``mixed``,
  ``edges``;
* ``casting.json``: MXNet's AMPInferUnknown cases (``cast_optional_params`` with inputs
  of unknown type read by casts: which ``__dtype__`` they get);
* ``init.json``: the graphs of ``resnet`` and ``mixed`` built after
  ``amp.init(target_dtype='bfloat16')``;
* ``bf16.params`` (``mx.nd.save`` of bfloat16 arrays made with ``amp_cast``: rounding
  cases, a 0-d one, a named float32 one beside them) and ``bf16-values.npz``: their
  values widened to float32 by MXNet (``amp_cast`` back), under the same names;
* ``resnet_bf16-symbol.json`` / ``resnet_bf16-0000.params`` / ``resnet_bf16-io.npz``: the
  ``resnet`` converted by ``convert_model`` (``cast_optional_params=True``: bfloat16
  weights in the file), its input and MXNet's bfloat16 outputs of ``forward`` (oneDNN
  bf16 convolution and inner product), with the float32 model's outputs (``f32:0``).

tests/contrib/test_amp_bf16.py and tests/ndarray/test_bfloat16.py read these files.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_amp  # noqa: E402  (its graphs; it switches oneDNN off, switched on again here)

os.environ['MXNET_MKLDNN_ENABLED'] = '1'

import numpy as np  # noqa: E402

OUT = os.path.join(HERE, 'data', 'amp_bf16')

BF = {'target_dtype': 'bfloat16'}
#: name -> (graph, function, kwargs), as make_amp.CONVERSIONS
CONVERSIONS = {
    'resnet': (make_amp.resnet, 'symbol', {}),
    'resnet_data_names': (make_amp.resnet, 'symbol', {'data_names': ['data', 'softmax_label']}),
    'resnet_model': (make_amp.resnet, 'model', {}),
    'resnet_model_optional': (make_amp.resnet, 'model', {'cast_optional_params': True}),
    'resnet_excluded': (make_amp.resnet, 'symbol', {
        'excluded_sym_names': ['stage0_conv1', 'fc', 'stage1_relu2']}),
    'resnet_lists': (make_amp.resnet, 'symbol', {
        'target_dtype_ops': ['Convolution', 'Pooling'], 'fp32_ops': ['FullyConnected'],
        'conditional_fp32_ops': [('Activation', 'act_type', ['relu'])]}),
    'transformer': (make_amp.transformer, 'symbol', {}),
    'transformer_model_optional': (make_amp.transformer, 'model',
                                   {'cast_optional_params': True}),
    'mixed': (make_amp.mixed, 'symbol', {}),
    'mixed_optional': (make_amp.mixed, 'model', {'cast_optional_params': True}),
    'edges': (make_amp.edges, 'symbol', {}),
    'edges_excluded': (make_amp.edges, 'symbol', {'excluded_sym_names': ['x', 'r']}),
    'others': (make_amp.others, 'symbol', {}),
    'others_model': (make_amp.others, 'model', {}),
    'foreach_rnn': (make_amp.foreach_rnn, 'symbol', {}),
}


def conversions(mx, amp):
    """make_amp.conversions case by case; a case MXNet refuses is kept as its ``error``
    (the first line of MXNet's message)."""
    saved = make_amp.CONVERSIONS
    got = {'inputs': {}, 'cases': {}}
    try:
        for case, (graph, how, kw) in sorted(CONVERSIONS.items()):
            make_amp.CONVERSIONS = {case: (graph, how, dict(kw, **BF))}
            try:
                one = make_amp.conversions(mx, amp)
            except mx.base.MXNetError as e:
                with mx.name.NameManager():
                    sym = graph(mx)
                got['inputs'].setdefault(graph.__name__, json.loads(sym.tojson()))
                got['cases'][case] = {'graph': graph.__name__, 'function': how,
                                      'kwargs': make_amp._jsonable(kw),
                                      'error': re.sub(r'\[[\d:]+\] \S+: ', '',
                                                      str(e).split('\n')[0])}
                continue
            got['inputs'].update(one['inputs'])
            rec = one['cases'][case]
            del rec['kwargs']['target_dtype']
            got['cases'][case] = rec
    finally:
        make_amp.CONVERSIONS = saved
    return got


def casting(mx, amp):
    """MXNet's AMPInferUnknown cases (its mkl/test_contrib_amp.py test_bf16_casting):
    inputs of unknown type read by casts, converted with ``cast_optional_params``; name ->
    the converted graph (JSON, casts kept): its inputs' ``__dtype__`` is the point."""
    bf16 = np.dtype([('bfloat16', np.uint16)])
    out = {}
    data = mx.sym.var('data')
    c1 = mx.sym.amp_cast(data, dtype=bf16, name='c1')
    c2 = mx.sym.amp_cast(data, dtype='float32', name='c2')
    c3 = mx.sym.amp_cast(data, dtype=bf16, name='c3')
    cases = {
        'two_types': (mx.sym.Group([c1, c2]), {'data_names': []}),
        'one_type': (mx.sym.Group([c1, c3]), {'data_names': []}),
    }
    d1 = mx.sym.var('data', dtype='float32')
    d2 = mx.sym.var('data2', dtype=bf16)
    d3 = mx.sym.var('data3', dtype=bf16)
    cases['multicast_vars'] = (mx.sym.amp_multicast(d1, d2, num_outputs=2, name='m1'), {})
    cases['multicast_node'] = (
        mx.sym.amp_multicast(d1, mx.sym.elemwise_add(d2, d3, name='add'), num_outputs=2,
                             name='m2'), {'target_dtype_ops': [], 'fp32_ops': []})
    d4 = mx.sym.var('data4')
    cases['multicast_unknown'] = (
        mx.sym.amp_multicast(d2, d1, d4, num_outputs=3, name='m3'),
        {'target_dtype_ops': [], 'fp32_ops': []})
    for name, (sym, kw) in cases.items():
        res = amp.convert_symbol(sym, target_dtype='bfloat16', cast_optional_params=True, **kw)
        out[name] = {'input': json.loads(sym.tojson()), 'kwargs': kw,
                     'output': json.loads(res.tojson(remove_amp_cast=False))}
    return out


def params_file(mx):
    """bfloat16 arrays saved by MXNet, and their values as MXNet widens them."""
    vals = {
        # ties to even, the largest finite values, subnormals, signed zeros, inf
        'round': np.array([1.0, 1.00390625, 1.01171875, 3.1415927, -2.7182817, 65504.0,
                           3.389e38, 1e-39, -0.0, np.inf], np.float32),
        'matrix': np.random.RandomState(0).normal(0, 3, (3, 4)).astype(np.float32),
        'scalar': np.array([7.25], np.float32),
    }
    bf16 = np.dtype([('bfloat16', np.uint16)])      # MXNet's name of the type
    arrays = {k: mx.nd.amp_cast(mx.nd.array(v), dtype=bf16) for k, v in vals.items()}
    arrays['f32'] = mx.nd.array(vals['matrix'])
    mx.nd.save(os.path.join(OUT, 'bf16.params'), arrays)
    back = mx.nd.load(os.path.join(OUT, 'bf16.params'))
    widened = {k: (mx.nd.amp_cast(v, dtype='float32') if k != 'f32' else v).asnumpy()
               for k, v in back.items()}
    np.savez(os.path.join(OUT, 'bf16-values.npz'), **widened)


def checkpoint(mx, amp):
    with mx.name.NameManager():
        sym = make_amp.resnet(mx)
    arg, aux = make_amp._params(mx, sym, make_amp.RESNET_SHAPES, ['data', 'softmax_label'], 2)
    x = np.random.RandomState(3).normal(0, 1, make_amp.RESNET_SHAPES['data']).astype(
        np.float32)
    feed = {'data': mx.nd.array(x)}
    exe = sym.bind(mx.cpu(), dict(arg, **feed, softmax_label=mx.nd.zeros((2,))),
                   aux_states=dict(aux))
    f32 = exe.forward(is_train=False)[0].asnumpy()
    csym, carg, caux = amp.convert_model(sym, dict(arg), dict(aux), target_dtype='bfloat16',
                                         cast_optional_params=True)
    mx.model.save_checkpoint(os.path.join(OUT, 'resnet_bf16'), 0, csym, carg, caux,
                             remove_amp_cast=False)
    args = dict(carg, **feed, softmax_label=mx.nd.zeros((2,)))
    args = {k: args[k] for k in csym.list_arguments()}
    exe = csym.bind(mx.cpu(), args, aux_states=dict(caux))
    out = exe.forward(is_train=False)[0].asnumpy()
    np.savez(os.path.join(OUT, 'resnet_bf16-io.npz'), **{'in:data': x, 'out:0': out,
                                                         'f32:0': f32})


def main():
    import mxnet as mx
    from mxnet.contrib import amp
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, 'convert.json'), 'w') as f:
        json.dump(conversions(mx, amp), f, sort_keys=True)
    with open(os.path.join(OUT, 'casting.json'), 'w') as f:
        json.dump(casting(mx, amp), f, sort_keys=True)
    params_file(mx)
    checkpoint(mx, amp)
    amp.init(target_dtype='bfloat16')       # last: it patches mx.sym for good
    built = {}
    for graph in (make_amp.resnet, make_amp.mixed):
        with mx.name.NameManager():
            built[graph.__name__] = json.loads(graph(mx).tojson(remove_amp_cast=False))
    with open(os.path.join(OUT, 'init.json'), 'w') as f:
        json.dump(built, f, sort_keys=True)


if __name__ == '__main__':
    main()
