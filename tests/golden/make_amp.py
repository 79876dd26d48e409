"""Golden data of ``mx.contrib.amp`` and of MXNet-written checkpoints with ``amp_cast``,
``_contrib_interleaved_matmul_*``, ``_split_v2`` and ``_foreach``, from MXNet 1.9.1:

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_amp.py

writes ``tests/golden/data/amp/``:

* ``lists.json``: MXNet's AMP operator lists (``mxnet.contrib.amp.lists``), float16 and
  bfloat16, as MXNet has them;
* ``convert.json``: ``inputs``, the float32 graphs as MXNet writes them (JSON objects),
  and ``cases``: for every case of ``CONVERSIONS``, its ``graph``, the arguments of the
  call (``kwargs``; ``params`` for
  ``convert_model``: names and shapes of the parameters) and MXNet's result written with
  ``tojson(remove_amp_cast=False)`` (``output``) and with ``tojson()``
  (``output_removed``), plus for ``convert_model`` the dtypes
  of the returned parameters (``param_dtypes``);
* ``init.json``: the graphs of ``resnet``, ``transformer`` and ``mixed`` built after
  ``amp.init()`` (casts inserted by the patched ``mx.sym`` functions);
* ``<model>-symbol.json`` / ``<model>-0000.params`` (``mx.model.save_checkpoint``) and
  ``<model>-io.npz``: ``data`` (the inputs: ``in:<name>``), MXNet's outputs of
  ``forward(is_train=False)`` (``out:<i>``) and, where the model has them, the gradients
  of a training forward and ``backward(head:<i>)`` (``grad:<name>``).

The checkpoints: ``amp_resnet`` (a small ResNet converted by ``amp.convert_model`` to
float16, saved with its casts: ``remove_amp_cast=False``), ``amp_resnet_optional``
(the same with ``cast_optional_params=True``: float16 weights in the .params file),
``transformer`` (a decoder layer: self-attention and encoder-decoder attention written
with the four ``_contrib_interleaved_matmul_*`` operators, LayerNorm, FullyConnected,
softmax, a GELU feed-forward), ``amp_transformer`` (that layer converted to float16),
``split_v2`` (a gated unit cut by ``split_v2``) and ``foreach_rnn`` (a recurrent cell
run by ``mx.sym.contrib.foreach``). MXNet 1.9.1 has no float16 GEMM on the CPU ("FP16
gemm on cpu not implemented!"), so the outputs of the ``amp_*`` models are those of the
saved graph with each float16 Convolution / FullyConnected / interleaved matmul computed
in float32 on its float16 inputs and rounded to float16 (:func:`emulate_float16_gemm`:
what MXNet's GPU GEMMs do by default); every other float16 operator runs in MXNet's own
float16 CPU code. tests/contrib/test_contrib_amp.py and
tests/golden/test_amp_checkpoints.py read these files.
"""
import json
import os

os.environ['MXNET_MKLDNN_ENABLED'] = '0'
os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')
os.environ.setdefault('MXNET_ENGINE_TYPE', 'NaiveEngine')

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'amp')


# --------------------------------------------------------------------------- graphs
def resnet(mx):
    """Two residual stages (the second with a strided projection), 4 and 8 channels."""
    data = mx.sym.var('data')
    x = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), no_bias=True,
                           name='conv0')
    x = mx.sym.BatchNorm(x, fix_gamma=False, name='bn0')
    x = mx.sym.Activation(x, act_type='relu', name='relu0')
    for stage, (nf, stride) in enumerate([(4, 1), (8, 2)]):
        p = 'stage%d_' % stage
        b = mx.sym.Convolution(x, num_filter=nf, kernel=(3, 3), pad=(1, 1),
                               stride=(stride, stride), no_bias=True, name=p + 'conv1')
        b = mx.sym.BatchNorm(b, fix_gamma=False, name=p + 'bn1')
        b = mx.sym.Activation(b, act_type='relu', name=p + 'relu1')
        b = mx.sym.Convolution(b, num_filter=nf, kernel=(3, 3), pad=(1, 1), no_bias=True,
                               name=p + 'conv2')
        b = mx.sym.BatchNorm(b, fix_gamma=False, name=p + 'bn2')
        if stride != 1:
            x = mx.sym.Convolution(x, num_filter=nf, kernel=(1, 1), stride=(stride, stride),
                                   no_bias=True, name=p + 'proj')
        x = mx.sym.Activation(b + x, act_type='relu', name=p + 'relu2')
    x = mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1), name='pool')
    x = mx.sym.Flatten(x, name='flatten')
    x = mx.sym.FullyConnected(x, num_hidden=5, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


RESNET_SHAPES = {'data': (2, 3, 10, 10)}
HEADS, HEAD_DIM = 2, 4
EMBED = HEADS * HEAD_DIM
TRANSFORMER_SHAPES = {'data': (5, 2, EMBED), 'memory': (6, 2, EMBED)}


def transformer(mx):
    """A post-norm decoder layer, sequence-major (length, batch, embed) as GluonNLP's
    BERT export: self-attention, encoder-decoder attention on ``memory``, a GELU FFN."""
    x, mem = mx.sym.var('data'), mx.sym.var('memory')
    qkv = mx.sym.FullyConnected(x, num_hidden=3 * EMBED, flatten=False, name='self_qkv')
    att = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=HEADS, name='self_qk')
    att = mx.sym.softmax(att, axis=-1, name='self_softmax')
    ctx = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=HEADS,
                                                           name='self_valatt')
    ctx = mx.sym.FullyConnected(ctx, num_hidden=EMBED, flatten=False, name='self_proj')
    x = mx.sym.LayerNorm(x + ctx, axis=-1, name='ln0')
    q = mx.sym.FullyConnected(x, num_hidden=EMBED, flatten=False, name='cross_q')
    kv = mx.sym.FullyConnected(mem, num_hidden=2 * EMBED, flatten=False, name='cross_kv')
    att = mx.sym.contrib.interleaved_matmul_encdec_qk(q, kv, heads=HEADS, name='cross_qk')
    att = mx.sym.softmax(att, axis=-1, name='cross_softmax')
    ctx = mx.sym.contrib.interleaved_matmul_encdec_valatt(kv, att, heads=HEADS,
                                                          name='cross_valatt')
    ctx = mx.sym.FullyConnected(ctx, num_hidden=EMBED, flatten=False, name='cross_proj')
    x = mx.sym.LayerNorm(x + ctx, axis=-1, name='ln1')
    h = mx.sym.FullyConnected(x, num_hidden=2 * EMBED, flatten=False, name='ffn1')
    h = mx.sym.LeakyReLU(h, act_type='gelu', name='gelu')
    h = mx.sym.FullyConnected(h, num_hidden=EMBED, flatten=False, name='ffn2')
    return mx.sym.LayerNorm(x + h, axis=-1, name='ln2')


def mixed(mx):
    """Operators of every list: float32-only (exp, softmax), conditional (softrelu,
    elu), widest-type (concat, broadcast_add of two unknown-typed inputs), multi-output
    nodes with and without output names (SliceChannel, _split_v2, BatchNorm's mean)."""
    a, b, c = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('c')
    fc = mx.sym.FullyConnected(a, num_hidden=6, name='fc')
    parts = mx.sym.split(fc, num_outputs=2, axis=1, name='slice')
    pieces = mx.sym.split_v2(b, 2, axis=1)
    e = mx.sym.exp(pieces[1], name='exp')
    s = mx.sym.Activation(parts[1], act_type='softrelu', name='softrelu')
    r = mx.sym.Activation(parts[0], act_type='relu', name='relu')
    l = mx.sym.LeakyReLU(r, act_type='elu', name='elu')
    cat = mx.sym.concat(s, l, e, dim=1, name='cat')
    bn = mx.sym.BatchNorm(cat, output_mean_var=True, name='bn')
    add = mx.sym.broadcast_add(pieces[0], c, name='badd')
    fc2 = mx.sym.FullyConnected(add, num_hidden=3, name='fc2')
    return mx.sym.Group([mx.sym.softmax(bn[0], name='sm'), bn[1], fc2, parts[0]])


MIXED_SHAPES = {'a': (2, 5), 'b': (2, 6), 'c': (2, 3)}


def edges(mx):
    """A float32 variable given to a float16 operator, to a widest-type one with a float16
    input and (with ``x`` excluded) known to be float32; graph outputs that are not
    float32: a variable, and an operator without output names."""
    x, y = mx.sym.var('x'), mx.sym.var('y')
    fc = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    add = mx.sym.elemwise_add(x, fc, name='add')
    cat = mx.sym.concat(fc, y, dim=1, name='cat')
    return mx.sym.Group([add, mx.sym.relu(fc, name='r'), cat, y])


EDGES_SHAPES = {'x': (2, 3), 'y': (2, 3)}


def others(mx):
    """The other float16 operators (RNN with its states, Deconvolution) and operators
    that follow their input's type (Embedding, SequenceLast, Pooling, Dropout)."""
    tokens, img = mx.sym.var('tokens'), mx.sym.var('img')
    emb = mx.sym.Embedding(tokens, input_dim=10, output_dim=4, name='emb')
    rnn = mx.sym.RNN(emb, mx.sym.var('rnn_params'), mx.sym.var('h0'), mx.sym.var('c0'),
                     mode='lstm', state_size=3, num_layers=1, state_outputs=True, name='rnn')
    last = mx.sym.SequenceLast(rnn[0], name='last')
    de = mx.sym.Deconvolution(img, num_filter=2, kernel=(2, 2), stride=(2, 2), name='deconv')
    pool = mx.sym.Pooling(mx.sym.Dropout(de, p=0.5, name='drop'), kernel=(2, 2),
                          pool_type='max', name='pool')
    return mx.sym.Group([last, rnn[2], mx.sym.Flatten(pool, name='flat')])


OTHERS_SHAPES = {'tokens': (5, 2), 'img': (2, 3, 4, 4), 'h0': (1, 2, 3), 'c0': (1, 2, 3)}

def split_v2_net(mx):
    x = mx.sym.var('data')
    h = mx.sym.FullyConnected(x, num_hidden=9, name='fc')
    a, b, c = mx.sym.split_v2(h, (2, 5), axis=1)
    g = mx.sym.split_v2(mx.sym.var('data2'), 2, axis=-1, squeeze_axis=False)
    gate = mx.sym.sigmoid(mx.sym.slice_axis(b, axis=1, begin=0, end=2))
    return mx.sym.Group([mx.sym.broadcast_add(a * gate, mx.sym.sum(c, axis=1, keepdims=True)),
                         g[0] - g[1]])


def foreach_rnn(mx):
    data, init = mx.sym.var('data'), mx.sym.var('init')
    w, b = mx.sym.var('w'), mx.sym.var('b')
    u = mx.sym.var('u')

    def body(x, states):
        h = mx.sym.tanh(mx.sym.FullyConnected(x, weight=w, bias=b, num_hidden=4, name='in')
                        + mx.sym.FullyConnected(states[0], weight=u, no_bias=True,
                                                num_hidden=4, name='rec'))
        return h, [h]
    out, st = mx.sym.contrib.foreach(body, data, [init])
    return mx.sym.Group([out, st[0]])


#: name -> (graph, function, kwargs); 'model' calls convert_model with the graph's
#: parameters (every input but the data names), 'symbol' convert_symbol
CONVERSIONS = {
    'resnet': (resnet, 'symbol', {}),
    'resnet_data_names': (resnet, 'symbol', {'data_names': ['data', 'softmax_label']}),
    'resnet_model': (resnet, 'model', {}),
    'resnet_model_optional': (resnet, 'model', {'cast_optional_params': True}),
    'resnet_excluded': (resnet, 'symbol', {'excluded_sym_names': ['stage0_conv1', 'fc',
                                                                  'stage1_relu2']}),
    'resnet_lists': (resnet, 'symbol', {
        'target_dtype_ops': ['Convolution', 'Pooling'], 'fp32_ops': ['FullyConnected'],
        'conditional_fp32_ops': [('Activation', 'act_type', ['relu'])]}),
    'transformer': (transformer, 'symbol', {}),
    'transformer_model': (transformer, 'model', {}),
    'transformer_model_optional': (transformer, 'model', {'cast_optional_params': True}),
    'mixed': (mixed, 'symbol', {}),
    'mixed_data_names': (mixed, 'symbol', {'data_names': ['a', 'b']}),
    'mixed_optional': (mixed, 'model', {'cast_optional_params': True}),
    'edges': (edges, 'symbol', {}),
    'edges_excluded': (edges, 'symbol', {'excluded_sym_names': ['x', 'r']}),
    'edges_model': (edges, 'model', {'cast_optional_params': True}),
    'others': (others, 'symbol', {}),
    'others_model': (others, 'model', {}),
    'foreach_rnn': (foreach_rnn, 'symbol', {}),
    'split_v2': (split_v2_net, 'symbol', {}),
}
DATA_NAMES = {'resnet': ['data', 'softmax_label'], 'transformer': ['data', 'memory'],
              'mixed': ['a', 'b'], 'edges': ['x', 'y'], 'others': ['tokens', 'img']}


def _jsonable(obj):
    if isinstance(obj, (list, tuple)):
        return [_jsonable(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    return obj


def _params(mx, sym, shapes, data_names, seed):
    """Random parameters (non-trivial BatchNorm statistics) for ``sym``."""
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    arg, aux = {}, {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name in data_names or name.endswith('label'):
            continue
        if name.endswith('gamma'):
            v = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(('beta', 'bias')):
            v = rng.normal(0, 0.1, shape)
        else:
            v = rng.normal(0, (2.0 / max(1, int(np.prod(shape[1:])))) ** 0.5, shape)
        arg[name] = mx.nd.array(v.astype(np.float32))
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
        v = rng.uniform(0.5, 1.5, shape) if name.endswith('var') else rng.normal(0, 0.1, shape)
        aux[name] = mx.nd.array(v.astype(np.float32))
    return arg, aux


def lists(amp):
    out = {}
    for kind, mod in (('float16', amp.lists.symbol_fp16), ('bfloat16', amp.lists.symbol_bf16)):
        out[kind] = {k: _jsonable(v) for k, v in sorted(vars(mod).items())
                     if k.isupper() and isinstance(v, (list, dict))}
    return out


def conversions(mx, amp):
    shapes = {'resnet': RESNET_SHAPES, 'transformer': TRANSFORMER_SHAPES,
              'mixed': MIXED_SHAPES, 'edges': EDGES_SHAPES, 'others': OTHERS_SHAPES}
    inputs, out = {}, {}
    for case, (graph, how, kwargs) in sorted(CONVERSIONS.items()):
        gname = graph.__name__
        with mx.name.NameManager():     # the same automatic names in every case
            sym = graph(mx)
        inputs.setdefault(gname, json.loads(sym.tojson()))
        assert inputs[gname] == json.loads(sym.tojson())
        rec = {'graph': gname, 'function': how, 'kwargs': _jsonable(kwargs)}
        if how == 'symbol':
            res = amp.convert_symbol(sym, **kwargs)
        else:
            arg, aux = _params(mx, sym, shapes[gname], DATA_NAMES[gname], 1)
            rec['params'] = {'arg': {k: list(v.shape) for k, v in arg.items()},
                             'aux': {k: list(v.shape) for k, v in aux.items()}}
            res, arg2, aux2 = amp.convert_model(sym, arg, aux, **kwargs)
            rec['param_dtypes'] = {
                'arg': {k: np.dtype(v.dtype).name for k, v in arg2.items()},
                'aux': {k: np.dtype(v.dtype).name for k, v in aux2.items()}}
        rec['output'] = json.loads(res.tojson(remove_amp_cast=False))
        rec['output_removed'] = json.loads(res.tojson())
        out[case] = rec
    return {'inputs': inputs, 'cases': out}


# --------------------------------------------------------------------------- checkpoints
def _run(mx, sym, arg, aux, inputs, heads=None, grads=()):
    ctx = mx.cpu()
    args = dict(arg)
    args.update({k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()})
    args = {k: args[k] for k in sym.list_arguments()}
    grad_req = {k: ('write' if k in grads else 'null') for k in args}
    args_grad = {k: mx.nd.zeros(args[k].shape, dtype=args[k].dtype) for k in grads}
    exe = sym.bind(ctx, args, args_grad=args_grad or None, grad_req=grad_req,
                   aux_states=dict(aux))
    exe.forward(is_train=heads is not None)
    outs = [o.asnumpy() for o in exe.outputs]
    res = {'out:%d' % i: o for i, o in enumerate(outs)}
    if heads is not None:
        exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
        res.update({'head:%d' % i: h for i, h in enumerate(heads)})
        res.update({'grad:' + k: args_grad[k].asnumpy() for k in grads})
    return res


#: operators that MXNet 1.9.1 cannot run in float16 on the CPU ("FP16 gemm on cpu not
#: implemented!"): see :func:`emulate_float16_gemm`
GEMM_OPS = ('Convolution', 'FullyConnected', '_contrib_interleaved_matmul_selfatt_qk',
            '_contrib_interleaved_matmul_selfatt_valatt', '_contrib_interleaved_matmul_encdec_qk',
            '_contrib_interleaved_matmul_encdec_valatt')


def emulate_float16_gemm(mx, sym, inputs):
    """``sym`` with every float16 node of ``GEMM_OPS`` computed in float32 on its float16
    inputs and its result rounded to float16: ``amp_cast`` to float32 on each input,
    ``amp_cast`` to float16 after it. MXNet 1.9.1 has no float16 GEMM on the CPU; on the
    GPU its default FullyConnected/Convolution/batched GEMM in float16 also multiply in
    float16 and accumulate in float32 (pseudo-float16). Every other operator of the
    graph (BatchNorm, Activation, Pooling, the additions) runs in float16 in MXNet."""
    internals = sym.get_internals()
    types = dict(zip(internals.list_outputs(),
                     internals.infer_type(**{k: v.dtype for k, v in inputs.items()})[1]))
    doc = json.loads(sym.tojson(remove_amp_cast=False))
    nodes, where = [], {}

    def add(node):
        nodes.append(node)
        return len(nodes) - 1

    for k, n in enumerate(doc['nodes']):
        ins = [[where.get((e[0], e[1]), (e[0], e[1]))[0], where.get((e[0], e[1]),
                                                                    (e[0], e[1]))[1], 0]
               for e in n['inputs']]
        half = n['op'] in GEMM_OPS and types[n['name'] + '_output'] == np.float16
        if half:
            ins = [[add({'op': 'amp_cast', 'name': '%s_emul_in%d' % (n['name'], i),
                         'attrs': {'dtype': 'float32'}, 'inputs': [e]}), 0, 0]
                   for i, e in enumerate(ins)]
        new = add(dict(n, inputs=ins))
        where[(k, 0)] = (new, 0)
        for i in range(1, 8):
            where[(k, i)] = (new, i)
        if half:
            where[(k, 0)] = (add({'op': 'amp_cast', 'name': n['name'] + '_emul_out',
                                  'attrs': {'dtype': 'float16'}, 'inputs': [[new, 0, 0]]}), 0)
    doc['nodes'] = nodes
    doc['arg_nodes'] = [i for i, n in enumerate(nodes) if n['op'] == 'null']
    doc['heads'] = [[where[(h[0], h[1])][0], where[(h[0], h[1])][1], 0] for h in doc['heads']]
    doc.pop('node_row_ptr', None)
    return mx.sym.load_json(json.dumps(doc))


def checkpoint(mx, name, sym, arg, aux, inputs, heads=None, grads=(), remove_amp_cast=True):
    prefix = os.path.join(OUT, name)
    mx.model.save_checkpoint(prefix, 0, sym, arg, aux, remove_amp_cast=remove_amp_cast)
    # the saved files are what the test loads: run MXNet on them, not on ``sym``
    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    if name.startswith('amp_'):
        sym = emulate_float16_gemm(mx, sym, inputs)
    res = _run(mx, sym, arg, aux, inputs, heads, grads)
    res.update({'in:' + k: v for k, v in inputs.items()})
    np.savez_compressed(prefix + '-io.npz', **res)
    print('%-22s outputs %s' % (name, [res['out:%d' % i].dtype.name
                                       for i in range(len(sym.list_outputs()))]))


def checkpoints(mx, amp):
    rng = np.random.RandomState(3)
    # the AMP-converted ResNet, casts kept in the file; then with float16 weights
    with mx.name.NameManager():
        sym = resnet(mx)
    arg, aux = _params(mx, sym, RESNET_SHAPES, DATA_NAMES['resnet'], 2)
    x = {'data': rng.normal(0, 1, RESNET_SHAPES['data']).astype(np.float32),
         'softmax_label': np.array([1, 3], np.float32)}
    for name, opt in (('amp_resnet', False), ('amp_resnet_optional', True)):
        csym, carg, caux = amp.convert_model(sym, dict(arg), dict(aux),
                                             cast_optional_params=opt)
        checkpoint(mx, name, csym, carg, caux, x, remove_amp_cast=False)
    # the transformer layer: float32 forward and backward, and converted to float16
    with mx.name.NameManager():
        sym = transformer(mx)
    arg, aux = _params(mx, sym, TRANSFORMER_SHAPES, DATA_NAMES['transformer'], 4)
    x = {k: rng.normal(0, 1, s).astype(np.float32) for k, s in TRANSFORMER_SHAPES.items()}
    head = rng.normal(0, 1, TRANSFORMER_SHAPES['data']).astype(np.float32)
    grads = ['data', 'memory', 'self_qkv_weight', 'cross_kv_weight', 'cross_q_bias',
             'ln0_gamma', 'ffn1_weight']
    checkpoint(mx, 'transformer', sym, arg, aux, x, heads=[head], grads=grads)
    csym, carg, caux = amp.convert_model(sym, dict(arg), dict(aux))
    checkpoint(mx, 'amp_transformer', csym, carg, caux, x, remove_amp_cast=False)
    # split_v2 and foreach
    with mx.name.NameManager():
        sym = split_v2_net(mx)
    shapes = {'data': (3, 4), 'data2': (3, 2, 6)}
    arg, aux = _params(mx, sym, shapes, ['data', 'data2'], 5)
    x = {k: rng.normal(0, 1, s).astype(np.float32) for k, s in shapes.items()}
    heads = [rng.normal(0, 1, (3, 2)).astype(np.float32),
             rng.normal(0, 1, (3, 2, 3)).astype(np.float32)]
    checkpoint(mx, 'split_v2', sym, arg, aux, x, heads=heads,
               grads=['data', 'data2', 'fc_weight'])
    with mx.name.NameManager():
        sym = foreach_rnn(mx)
    shapes = {'data': (5, 2, 3), 'init': (2, 4)}
    arg, aux = _params(mx, sym, shapes, ['data', 'init'], 6)
    x = {k: rng.normal(0, 1, s).astype(np.float32) for k, s in shapes.items()}
    heads = [rng.normal(0, 1, (5, 2, 4)).astype(np.float32),
             rng.normal(0, 1, (2, 4)).astype(np.float32)]
    checkpoint(mx, 'foreach_rnn', sym, arg, aux, x, heads=heads,
               grads=['data', 'init', 'w', 'u', 'b'])


def main():
    import mxnet as mx
    from mxnet.contrib import amp
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, 'lists.json'), 'w') as f:
        json.dump(lists(amp), f, indent=1, sort_keys=True)
    with open(os.path.join(OUT, 'convert.json'), 'w') as f:
        json.dump(conversions(mx, amp), f, sort_keys=True)
    checkpoints(mx, amp)
    # last: amp.init() patches mx.sym for good
    amp.init()
    built = {}
    for graph in (resnet, transformer, mixed):
        with mx.name.NameManager():
            built[graph.__name__] = json.loads(graph(mx).tojson(remove_amp_cast=False))
    with open(os.path.join(OUT, 'init.json'), 'w') as f:
        json.dump(built, f, sort_keys=True)


if __name__ == '__main__':
    main()
