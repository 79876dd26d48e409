"""ONNX operators imported one small hand-built graph at a time (onnx.helper), in the
patterns PyTorch's torch.onnx and tf2onnx write, each against ONNX Runtime's result."""
import numpy as np
import pytest

import symgraph as mx

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _x(*shape, seed=0, low=-2.0, high=2.0):
    return np.random.RandomState(seed).uniform(low, high, shape).astype(np.float32)


def _i64(values):
    return np.array(values, dtype=np.int64)


def model(nodes, inputs, outputs, inits=None, opset=17):
    """A model of ``nodes``; ``inputs``: {name: array} (their types and shapes),
    ``outputs``: names; ``inits``: {name: array} initializers."""
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                         list(v.shape)) for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    inits = [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(nodes, 'g', ins, outs, initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def check(m, feeds, rtol=1e-4, atol=1e-5, exact_ops=None, reference=False):
    """Import ``m``, run it and ONNX Runtime (or, with ``reference``, ONNX's reference
    evaluator, for what ONNX Runtime lacks), compare every output; returns the imported
    symbol."""
    if reference:
        from onnx.reference import ReferenceEvaluator
        want = ReferenceEvaluator(m).run(None, feeds)
    else:
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        sess = ort.InferenceSession(m.SerializeToString(), opts,
                                    providers=['CPUExecutionProvider'])
        want = sess.run(None, feeds)
    sym, args, aux = mx.onnx.import_model(m)
    arrays = dict(args, **{k: mx.nd.array(v, dtype=v.dtype) for k, v in feeds.items()})
    exe = sym.bind(mx.cpu(), arrays, aux_states=aux, grad_req='null')
    got = [o.asnumpy() for o in exe.forward(is_train=False)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype == np.bool_ or np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g.astype(w.dtype), w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    ops = [n['op'] for n in __import__('json').loads(sym.tojson())['nodes']]
    for op in exact_ops or ():
        assert op in ops, (op, ops)
    return sym


N = helper.make_node


# --- transformer patterns -----------------------------------------------------------------
def test_matmul_add_3d_by_2d_and_attention_4d():
    x = _x(2, 5, 8)
    w, b = _x(8, 12, seed=1), _x(12, seed=2)
    nodes = [N('MatMul', ['x', 'w'], ['xw'], name='proj'), N('Add', ['xw', 'b'], ['h']),
             N('Reshape', ['h', 'heads'], ['h4']),
             N('Transpose', ['h4'], ['q'], perm=[0, 2, 1, 3]),
             N('Transpose', ['h4'], ['kt'], perm=[0, 2, 3, 1]),
             N('MatMul', ['q', 'kt'], ['s']), N('Div', ['s', 'scale'], ['s2']),
             N('Softmax', ['s2'], ['p'], axis=-1), N('MatMul', ['p', 'q'], ['ctx'])]
    m = model(nodes, {'x': x}, ['ctx'], {'w': w, 'b': b, 'heads': _i64([2, 5, 3, 4]),
                                         'scale': np.array(2.0, np.float32)})
    sym = check(m, {'x': x}, exact_ops=['dot', '_linalg_gemm2', '_div_scalar'])
    assert 'proj' in [n for n in sym.get_internals().list_outputs()
                      if n.startswith('proj')][0]


def test_layer_normalization_and_gelu():
    x = _x(2, 4, 6)
    nodes = [N('LayerNormalization', ['x', 'g', 'b'], ['ln'], axis=-1, epsilon=1e-5),
             N('Gelu', ['ln'], ['y1']),
             N('LayerNormalization', ['x', 'g'], ['y2'], axis=-2)]
    m = model(nodes, {'x': x}, ['y1', 'y2'], {'g': _x(6, seed=1), 'b': _x(6, seed=2)},
              opset=20)
    check(m, {'x': x}, exact_ops=['LayerNorm', 'LeakyReLU'])


def test_gelu_written_with_erf():
    # torch.onnx's GELU before opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))
    x = _x(3, 7)
    nodes = [N('Div', ['x', 'sqrt2'], ['d']), N('Erf', ['d'], ['e']),
             N('Add', ['e', 'one'], ['a']), N('Mul', ['x', 'a'], ['m']),
             N('Mul', ['m', 'half'], ['y'])]
    m = model(nodes, {'x': x}, ['y'], {'sqrt2': np.array(np.sqrt(2), np.float32),
                                        'one': np.array(1.0, np.float32),
                                        'half': np.array(0.5, np.float32)})
    sym, args, _ = mx.onnx.import_model(m)
    assert args == {}           # scalar constants become scalar operators, not parameters
    check(m, {'x': x}, exact_ops=['erf'])


def test_embedding_gather_where_expand_and_cls_token():
    ids = np.array([[0, 3, 9, 2], [5, 5, 1, 0]], np.int64)
    table = _x(10, 6, seed=1)
    nodes = [N('Gather', ['table', 'ids'], ['emb'], axis=0),
             N('Equal', ['ids', 'zero'], ['pad']),
             N('Unsqueeze', ['pad', 'ax2'], ['pad3']),
             N('Expand', ['pad3', 'full'], ['mask']),
             N('Where', ['mask', 'fill', 'emb'], ['masked']),
             N('Gather', ['masked', 'idx0'], ['cls'], axis=1)]
    m = model(nodes, {'ids': ids}, ['masked', 'cls'],
              {'table': table, 'zero': _i64(0), 'ax2': _i64([2]), 'full': _i64([2, 4, 6]),
               'fill': np.array(-1.0, np.float32), 'idx0': _i64(0)})
    check(m, {'ids': ids}, exact_ops=['take', 'where'])


def test_shape_gather_concat_reshape_chain_folds():
    x = _x(2, 3, 4)
    nodes = [N('Shape', ['x'], ['s']), N('Gather', ['s', 'i0'], ['b'], axis=0),
             N('Unsqueeze', ['b', 'ax0'], ['b1']),
             N('Concat', ['b1', 'minus1'], ['shape'], axis=0),
             N('Reshape', ['x', 'shape'], ['flat']),
             N('ConstantOfShape', ['shape2'], ['ones'],
               value=numpy_helper.from_array(np.array([1.0], np.float32))),
             N('Range', ['r0', 'r12', 'r1'], ['rng']),
             N('Cast', ['rng'], ['rngf'], to=F),
             N('Add', ['flat', 'rngf'], ['y0']), N('Mul', ['y0', 'ones'], ['y'])]
    inits = {'i0': _i64(0), 'ax0': _i64([0]), 'minus1': _i64([-1]), 'shape2': _i64([2, 12]),
             'r0': _i64(0), 'r12': _i64(12), 'r1': _i64(1)}
    m = model(nodes, {'x': x}, ['y'], inits)
    sym = check(m, {'x': x})
    ops = {n['op'] for n in __import__('json').loads(sym.tojson())['nodes']}
    assert not ops & {'shape_array', 'take', 'Concat'}, ops


def test_einsum_batched_products():
    a, b = _x(2, 3, 4, 5), _x(2, 3, 6, 5, seed=1)
    m = model([N('Einsum', ['a', 'b'], ['y'], equation='bhid,bhjd->bhij')],
              {'a': a, 'b': b}, ['y'], opset=12)
    check(m, {'a': a, 'b': b})


def test_topk_argmax_cast_and_reductions():
    x = _x(3, 8)
    nodes = [N('TopK', ['x', 'k'], ['v', 'i'], axis=-1),
             N('ArgMax', ['x'], ['am'], axis=1, keepdims=0),
             N('ReduceSum', ['x', 'axes'], ['rs'], keepdims=1),
             N('ReduceMean', ['x'], ['rm'], axes=[1], keepdims=0),
             N('ReduceL2', ['x'], ['rl'], axes=[0]),
             N('ReduceMax', ['x'], ['rx'], axes=[-1])]
    m = model(nodes, {'x': x}, ['v', 'i', 'am', 'rs', 'rm', 'rl', 'rx'],
              {'k': _i64([3]), 'axes': _i64([1])}, opset=13)
    check(m, {'x': x})


def test_opset18_reduce_axes_input_and_split_num_outputs():
    x = _x(2, 7, 3)
    nodes = [N('ReduceMax', ['x', 'axes'], ['r'], keepdims=0),
             N('Split', ['x'], ['s0', 's1', 's2'], axis=1, num_outputs=3)]
    m = model(nodes, {'x': x}, ['r', 's0', 's1', 's2'], {'axes': _i64([0, 2])}, opset=18)
    check(m, {'x': x})


# --- CNN and detection-head operators ------------------------------------------------
def test_conv_auto_pad_asymmetric_pool_ceil_mode():
    x = _x(1, 3, 9, 9)
    nodes = [N('Conv', ['x', 'w', 'b'], ['c'], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad='SAME_UPPER'),
             N('Conv', ['c', 'w2'], ['c2'], pads=[0, 1, 1, 0]),
             N('MaxPool', ['c2'], ['p'], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
             N('AveragePool', ['c2'], ['a'], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               count_include_pad=1),
             N('AveragePool', ['c2'], ['a2'], kernel_shape=[2, 2], strides=[2, 2],
               ceil_mode=1),
             N('GlobalMaxPool', ['c2'], ['g']),
             N('AveragePool', ['c2'], ['a3'], kernel_shape=[3, 3], pads=[0, 0, 1, 2]),
             N('MaxPool', ['x'], ['md'], kernel_shape=[2, 3], dilations=[2, 2],
               strides=[2, 2]),
             N('MaxPool', ['x'], ['md2'], kernel_shape=[2, 3], dilations=[2, 3],
               pads=[1, 0, 1, 2])]
    m = model(nodes, {'x': x}, ['p', 'a', 'a2', 'g', 'a3', 'md', 'md2'],
              {'w': _x(4, 3, 3, 3, seed=1), 'b': _x(4, seed=2), 'w2': _x(2, 4, 2, 2, seed=3)})
    check(m, {'x': x}, exact_ops=['Convolution', 'Pooling', 'Pad'])


def test_conv_transpose_batchnorm_activations():
    x = _x(2, 4, 5, 5)
    nodes = [N('ConvTranspose', ['x', 'w', 'b'], ['d'], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1], output_padding=[1, 1], group=2),
             N('ConvTranspose', ['x', 'w'], ['d2'], strides=[2, 2], pads=[0, 1, 1, 0]),
             N('BatchNormalization', ['d', 'g', 'be', 'mu', 'var'], ['bn'], epsilon=1e-3),
             N('PRelu', ['bn', 'slope'], ['pr']), N('PRelu', ['d2', 'slope_w'], ['pw']),
             N('LeakyRelu', ['pr'], ['lr'], alpha=0.2), N('HardSigmoid', ['lr'], ['hs']),
             N('Elu', ['d2'], ['el']), N('Selu', ['d2'], ['se']),
             N('Softplus', ['d2'], ['sp']), N('HardSwish', ['d2'], ['hw']),
             N('Clip', ['d2', 'lo', 'hi'], ['cl'])]
    inits = {'w': _x(4, 3, 3, 3, seed=1), 'b': _x(6, seed=2), 'g': _x(6, seed=3),
             'be': _x(6, seed=4), 'mu': _x(6, seed=5), 'var': _x(6, seed=6, low=0.5),
             'slope': _x(6, 1, 1, seed=7), 'lo': np.array(-0.5, np.float32),
             'hi': np.array(1.0, np.float32)}
    inits['slope_w'] = _x(10, seed=8)           # along the last axis: not per channel
    m = model(nodes, {'x': x}, ['hs', 'el', 'se', 'sp', 'hw', 'cl', 'pw'], inits)
    check(m, {'x': x}, rtol=1e-4, atol=1e-4, exact_ops=['Deconvolution', 'BatchNorm'])


def test_resize_upsample_pad_lrn_instance_norm():
    x = _x(1, 3, 4, 5)
    nodes = [N('Resize', ['x', '', 'sc'], ['up'], mode='nearest'),
             N('Resize', ['x', '', '', 'sz'], ['lin'], mode='linear'),
             N('Resize', ['x', '', 'sc'], ['lac'], mode='linear',
               coordinate_transformation_mode='align_corners'),
             N('Pad', ['x', 'pads', 'pv'], ['pd'], mode='constant'),
             N('Pad', ['x', 'pads'], ['pr'], mode='reflect'),
             N('LRN', ['x'], ['lrn'], size=3, alpha=1e-2, beta=0.75, bias=2.0),
             N('InstanceNormalization', ['x', 'g', 'b'], ['inorm'], epsilon=1e-5)]
    inits = {'sc': np.array([1, 1, 2, 2], np.float32), 'sz': _i64([1, 3, 8, 10]),
             'pads': _i64([0, 0, 1, 2, 0, 0, 2, 1]), 'pv': np.array(0.5, np.float32),
             'g': _x(3, seed=1), 'b': _x(3, seed=2)}
    m = model(nodes, {'x': x}, ['up', 'lin', 'lac', 'pd', 'pr', 'lrn', 'inorm'], inits)
    check(m, {'x': x}, atol=1e-4)


def test_slice_squeeze_unsqueeze_tile_flatten_concat_split():
    x = _x(2, 6, 5)
    nodes = [N('Slice', ['x', 'st', 'en', 'ax', 'sp'], ['s']),
             N('Slice', ['x', 'st2', 'en2'], ['s2']),
             N('Unsqueeze', ['s', 'uax'], ['u']), N('Squeeze', ['u', 'uax'], ['q']),
             N('Tile', ['q', 'reps'], ['t']), N('Flatten', ['x'], ['f'], axis=2),
             N('Split', ['x', 'parts'], ['p0', 'p1'], axis=1),
             N('Concat', ['p1', 'p0', 'x'], ['c'], axis=-2),
             N('GatherElements', ['x', 'gi'], ['ge'], axis=2),
             N('Identity', ['ge'], ['ge2']), N('Neg', ['ge2'], ['n']),
             N('Transpose', ['n'], ['tr'])]
    inits = {'st': _i64([5, 0]), 'en': _i64([-100, 9]), 'ax': _i64([1, 2]),
             'sp': _i64([-2, 2]), 'st2': _i64([1]), 'en2': _i64([1 << 62]),
             'uax': _i64([0, 3]), 'reps': _i64([1, 2, 1]), 'parts': _i64([2, 4]),
             'gi': np.random.RandomState(3).randint(-5, 5, (2, 6, 3)).astype(np.int64)}
    m = model(nodes, {'x': x}, ['t', 'f', 'c', 'tr', 's2'], inits)
    check(m, {'x': x})


def test_logic_and_arithmetic_broadcasting():
    x, y = _x(2, 3, 4), _x(3, 1, seed=1)
    nodes = [N('Greater', ['x', 'y'], ['gt']), N('Less', ['x', 'zero'], ['lt']),
             N('And', ['gt', 'lt'], ['both']), N('Not', ['both'], ['nb']),
             N('Or', ['gt', 'lt'], ['either']),
             N('Where', ['nb', 'x', 'y'], ['w']), N('Sub', ['two', 'w'], ['s']),
             N('Pow', ['s', 'two'], ['p']), N('Sqrt', ['p'], ['sq']),
             N('Max', ['sq', 'y', 'x'], ['mx']), N('Reciprocal', ['mx'], ['r']),
             N('Cast', ['either'], ['ef'], to=F), N('Add', ['r', 'ef'], ['out']),
             N('Abs', ['x'], ['ab']), N('Exp', ['ab'], ['ex']), N('Log', ['ex'], ['lg']),
             N('Floor', ['lg'], ['fl']), N('Ceil', ['x'], ['ce']),
             N('Sum', ['fl', 'ce', 'y'], ['sm']), N('Mean', ['fl', 'ce'], ['mn'])]
    m = model(nodes, {'x': x, 'y': y}, ['out', 'sm', 'mn'],
              {'zero': np.array(0.0, np.float32), 'two': np.array(2.0, np.float32)})
    check(m, {'x': x, 'y': y})


def test_gemm_forms_dropout_softmax_legacy_axis():
    x = _x(3, 4)
    nodes = [N('Gemm', ['x', 'w', 'b'], ['g1'], transB=1),
             N('Gemm', ['x', 'w2', 'b'], ['g2'], alpha=0.5, beta=2.0),
             N('Gemm', ['x', 'w2'], ['g3']),
             N('Dropout', ['g1'], ['d']), N('LogSoftmax', ['d'], ['ls'], axis=1),
             N('Reshape', ['g2', 'shp'], ['r']), N('Softmax', ['r'], ['sm'], axis=1)]
    inits = {'w': _x(5, 4, seed=1), 'w2': _x(4, 5, seed=2), 'b': _x(5, seed=3),
             'shp': _i64([3, 5, 1])}
    m = model(nodes, {'x': x}, ['ls', 'sm', 'g3'], inits, opset=11)
    check(m, {'x': x}, exact_ops=['FullyConnected'])


# --- recurrent layers ----------------------------------------------------------------------
def _rnn_weights(op, dirs, hidden, inp, seed):
    gates = {'LSTM': 4, 'GRU': 3, 'RNN': 1}[op]
    return {'W': _x(dirs, gates * hidden, inp, seed=seed, low=-0.5, high=0.5),
            'R': _x(dirs, gates * hidden, hidden, seed=seed + 1, low=-0.5, high=0.5),
            'B': _x(dirs, 2 * gates * hidden, seed=seed + 2, low=-0.5, high=0.5)}


@pytest.mark.parametrize('op,direction,layout', [
    ('LSTM', 'forward', 0), ('LSTM', 'bidirectional', 0), ('LSTM', 'forward', 1),
    ('GRU', 'bidirectional', 0), ('RNN', 'forward', 0)])
def test_recurrent_layers(op, direction, layout):
    dirs, hidden, seq, batch, inp = (2 if direction == 'bidirectional' else 1), 4, 5, 2, 3
    x = _x(*((batch, seq, inp) if layout else (seq, batch, inp)))
    inits = _rnn_weights(op, dirs, hidden, inp, seed=1)
    extra = {'linear_before_reset': 1} if op == 'GRU' else {}
    outs = ['Y', 'Y_h'] + (['Y_c'] if op == 'LSTM' else [])
    ins = ['x', 'W', 'R', 'B', '', 'h0'] + (['c0'] if op == 'LSTM' else [])
    sshape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inits['h0'] = _x(*sshape, seed=9)
    if op == 'LSTM':
        inits['c0'] = _x(*sshape, seed=10)
    node = N(op, ins, outs, hidden_size=hidden, direction=direction, layout=layout, **extra)
    m = model([node], {'x': x}, outs, inits, opset=14)
    # ONNX Runtime runs no batch-first (layout=1) recurrent layer: ONNX's reference does
    check(m, {'x': x}, atol=1e-5, exact_ops=['RNN'], reference=bool(layout))


def test_lstm_without_initial_state_or_bias():
    x = _x(6, 3, 2)
    w = _rnn_weights('LSTM', 1, 5, 2, seed=4)
    node = N('LSTM', ['x', 'W', 'R'], ['Y', 'Y_h'], hidden_size=5)
    m = model([node, N('Squeeze', ['Y', 'one'], ['y'])], {'x': x}, ['y', 'Y_h'],
              {'W': w['W'], 'R': w['R'], 'one': _i64([1])})
    check(m, {'x': x})


def test_unsupported_forms_say_why():
    x = _x(1, 2, 4, 4)
    m = model([N('Resize', ['x', '', 'sc'], ['y'], mode='cubic')], {'x': x}, ['y'],
              {'sc': np.array([1, 1, 1.5, 1.5], np.float32)})
    with pytest.raises(NotImplementedError, match='Resize'):
        mx.onnx.import_model(m)
    m = model([N('NonZero', ['x'], ['y'])], {'x': x}, ['y'])
    with pytest.raises(NotImplementedError, match='NonZero'):
        mx.onnx.import_model(m)


def test_gather_nd_cumsum_and_more_activations():
    x = _x(3, 4, 5)
    nodes = [N('GatherND', ['x', 'gi'], ['g']),
             N('CumSum', ['x', 'ax'], ['cs']),
             N('CumSum', ['x', 'ax'], ['csr'], reverse=1, exclusive=1),
             N('Mish', ['x'], ['mi']), N('Celu', ['x'], ['ce'], alpha=0.7),
             N('ThresholdedRelu', ['x'], ['tr'], alpha=0.5)]
    inits = {'gi': _i64([[0, 1], [2, 3], [1, 0]]), 'ax': _i64(1)}
    m = model(nodes, {'x': x}, ['g', 'cs', 'csr', 'mi', 'ce', 'tr'], inits, opset=18)
    check(m, {'x': x})


def test_roi_align_and_max_roi_pool_detection_heads():
    x = _x(2, 3, 12, 12)
    rois = np.array([[1, 1, 8, 9], [0, 2.5, 11, 6], [3, 3, 5, 5]], np.float32)
    batch = _i64([0, 1, 1])
    nodes = [N('RoiAlign', ['x', 'rois', 'bi'], ['ra'], output_height=3, output_width=2,
               sampling_ratio=2, spatial_scale=0.5)]
    m = model(nodes, {'x': x}, ['ra'], {'rois': rois, 'bi': batch}, opset=16)
    check(m, {'x': x}, exact_ops=['_contrib_ROIAlign'])
    rois5 = np.concatenate([batch[:, None].astype(np.float32), rois], axis=1)
    m = model([N('MaxRoiPool', ['x', 'r5'], ['mp'], pooled_shape=[2, 2], spatial_scale=1.0)],
              {'x': x}, ['mp'], {'r5': rois5})
    check(m, {'x': x}, exact_ops=['ROIPooling'])


@pytest.mark.parametrize('op', ['LSTM', 'GRU'])
def test_recurrent_weights_as_inputs_and_sequence_lengths(op):
    dirs, hidden, seq, batch, inp = 2, 3, 5, 3, 2
    w = _rnn_weights(op, dirs, hidden, inp, seed=2)
    x = _x(seq, batch, inp)
    lens = np.array([5, 2, 4], np.int32)
    outs = ['Y', 'Y_h']
    node = N(op, ['x', 'W', 'R', 'B', 'lens'], outs, hidden_size=hidden,
             direction='bidirectional', **({'linear_before_reset': 1} if op == 'GRU' else {}))
    feeds = dict(w, x=x, lens=lens)
    m = model([node], feeds, outs, opset=14)
    check(m, feeds, atol=1e-5, exact_ops=['RNN'])


def test_gather_nd_batch_dims_scatter_and_reverse_sequence():
    x = _x(2, 4, 3)
    nodes = [N('GatherND', ['x', 'gi'], ['g'], batch_dims=1),
             N('ScatterND', ['x', 'si', 'su'], ['sn']),
             N('ScatterElements', ['x', 'ei', 'eu'], ['se'], axis=1),
             N('ReverseSequence', ['x', 'lens'], ['rs'], time_axis=1, batch_axis=0)]
    inits = {'gi': _i64([[[1], [3]], [[0], [2]]]), 'si': _i64([[0, 1], [1, 3]]),
             'su': _x(2, 3, seed=1), 'ei': _i64([[[1, 0, 3]], [[2, 2, -1]]]),
             'eu': _x(2, 1, 3, seed=2), 'lens': _i64([3, 4])}
    m = model(nodes, {'x': x}, ['g', 'sn', 'se', 'rs'], inits, opset=16)
    check(m, {'x': x})


def test_lp_normalization_hardmax_trilu():
    x = _x(3, 4, 5)
    nodes = [N('LpNormalization', ['x'], ['l2'], axis=1, p=2),
             N('LpNormalization', ['x'], ['l1'], axis=-1, p=1),
             N('Hardmax', ['x'], ['hm'], axis=1), N('Trilu', ['x', 'k'], ['tu']),
             N('Trilu', ['x'], ['tl'], upper=0)]
    m = model(nodes, {'x': x}, ['l2', 'l1', 'hm', 'tu', 'tl'], {'k': _i64(1)}, opset=14)
    check(m, {'x': x})


def test_random_generators_draw_in_range():
    x = _x(2, 3)
    nodes = [N('RandomUniform', [], ['u'], shape=[200, 3], low=2.0, high=3.0),
             N('RandomNormalLike', ['x'], ['n'], mean=5.0, scale=0.1)]
    m = model(nodes, {'x': x}, ['u', 'n'])
    sym, args, aux = mx.onnx.import_model(m)
    u, n = sym.bind(mx.cpu(), {'x': mx.nd.array(x)}, grad_req='null').forward()
    u, n = u.asnumpy(), n.asnumpy()
    assert u.shape == (200, 3) and 2 <= u.min() and u.max() < 3 and u.std() > 0.2
    assert n.shape == (2, 3) and abs(n.mean() - 5) < 0.3


def test_if_with_a_data_dependent_and_a_constant_condition():
    x = _x(2, 3)
    h = helper
    then_g = h.make_graph([N('Mul', ['x', 'two'], ['t'])], 'then', [],
                          [h.make_tensor_value_info('t', F, [2, 3])],
                          initializer=[numpy_helper.from_array(np.float32(2.0), 'two')])
    else_g = h.make_graph([N('Sub', ['x', 'w'], ['e'])], 'else', [],
                          [h.make_tensor_value_info('e', F, [2, 3])])
    nodes = [N('ReduceSum', ['x'], ['s'], keepdims=0), N('Greater', ['s', 'zero'], ['c']),
             N('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g),
             N('If', ['yes'], ['z'], then_branch=then_g, else_branch=else_g)]
    inits = {'zero': np.array(0.0, np.float32), 'w': _x(2, 3, seed=1),
             'yes': np.array(True)}
    m = model(nodes, {'x': x}, ['y', 'z'], inits, opset=13)
    sym = check(m, {'x': x}, exact_ops=['_cond'])
    check(m, {'x': -x})
    assert sum(n['op'] == '_cond' for n in __import__('json').loads(sym.tojson())['nodes']) == 1


def test_scan_cumulative_state():
    # a recurrent accumulator: state' = tanh(state + x_t @ w), output_t = state' * 2
    x = _x(5, 2, 3)
    h = helper
    body = h.make_graph(
        [N('MatMul', ['xt', 'w'], ['xw']), N('Add', ['s', 'xw'], ['a']),
         N('Tanh', ['a'], ['s2']), N('Mul', ['s2', 'two'], ['o'])], 'body',
        [h.make_tensor_value_info('s', F, [2, 4]), h.make_tensor_value_info('xt', F, [2, 3])],
        [h.make_tensor_value_info('s2', F, [2, 4]), h.make_tensor_value_info('o', F, [2, 4])],
        initializer=[numpy_helper.from_array(np.float32(2.0), 'two')])
    m = model([N('Scan', ['s0', 'x'], ['sN', 'ys'], num_scan_inputs=1, body=body)],
              {'x': x}, ['sN', 'ys'], {'s0': _x(2, 4, seed=1), 'w': _x(3, 4, seed=2)},
              opset=16)
    check(m, {'x': x}, exact_ops=['_foreach'])


@pytest.mark.parametrize('align', [0, 1])
def test_grid_sample(align):
    x, grid = _x(2, 3, 5, 6), _x(2, 4, 7, 2, seed=1, low=-1.1, high=1.1)
    m = model([N('GridSample', ['x', 'g'], ['y'], align_corners=align)],
              {'x': x, 'g': grid}, ['y'], opset=16)
    check(m, {'x': x, 'g': grid}, atol=1e-5, exact_ops=['BilinearSampler'])


def test_constant_pad_of_integer_and_boolean_tensors_of_any_axis():
    # symgraph's Pad (MXNet's) takes floating point data of 4-D/5-D only: integer and
    # boolean tensors, and the first two axes, pad through concatenated constant blocks
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = np.array([[True, False], [False, True]])
    nodes = [N('Pad', ['x', 'pads', 'pv'], ['xi'], mode='constant'),
             N('Pad', ['b', 'bpads'], ['bb'], mode='constant')]
    inits = {'pads': _i64([1, 0, 2, 3]), 'pv': np.array(7, np.int32),
             'bpads': _i64([0, 1, 1, 0])}
    m = model(nodes, {'x': x, 'b': b}, ['xi', 'bb'], inits)
    sym = check(m, {'x': x, 'b': b})
    assert 'Pad' not in sym.tojson()
