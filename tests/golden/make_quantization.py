"""Golden data for symgraph's int8 quantization (mx.contrib.quantization), made with MXNet
1.9.1's CPU build.

Run with MXNet's interpreter (the path given as the first argument, or $MXNET_PYTHON)::

    python tests/golden/make_quantization.py /path/to/mxnet/python

Writes tests/golden/data/quantization/:

* ``graphs.json``: for each test network and each setting (quantize_mode, quantized_dtype,
  excluded names/operators, calib_mode 'none' or 'naive' with given thresholds), the float
  symbol's JSON, MXNet's quantized symbol JSON and its calibration layer names;
* ``model.npz``/``model.json``: a small residual network's float parameters, calibration
  batches (data in [0, 1): MXNet's oneDNN quantized_conv takes uint8 only, and its
  quantized relu declares an int8 output, hence Activation excluded) and MXNet's
  quantized graphs (calib_mode naive, entropy, none) and their outputs on a test batch.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'quantization')


def _networks(mx):
    """name -> (symbol, data shape) of the networks whose graphs are compared."""
    nets = {}
    data = mx.sym.Variable('data')
    conv = mx.sym.Convolution(data, kernel=(1, 1), num_filter=16, name='conv')
    bn = mx.sym.BatchNorm(data=conv, eps=2e-05, fix_gamma=False, momentum=0.9, name='bn')
    act = mx.sym.Activation(data=bn, act_type='relu', name='relu')
    pool = mx.sym.Pooling(act, kernel=(4, 4), pool_type='avg', name='pool')
    fc = mx.sym.FullyConnected(pool, num_hidden=10, flatten=True, name='fc')
    nets['fp32'] = (mx.sym.SoftmaxOutput(fc, name='softmax'), (4, 4, 10, 10))

    conv0 = mx.sym.Convolution(data=data, num_filter=4, kernel=(1, 1), no_bias=True,
                               name='conv0')
    bn = mx.sym.BatchNorm(data=conv0, fix_gamma=False, eps=2e-5, momentum=0.9, name='bn')
    sum0 = mx.sym.elemwise_add(bn, data, name='sum0')
    act0 = mx.sym.Activation(data=sum0, act_type='relu', name='relu0')
    pool0 = mx.sym.Pooling(act0, kernel=(4, 4), pool_type='avg', name='pool0')
    conv1 = mx.sym.Convolution(data=pool0, num_filter=4, kernel=(1, 1), name='conv1')
    act1 = mx.sym.Activation(data=conv1, act_type='relu', name='relu1')
    pool1 = mx.sym.Pooling(act1, kernel=(4, 4), pool_type='avg', name='pool1')
    fc = mx.sym.FullyConnected(pool1, num_hidden=10, flatten=True, name='fc')
    nets['residual'] = (mx.sym.SoftmaxOutput(fc, name='softmax'), (4, 4, 10, 10))

    # a small CIFAR-style residual network: conv-relu, residual add, max pool, flatten, concat
    c1 = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c1')
    r1 = mx.sym.Activation(c1, act_type='relu', name='r1')
    c2 = mx.sym.Convolution(r1, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c2')
    r2 = mx.sym.Activation(c2, act_type='relu', name='r2')
    c3 = mx.sym.Convolution(r2, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c3')
    add = mx.sym.elemwise_add(c3, r1, name='add')
    r3 = mx.sym.Activation(add, act_type='relu', name='r3')
    p1 = mx.sym.Pooling(r3, kernel=(2, 2), stride=(2, 2), pool_type='max', name='p1')
    c4 = mx.sym.Convolution(p1, kernel=(1, 1), num_filter=4, name='c4')
    cat = mx.sym.Concat(p1, c4, dim=1, name='cat')
    fl = mx.sym.Flatten(cat, name='flat')
    fc = mx.sym.FullyConnected(fl, num_hidden=10, name='fc')
    nets['small_resnet'] = (mx.sym.SoftmaxOutput(fc, name='softmax'), (8, 3, 8, 8))

    inputs = list(mx.sym.split(data, axis=0, num_outputs=2, squeeze_axis=1, name='split'))
    outs = [mx.sym.expand_dims(mx.sym.Convolution(inputs[i], kernel=(1, 1), num_filter=16,
                                                  name='conv_%d' % i), axis=0)
            for i in range(2)]
    cat = mx.sym.Concat(*outs, dim=0, name='concat')
    fc = mx.sym.FullyConnected(mx.sym.reshape(cat, shape=(2, -1), name='reshape'),
                               num_hidden=10, name='fc')
    nets['multi_out'] = (mx.sym.SoftmaxOutput(fc, name='softmax'), (2, 4, 4, 10, 10))
    return nets


MODES = ('naive', 'entropy', 'none')

SETTINGS = [
    dict(quantize_mode='full', quantized_dtype='int8'),
    dict(quantize_mode='smart', quantized_dtype='int8'),
    dict(quantize_mode='full', quantized_dtype='uint8'),
    dict(quantize_mode='full', quantized_dtype='auto', excluded_op_names=['FullyConnected']),
    dict(quantize_mode='smart', quantized_dtype='int8', excluded_sym_names=['conv1', 'pool0',
                                                                             'c2', 'p1']),
]


def make(mx, np):
    os.makedirs(OUT, exist_ok=True)
    graphs = []
    for name, (sym, dshape) in sorted(_networks(mx).items()):
        mod = mx.mod.Module(sym, context=mx.cpu())
        mod.bind(for_training=False, data_shapes=[('data', dshape)],
                 label_shapes=[('softmax_label', dshape[:1])])
        mx.random.seed(0)
        mod.init_params(initializer=mx.init.Uniform(0.5))
        args, auxs = mod.get_params()
        for setting in SETTINGS:
            kw = dict(setting)
            qsym, calib = mx.contrib.quant._quantize_symbol(
                sym, mx.cpu(), excluded_symbols=kw.get('excluded_sym_names'),
                excluded_operators=kw.get('excluded_op_names'),
                offline_params=list(args), quantized_dtype=kw['quantized_dtype'],
                quantize_mode=kw['quantize_mode'])
            quantized = qsym.tojson()     # (calibration writes into these very nodes)
            th = {c: (-1.0 - 0.125 * i, 2.0 + 0.25 * i) for i, c in enumerate(calib)}
            csym = mx.contrib.quant._calibrate_quantized_sym(qsym, th)
            qparams = mx.contrib.quant._quantize_params(csym, args, th)
            graphs.append(dict(net=name, setting=setting, fp32=sym.tojson(),
                               quantized=quantized, calib_layers=calib,
                               thresholds=th, calibrated=csym.tojson(),
                               qparam_names=sorted(qparams)))
    with open(os.path.join(OUT, 'graphs.json'), 'w') as f:
        json.dump(graphs, f, sort_keys=True)
    make_ops(mx, np)
    make_model(mx, np)
    make_mkldnn_model(mx, np)


def make_ops(mx, np):
    """MXNet's outputs of each quantized operator on seeded inputs (ops.npz): for case k,
    ``k:in<i>`` the inputs, ``k:out<i>`` the outputs, and ``k:attrs`` its JSON parameters."""
    rng = np.random.RandomState(42)

    def ints(shape, dtype):
        lo, hi = (-127, 128) if dtype == 'int8' else (0, 256)
        return rng.randint(lo, hi, size=shape).astype(dtype)

    def f32(*v):
        return np.array(v, np.float32)

    cases = []
    x = rng.uniform(-3, 2, size=(2, 3, 5, 4)).astype(np.float32)
    xp = np.abs(x)
    for out_type, data in (('int8', x), ('uint8', xp), ('auto', xp), ('auto', x)):
        cases.append(('_contrib_quantize_v2', {'out_type': out_type}, [data]))
        cases.append(('_contrib_quantize_v2', {'out_type': out_type, 'min_calib_range': -2.5,
                                               'max_calib_range': 1.75}, [data]))
    cases.append(('_contrib_quantize_v2', {'min_calib_range': 0.0, 'max_calib_range': 2.0,
                                           'out_type': 'auto'}, [xp]))
    acc = rng.randint(-40000, 40000, size=(3, 4, 6)).astype(np.int32)
    for out_type in ('int8', 'uint8', 'auto'):
        cases.append(('_contrib_requantize', {'out_type': out_type},
                      [acc, f32(-900.5), f32(1000.25)]))
        cases.append(('_contrib_requantize', {'out_type': out_type, 'min_calib_range': -0.125,
                                              'max_calib_range': 0.3},
                      [acc, f32(-900.5), f32(1000.25)]))
    w = ints((8, 3, 3, 3), 'int8')
    b = ints((8,), 'int8')
    d = ints((2, 3, 7, 6), 'uint8')
    conv = {'kernel': (3, 3), 'num_filter': 8, 'pad': (1, 1), 'stride': (2, 1)}
    cases.append(('_contrib_quantized_conv', dict(conv, no_bias=True),
                  [d, w, f32(0), f32(2.5), f32(-0.5), f32(0.5)]))
    cases.append(('_contrib_quantized_conv', dict(conv),
                  [d, w, b, f32(0), f32(2.5), f32(-0.5), f32(0.5), f32(-0.1), f32(0.2)]))
    fw, fb = ints((5, 12), 'int8'), ints((5,), 'int8')
    for dt in ('int8', 'uint8'):
        fd = ints((4, 3, 4), dt)
        lo = -1.5 if dt == 'int8' else 0.0
        cases.append(('_contrib_quantized_fully_connected', {'num_hidden': 5},
                      [fd, fw, fb, f32(lo), f32(1.5), f32(-0.25), f32(0.3), f32(-0.05),
                       f32(0.04)]))
        cases.append(('_contrib_quantized_fully_connected', {'num_hidden': 5, 'no_bias': True},
                      [fd, fw, f32(lo), f32(1.5), f32(-0.25), f32(0.3)]))
        cases.append(('_contrib_quantized_fully_connected',
                      {'num_hidden': 5, 'flatten': False, 'no_bias': True},
                      [ints((4, 3, 12), dt), fw, f32(lo), f32(1.5), f32(-0.25), f32(0.3)]))
        p = ints((2, 3, 6, 5), dt)
        for pool in ({'kernel': (2, 2), 'pool_type': 'max', 'stride': (2, 2)},
                     {'kernel': (3, 3), 'pool_type': 'avg', 'pad': (1, 1)},
                     {'kernel': (3, 3), 'pool_type': 'avg', 'pad': (1, 1),
                      'count_include_pad': False},
                     {'kernel': (1, 1), 'pool_type': 'avg', 'global_pool': True}):
            cases.append(('_contrib_quantized_pooling', pool, [p, f32(lo), f32(2.0)]))
        cases.append(('_contrib_quantized_flatten', {}, [p, f32(lo), f32(2.0)]))
        if dt == 'int8':
            cases.append(('_contrib_quantized_act', {'act_type': 'relu'},
                          [p, f32(lo), f32(2.0)]))
    a8, b8 = ints((3, 10), 'int8'), ints((3, 10), 'int8')
    u8 = ints((3, 10), 'uint8')
    for lhs, rhs, lr, rr in ((a8, b8, (-1.0, 2.0), (-0.5, 0.25)),
                             (a8, u8, (-1.0, 2.0), (0.0, 3.0)),
                             (u8, a8, (0.0, 3.0), (-1.0, 2.0)),
                             (u8, u8, (0.0, 3.0), (0.0, 1.0))):
        for calib in ({}, {'min_calib_range': -2.5, 'max_calib_range': 4.0}):
            cases.append(('_contrib_quantized_elemwise_add', calib,
                          [lhs, rhs, f32(lr[0]), f32(lr[1]), f32(rr[0]), f32(rr[1])]))
    # (_contrib_quantized_elemwise_mul fails imperatively in MXNet 1.9.1: its shape rule
    # clears the outputs; tests/ops/test_quantized.py checks it against a reference)
    cases.append(('_contrib_quantized_concat', {'num_args': 3, 'dim': 1},
                  [ints((2, 3, 4), 'int8'), ints((2, 2, 4), 'uint8'), ints((2, 1, 4), 'int8'),
                   f32(-1.0), f32(1.0), f32(0.0), f32(3.0), f32(-0.5), f32(0.25)]))
    cases.append(('_contrib_quantized_concat', {'num_args': 2, 'dim': 2},
                  [ints((2, 3, 4), 'uint8'), ints((2, 3, 2), 'uint8'),
                   f32(0.0), f32(1.0), f32(0.0), f32(3.0)]))
    bnx = ints((2, 4, 3, 3), 'int8')
    cases.append(('_contrib_quantized_batch_norm',
                  {'eps': 1e-3, 'fix_gamma': False, 'min_calib_range': -6.0,
                   'max_calib_range': 5.0},
                  [bnx, rng.uniform(0.5, 2, 4).astype(np.float32),
                   rng.uniform(-1, 1, 4).astype(np.float32),
                   rng.uniform(-1, 1, 4).astype(np.float32),
                   rng.uniform(0.5, 2, 4).astype(np.float32), f32(-3.0), f32(2.0)]))
    cases.append(('_contrib_quantized_embedding', {'input_dim': 6, 'output_dim': 4},
                  [np.array([[0, 5], [2, 9]], np.float32), ints((6, 4), 'int8'), f32(-1.0),
                   f32(0.5)]))
    arrays, meta = {}, []
    for k, (op, attrs, inputs) in enumerate(cases):
        fn = getattr(mx.nd, op) if hasattr(mx.nd, op) else getattr(mx.nd.contrib, op[9:])
        nd_in = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
        try:
            outs = fn(*nd_in, **attrs)
            [o.asnumpy() for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
        except mx.MXNetError as e:
            raise RuntimeError('case %d %s %s: %s' % (k, op, attrs, str(e)[-200:]))
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        for i, a in enumerate(inputs):
            arrays['%d:in%d' % (k, i)] = a
        for i, o in enumerate(outs):
            arrays['%d:out%d' % (k, i)] = o.asnumpy()
        meta.append({'op': op, 'attrs': {a: str(v) for a, v in attrs.items()}})
    np.savez_compressed(os.path.join(OUT, 'ops.npz'), **arrays)
    with open(os.path.join(OUT, 'ops.json'), 'w') as f:
        json.dump(meta, f, indent=0)


def make_model(mx, np):
    """The small residual network quantized with naive and entropy calibration: its float
    parameters, the calibration batches, and MXNet's thresholds and outputs."""
    sym, dshape = _networks(mx)['small_resnet']
    sym = sym.get_internals()['fc_output']
    mod = mx.mod.Module(sym, label_names=None, context=mx.cpu())
    mod.bind(for_training=False, data_shapes=[('data', dshape)])
    mx.random.seed(1)
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    args, auxs = mod.get_params()
    rng = np.random.RandomState(0)
    calib = rng.uniform(0, 1, size=(3,) + dshape).astype(np.float32)
    test = rng.uniform(0, 1, size=dshape).astype(np.float32)
    arrays = {'arg:' + k: v.asnumpy() for k, v in args.items()}
    arrays['calib'] = calib
    arrays['test'] = test
    results = {}
    for mode in MODES:
        for qdtype in ('uint8',):
            it = mx.io.NDArrayIter(calib.reshape((-1,) + dshape[1:]), batch_size=dshape[0])
            qsym, qargs, qaux = mx.contrib.quant.quantize_model(
                sym, args, auxs, label_names=None, ctx=mx.cpu(), calib_mode=mode,
                calib_data=it if mode != 'none' else None, num_calib_examples=20,
                excluded_op_names=['Activation'],
                quantized_dtype=qdtype, quantize_mode='full')
            key = '%s_%s' % (mode, qdtype)
            results[key] = qsym.tojson()
            qmod = mx.mod.Module(qsym, label_names=None, context=mx.cpu())
            qmod.bind(for_training=False, data_shapes=[('data', dshape)])
            qmod.set_params(qargs, qaux)
            qmod.forward(mx.io.DataBatch([mx.nd.array(test)]), is_train=False)
            arrays['out:' + key] = qmod.get_outputs()[0].asnumpy()
    mod.forward(mx.io.DataBatch([mx.nd.array(test)]), is_train=False)
    arrays['out:fp32'] = mod.get_outputs()[0].asnumpy()
    np.savez_compressed(os.path.join(OUT, 'model.npz'), **arrays)
    with open(os.path.join(OUT, 'model.json'), 'w') as f:
        json.dump({'symbol': sym.tojson(), 'quantized': results}, f, indent=0,
                  sort_keys=True)


def _cifar_resnet(mx, blocks=(1, 1, 1), width=8):
    """A CIFAR-style ResNet (conv-bn-relu stem, basic residual blocks with a projection
    where the shape changes, global average pooling, a dense layer), as Gluon's model zoo
    CIFAR ResNets are built; ``blocks=(2, 2, 2)`` is ResNet-14."""
    data = mx.sym.var('data')

    def conv_bn(x, name, filters, stride=1, kernel=3, relu=True):
        pad = (kernel // 2,) * 2
        x = mx.sym.Convolution(x, kernel=(kernel,) * 2, stride=(stride,) * 2, pad=pad,
                               num_filter=filters, no_bias=True, name=name + '_conv')
        x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-5, name=name + '_bn')
        return mx.sym.Activation(x, act_type='relu', name=name + '_relu') if relu else x

    x = conv_bn(data, 'stem', width)
    filters = width
    for stage, n in enumerate(blocks):
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            out = width * 2 ** stage
            name = 's%d_b%d' % (stage, i)
            y = conv_bn(x, name + '_a', out, stride)
            y = conv_bn(y, name + '_b', out, relu=False)
            short = x if stride == 1 and out == filters else \
                conv_bn(x, name + '_proj', out, stride, kernel=1, relu=False)
            x = mx.sym.Activation(mx.sym.elemwise_add(y, short, name=name + '_add'),
                                  act_type='relu', name=name + '_out')
            filters = out
    x = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type='avg', name='pool')
    x = mx.sym.Flatten(x, name='flat')
    return mx.sym.FullyConnected(x, num_hidden=10, name='fc')


def make_mkldnn_model(mx, np):
    """A CIFAR-style ResNet written by MXNet's oneDNN int8 flow (quantize_model_mkldnn, as
    example/quantization/imagenet_gen_qsym_mkldnn.py): the fused float32 and the quantized
    symbols, their parameters, and MXNet's outputs on a seeded batch (mkldnn_model.*)."""
    sym = _cifar_resnet(mx)
    dshape = (8, 3, 16, 16)
    mod = mx.mod.Module(sym, label_names=None, context=mx.cpu())
    mod.bind(for_training=False, data_shapes=[('data', dshape)])
    mx.random.seed(3)
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    args, auxs = mod.get_params()
    rng = np.random.RandomState(5)
    for k in sorted(auxs):          # running statistics away from 0 and 1
        shape = auxs[k].shape
        auxs[k] = mx.nd.array(rng.uniform(0.5, 1.5, shape) if k.endswith('var')
                              else rng.uniform(-0.2, 0.2, shape))
    for k in sorted(args):
        if k.endswith(('gamma', 'beta')):
            args[k] = mx.nd.array(rng.uniform(0.8, 1.2, args[k].shape) if k.endswith('gamma')
                                  else rng.uniform(-0.1, 0.1, args[k].shape))
    calib = rng.uniform(0, 1, size=(2,) + dshape).astype(np.float32)
    test = rng.uniform(0, 1, size=dshape).astype(np.float32)
    arrays = {'calib': calib, 'test': test}
    for k, v in args.items():
        arrays['arg:' + k] = v.asnumpy()
    for k, v in auxs.items():
        arrays['aux:' + k] = v.asnumpy()
    doc = {'fp32': sym.tojson()}

    def run(s, a, x):
        m = mx.mod.Module(s, label_names=None, context=mx.cpu())
        m.bind(for_training=False, data_shapes=[('data', dshape)])
        m.set_params(a, x)
        m.forward(mx.io.DataBatch([mx.nd.array(test)]), is_train=False)
        return m.get_outputs()[0].asnumpy()

    arrays['out:fp32'] = run(sym, args, auxs)
    fused = sym.get_backend_symbol('MKLDNN')
    doc['fused'] = fused.tojson()
    arrays['out:fused'] = run(fused, args, auxs)
    for mode in ('naive', 'entropy'):
        it = mx.io.NDArrayIter(calib.reshape((-1,) + dshape[1:]), batch_size=dshape[0])
        qsym, qargs, qauxs = mx.contrib.quant.quantize_model_mkldnn(
            sym, args, auxs, label_names=None, ctx=mx.cpu(), calib_mode=mode,
            calib_data=it, num_calib_examples=16, quantized_dtype='auto')
        doc[mode] = qsym.tojson()
        for k, v in qargs.items():
            arrays['%s:arg:%s' % (mode, k)] = v.asnumpy()
        arrays['out:' + mode] = run(qsym, qargs, qauxs)
    np.savez_compressed(os.path.join(OUT, 'mkldnn_model.npz'), **arrays)
    with open(os.path.join(OUT, 'mkldnn_model.json'), 'w') as f:
        json.dump(doc, f, sort_keys=True)


def main():
    python = sys.argv[1] if len(sys.argv) > 1 else os.environ.get('MXNET_PYTHON')
    if python and os.path.abspath(python) != os.path.abspath(sys.executable):
        subprocess.check_call([python, os.path.abspath(__file__)])
        return
    # MXNet binds the float model's calibration run with its default oneDNN subgraph
    # backend, which fuses conv+relu and hides those convolutions' outputs from the
    # monitor (their requantize nodes stay uncalibrated); the golden graphs calibrate all
    os.environ['MXNET_SUBGRAPH_BACKEND'] = 'NONE'
    import mxnet as mx
    import numpy as np
    make(mx, np)
    sys.stdout.flush()
    os._exit(0)


if __name__ == '__main__':
    main()
