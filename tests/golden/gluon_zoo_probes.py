"""Gluon recurrent layers and cells, and the model zoo, under MXNet 1.9.1, for
``tests/gluon/test_gluon_rnn.py`` and ``tests/gluon/test_model_zoo.py``.

Every function taking ``mx`` runs unchanged under MXNet and under symgraph: the tests call
them with symgraph and compare with what MXNet gave. Parameters are not drawn from either
library's generator: :func:`fill_params` sets each one from NumPy's legacy ``RandomState``
(seeded by its position in ``collect_params()``), a stream that is the same under every
NumPy, so both libraries hold the same values without storing them. Only the small
``mobilenet0.25`` and the recurrent layer's parameters are stored as MXNet wrote them
(``save_parameters``), to check the ``.params`` path itself.

Write the data with an interpreter that has MXNet 1.9.1::

    MXNET_PYTHON=/path/to/mxnet/python python tests/golden/gluon_zoo_probes.py

(or pass the interpreter as the argument; run directly under MXNet, it writes the files
itself). MXNet's oneDNN build is left on: its native CPU RNN operator fails on some Gluon
graphs (MXNET_SEMANTICS.md). Output, under ``tests/golden/data/gluon_zoo/``:
``rnn.npz``, ``rnn_names.json``, ``lstm_bi.params``, ``lstm_tagger-symbol.json`` and
``lstm_tagger-0000.params`` (a hybridized LSTM block as MXNet exports it), ``zoo.npz``,
``zoo_names.json`` and ``mobilenet0.25.params`` (MXNet's file, 1.9 MB).
"""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluon_zoo')

ALL_MODELS = ['resnet18_v1', 'resnet34_v1', 'resnet50_v1', 'resnet101_v1', 'resnet152_v1',
              'resnet18_v2', 'resnet34_v2', 'resnet50_v2', 'resnet101_v2', 'resnet152_v2',
              'vgg11', 'vgg13', 'vgg16', 'vgg19',
              'vgg11_bn', 'vgg13_bn', 'vgg16_bn', 'vgg19_bn',
              'alexnet', 'inceptionv3',
              'densenet121', 'densenet161', 'densenet169', 'densenet201',
              'squeezenet1.0', 'squeezenet1.1',
              'mobilenet1.0', 'mobilenet0.75', 'mobilenet0.5', 'mobilenet0.25',
              'mobilenetv2_1.0', 'mobilenetv2_0.75', 'mobilenetv2_0.5', 'mobilenetv2_0.25']

#: model zoo networks computed on fixed parameters: case -> (name, kwargs, input shape)
ZOO_CASES = {
    'mobilenet0.25': ('mobilenet0.25', {}, (2, 3, 64, 64)),
    'mobilenetv2_0.25': ('mobilenetv2_0.25', {'classes': 10}, (1, 3, 64, 64)),
    'squeezenet1.1': ('squeezenet1.1', {'classes': 10}, (1, 3, 224, 224)),
    'resnet18_v1': ('resnet18_v1', {'classes': 10}, (1, 3, 64, 64)),
    'resnet18_v2': ('resnet18_v2', {'classes': 10}, (1, 3, 64, 64)),
    'resnet50_v1': ('resnet50_v1', {'classes': 10}, (1, 3, 32, 32)),
    'resnet50_v2': ('resnet50_v2', {'classes': 10}, (1, 3, 32, 32)),
    'resnet18_v1_thumbnail': ('resnet18_v1', {'classes': 10, 'thumbnail': True},
                              (2, 3, 16, 16)),
    'vgg11': ('vgg11', {'classes': 10}, (1, 3, 32, 32)),
    'vgg11_bn': ('vgg11_bn', {'classes': 10}, (1, 3, 32, 32)),
    'alexnet': ('alexnet', {'classes': 10}, (1, 3, 67, 67)),
    'densenet121': ('densenet121', {'classes': 10}, (1, 3, 224, 224)),
}


def input_shape(name):
    return (1, 3, 299, 299) if 'inception' in name else (1, 3, 224, 224)


def values(shape, seed, kind, fan_in=1):
    """Fixed values of one parameter: uniform, scaled by its kind."""
    u = np.random.RandomState(seed).uniform(-1, 1, size=shape)
    if kind == 'gamma':
        u = 1 + 0.2 * u
    elif kind == 'running_var':
        u = 1 + 0.5 * np.abs(u)
    elif kind in ('beta', 'running_mean', 'bias'):
        u = 0.1 * u
    else:
        # variance 1 / fan_in keeps deep stacks of layers near unit scale
        u = u * np.sqrt(3.0 / max(fan_in, 1))
    return u.astype(np.float32)


def fill_params(mx, net, seed=0):
    """Sets every (initialised) parameter of ``net`` to :func:`values`."""
    for i, (name, p) in enumerate(net.collect_params().items()):
        shape = p.shape
        kind = next((k for k in ('running_mean', 'running_var', 'gamma', 'beta', 'bias')
                     if name.endswith(k)), 'weight')
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        p.set_data(mx.nd.array(values(shape, seed + 1000 + i, kind, fan_in)))


def data(shape, seed):
    return np.random.RandomState(seed).uniform(-1, 1, size=shape).astype(np.float32)


# ------------------------------------------------------------------------- model zoo
def zoo_names(mx, name):
    """The SHA-1 of the network's graph traced on a Symbol (its JSON text: every node's
    operator, name and attributes), parameter names and shapes (symbolic shape inference on
    the standard input), the names of the saved file and the output shape of one
    architecture."""
    vision = mx.gluon.model_zoo.vision
    with mx.name.NameManager():
        net = vision.get_model(name)
    sym = net(mx.sym.var('data'))
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(data=input_shape(name))
    shapes = dict(zip(sym.list_arguments(), arg_shapes))
    shapes.update(zip(sym.list_auxiliary_states(), aux_shapes))
    params = list(net.collect_params().keys())
    return {'json_sha1': hashlib.sha1(sym.tojson().encode()).hexdigest(),
            'params': params,
            'shapes': [list(shapes[p]) for p in params],
            'saved': sorted(net._collect_params_with_prefix().keys()),
            'out_shape': list(out_shapes[0])}


def zoo_net(mx, vision, case):
    """The network of ``case``, initialised on a first forward, with fixed parameters."""
    name, kwargs, shape = ZOO_CASES[case]
    with mx.name.NameManager():
        net = vision.get_model(name, **kwargs)
    net.initialize()
    net(mx.nd.array(data(shape, 1)))
    fill_params(mx, net)
    return net


def zoo_output(mx, net, case):
    return net(mx.nd.array(data(ZOO_CASES[case][2], 7))).asnumpy()


# ------------------------------------------------------------------------- recurrent
T, N, C, H = 5, 3, 4, 6

#: fused layers: case -> (class, kwargs, whether states are passed)
LAYER_CASES = {
    'rnn_relu_2l': ('RNN', {'num_layers': 2}, True),
    'rnn_tanh_bi': ('RNN', {'activation': 'tanh', 'bidirectional': True}, False),
    'lstm_2l_bi': ('LSTM', {'num_layers': 2, 'bidirectional': True}, True),
    'lstm_ntc': ('LSTM', {'layout': 'NTC'}, False),
    'gru_2l': ('GRU', {'num_layers': 2}, True),
    'gru_bi_ntc': ('GRU', {'bidirectional': True, 'layout': 'NTC'}, True),
}


def make_layer(mx, case):
    cls, kwargs, _ = LAYER_CASES[case]
    with mx.name.NameManager():
        layer = getattr(mx.gluon.rnn, cls)(H, **kwargs)
    layer.initialize()
    return layer


def layer_inputs(mx, layer, case):
    shape = (N, T, C) if LAYER_CASES[case][1].get('layout') == 'NTC' else (T, N, C)
    x = mx.nd.array(data(shape, 3))
    states = None
    if LAYER_CASES[case][2]:
        states = [mx.nd.array(data(info['shape'], 4 + i))
                  for i, info in enumerate(layer.state_info(N))]
    return x, states


def run_layer(mx, case, layer=None):
    """Output, states and gradients (of sum(out * w) over the input, the begin states and
    every parameter) of a fused layer on fixed parameters."""
    if layer is None:
        layer = make_layer(mx, case)
        x, states = layer_inputs(mx, layer, case)
        layer(x, states) if states else layer(x)
        fill_params(mx, layer)
    x, states = layer_inputs(mx, layer, case)
    x.attach_grad()
    for s in states or []:
        s.attach_grad()
    with mx.autograd.record():
        if states:
            out, new_states = layer(x, states)
        else:
            out, new_states = layer(x), []
        w = mx.nd.array(data(out.shape, 9))
        loss = (out * w).sum()
        for i, s in enumerate(new_states):
            loss = loss + (s * mx.nd.array(data(s.shape, 10 + i))).sum()
    loss.backward()
    res = {'out': out.asnumpy(), 'grad_x': x.grad.asnumpy()}
    for i, s in enumerate(new_states):
        res['state%d' % i] = s.asnumpy()
        res['grad_state%d' % i] = states[i].grad.asnumpy()
    for name, p in layer.collect_params().items():
        res['grad:' + name] = p.grad().asnumpy()
    return res


NC, TC = 5, 4        # cells: input features, steps

#: cells unrolled: case -> (layout, merge_outputs, valid_length or None)
CELL_CASES = {
    'rnn_ntc_merge': ('NTC', True, None),
    'rnn_relu_tnc_list': ('TNC', False, None),
    'lstm_tnc_list': ('TNC', False, None),
    'lstm_ntc_valid': ('NTC', True, [4, 2, 3]),
    'gru_ntc_merge': ('NTC', True, None),
    'gru_tnc_valid_list': ('TNC', False, [1, 4, 3]),
    'hybrid_seq': ('NTC', True, None),
    'seq_dropout': ('NTC', None, None),
    'bidirectional': ('NTC', True, None),
    'bidirectional_valid': ('TNC', True, [3, 4, 2]),
    'residual': ('NTC', True, None),
    'residual_valid_list': ('NTC', False, [2, 4, 1]),
    'zoneout': ('NTC', True, None),
    'vardrop': ('NTC', True, None),
    'vardrop_states': ('TNC', False, None),
    'conv1d_gru': ('NTC', True, None),
    'conv2d_lstm': ('TNC', False, None),
    'conv2d_rnn_relu_dilate': ('NTC', True, [2, 4, 3]),
    'conv3d_lstm': ('NTC', True, None),
}

#: one step's input shape (without the batch axis) of the convolutional cells
CONV_STEP_SHAPES = {'conv1d_gru': (2, 7), 'conv2d_lstm': (2, 5, 5),
                    'conv2d_rnn_relu_dilate': (3, 6, 5), 'conv3d_lstm': (1, 3, 4, 4)}


def contrib_rnn(mx):
    """``gluon.contrib.rnn`` of either library (imported: symgraph's package leaves it
    to the first import)."""
    import importlib
    return importlib.import_module(mx.__name__ + '.gluon.contrib.rnn')


def make_cell(mx, case):
    rnn = mx.gluon.rnn
    crnn = contrib_rnn(mx)
    vardrop = crnn.VariationalDropoutCell
    shape = CONV_STEP_SHAPES.get(case)
    with mx.name.NameManager():
        if case == 'conv1d_gru':
            cell = crnn.Conv1DGRUCell(shape, 4, 3, 3, i2h_pad=1)
        elif case == 'conv2d_lstm':
            cell = crnn.Conv2DLSTMCell(shape, 3, (3, 3), (3, 3))
        elif case == 'conv2d_rnn_relu_dilate':
            cell = crnn.Conv2DRNNCell(shape, 2, (3, 2), (3, 1), i2h_pad=(2, 1),
                                      i2h_dilate=(2, 1), h2h_dilate=(2, 1), activation='relu')
        elif case == 'conv3d_lstm':
            cell = crnn.Conv3DLSTMCell(shape, 2, 1, (1, 3, 3))
        elif case == 'rnn_ntc_merge':
            cell = rnn.RNNCell(H)
        elif case == 'rnn_relu_tnc_list':
            cell = rnn.RNNCell(H, activation='relu')
        elif case.startswith('lstm'):
            cell = rnn.LSTMCell(H)
        elif case.startswith('gru'):
            cell = rnn.GRUCell(H)
        elif case == 'hybrid_seq':
            cell = rnn.HybridSequentialRNNCell()
            with cell.name_scope():
                cell.add(rnn.LSTMCell(H))
                cell.add(rnn.GRUCell(H))
        elif case == 'seq_dropout':
            cell = rnn.SequentialRNNCell()
            with cell.name_scope():
                cell.add(rnn.GRUCell(H))
                cell.add(rnn.DropoutCell(0.5))
                cell.add(rnn.RNNCell(H, activation='softsign'))
        elif case.startswith('bidirectional'):
            cell = rnn.BidirectionalCell(rnn.LSTMCell(H, prefix='l_'),
                                         rnn.GRUCell(H, prefix='r_'))
        elif case.startswith('residual'):
            cell = rnn.ResidualCell(rnn.GRUCell(NC))
        elif case == 'zoneout':
            cell = rnn.ZoneoutCell(rnn.LSTMCell(H), zoneout_outputs=0.3, zoneout_states=0.4)
        elif case == 'vardrop':
            cell = vardrop(rnn.GRUCell(H), drop_inputs=0.3, drop_outputs=0.2)
        elif case == 'vardrop_states':
            cell = vardrop(rnn.LSTMCell(H), drop_inputs=0.3, drop_states=0.5,
                           drop_outputs=0.2)
        else:
            raise KeyError(case)
    cell.initialize()
    return cell


def cell_inputs(mx, case):
    layout = CELL_CASES[case][0]
    step = CONV_STEP_SHAPES.get(case, (NC,))
    shape = (N, TC) + step if layout == 'NTC' else (TC, N) + step
    return mx.nd.array(data(shape, 5))


def run_cell(mx, case):
    """Unrolled outputs and states (inference: the dropout kinds pass values through),
    then the gradients of a weighted sum over the input and the parameters."""
    layout, merge, valid = CELL_CASES[case]
    cell = make_cell(mx, case)
    x = cell_inputs(mx, case)
    vl = None if valid is None else mx.nd.array(valid)
    cell.unroll(TC, x, layout=layout, merge_outputs=merge, valid_length=vl)
    fill_params(mx, cell)
    x.attach_grad()
    with mx.autograd.record(train_mode=False):
        outs, states = cell.unroll(TC, x, layout=layout, merge_outputs=merge, valid_length=vl)
        outs_list = outs if isinstance(outs, (list, tuple)) else [outs]
        loss = None
        for i, o in enumerate(outs_list + list(states)):
            term = (o * mx.nd.array(data(o.shape, 20 + i))).sum()
            loss = term if loss is None else loss + term
    loss.backward()
    res = {'out%d' % i: o.asnumpy() for i, o in enumerate(outs_list)}
    res.update({'state%d' % i: s.asnumpy() for i, s in enumerate(states)})
    res['grad_x'] = x.grad.asnumpy()
    for name, p in cell.collect_params().items():
        res['grad:' + name] = p.grad().asnumpy()
    return res


def step_cell(mx):
    """An LSTMCell called step by step on NDArrays, with given begin states."""
    with mx.name.NameManager():
        cell = mx.gluon.rnn.LSTMCell(H, input_size=NC)
    cell.initialize()
    fill_params(mx, cell)
    states = [mx.nd.array(data((N, H), 30)), mx.nd.array(data((N, H), 31))]
    res = {}
    for t in range(2):
        out, states = cell(mx.nd.array(data((N, NC), 32 + t)), states)
        res['out%d' % t] = out.asnumpy()
    res['h'], res['c'] = states[0].asnumpy(), states[1].asnumpy()
    return res


def symbol_names(mx):
    """Names in unrolled and fused graphs built on Symbols."""
    rnn = mx.gluon.rnn
    res = {}
    for kind in ('RNNCell', 'LSTMCell', 'GRUCell'):
        with mx.name.NameManager():
            cell = getattr(rnn, kind)(H)
            outs, states = cell.unroll(3, mx.sym.var('data'), layout='NTC',
                                       merge_outputs=True)
            group = mx.sym.Group([outs] + list(states))
        res[kind] = {'arguments': group.list_arguments(), 'outputs': group.list_outputs(),
                     'json_sha1': hashlib.sha1(group.tojson().encode()).hexdigest()}
    with mx.name.NameManager():
        cell = rnn.BidirectionalCell(rnn.LSTMCell(H, prefix='l_'), rnn.GRUCell(H, prefix='r_'))
        outs, states = cell.unroll(3, mx.sym.var('data'), layout='TNC', merge_outputs=False)
        group = mx.sym.Group(list(outs) + list(states))
    res['BidirectionalCell'] = {'arguments': group.list_arguments(),
                                'outputs': group.list_outputs(),
                                'json_sha1': hashlib.sha1(group.tojson().encode()).hexdigest()}
    for kind in ('RNN', 'LSTM', 'GRU'):
        with mx.name.NameManager():
            layer = getattr(rnn, kind)(H, num_layers=2, bidirectional=True)
            out = layer(mx.sym.var('data'))
        res[kind] = {'arguments': out.list_arguments(), 'outputs': out.list_outputs(),
                     'json_sha1': hashlib.sha1(out.tojson().encode()).hexdigest(),
                     'params': list(layer.collect_params().keys()),
                     'saved': sorted(layer._collect_params_with_prefix().keys())}
    return res


def export_layer(mx, path):
    """A hybridized 2-layer bidirectional LSTM (inside a block, NTC) on fixed parameters,
    exported to ``path``-symbol.json / -0000.params; returns its output."""
    class Tagger(mx.gluon.HybridBlock):
        def __init__(self, **kwargs):
            super(Tagger, self).__init__(**kwargs)
            with self.name_scope():
                self.rnn = mx.gluon.rnn.LSTM(H, num_layers=2, bidirectional=True,
                                             layout='NTC')
                self.out = mx.gluon.nn.Dense(3, flatten=False)

        def hybrid_forward(self, F, x):
            return self.out(self.rnn(x))

    with mx.name.NameManager():
        net = Tagger()
    net.initialize()
    x = mx.nd.array(data((N, T, C), 60))
    net(x)
    fill_params(mx, net, seed=70)
    net.hybridize()
    out = net(x)
    net.export(path, epoch=0)
    return out.asnumpy()


def write():
    """Run under MXNet (this interpreter) and write the data files."""
    import mxnet as mx
    vision = mx.gluon.model_zoo.vision
    os.makedirs(OUT, exist_ok=True)

    flat = {}
    for case in LAYER_CASES:
        flat.update({'layer/%s/%s' % (case, k): v for k, v in run_layer(mx, case).items()})
    for case in CELL_CASES:
        if case not in CONV_STEP_SHAPES:
            flat.update({'cell/%s/%s' % (case, k): v for k, v in run_cell(mx, case).items()})
    # MXNet's oneDNN convolutions leave outputs asnumpy() refuses (IsDefaultData): the
    # convolutional cells run in a child with oneDNN off
    tmp = os.path.join(OUT, 'conv_cells.tmp.npz')
    subprocess.run([sys.executable, os.path.abspath(__file__)], check=True,
                   env=dict(os.environ, MXNET_MKLDNN_ENABLED='0', PROBE_PART=tmp))
    with np.load(tmp) as conv:
        flat.update(conv)
    os.remove(tmp)
    flat.update({'step/' + k: v for k, v in step_cell(mx).items()})
    # a layer's parameters as MXNet saves them (the _unfused names); the test loads them
    layer = make_layer(mx, 'lstm_2l_bi')
    x, states = layer_inputs(mx, layer, 'lstm_2l_bi')
    layer(x, states)
    fill_params(mx, layer, seed=50)
    layer.save_parameters(os.path.join(OUT, 'lstm_bi.params'))
    flat.update({'saved_layer/' + k: v for k, v in run_layer(mx, 'lstm_2l_bi', layer).items()})
    flat['export/out'] = export_layer(mx, os.path.join(OUT, 'lstm_tagger'))
    np.savez_compressed(os.path.join(OUT, 'rnn.npz'), **flat)
    with open(os.path.join(OUT, 'rnn_names.json'), 'w') as f:
        json.dump(symbol_names(mx), f, indent=1, sort_keys=True)

    outs = {}
    for case in ZOO_CASES:
        net = zoo_net(mx, vision, case)
        outs[case] = zoo_output(mx, net, case)
        if case == 'mobilenet0.25':
            net.save_parameters(os.path.join(OUT, 'mobilenet0.25.params'))
        print(case, outs[case].shape, flush=True)
    np.savez_compressed(os.path.join(OUT, 'zoo.npz'), **outs)
    names = {name: zoo_names(mx, name) for name in ALL_MODELS}
    with open(os.path.join(OUT, 'zoo_names.json'), 'w') as f:
        json.dump(names, f, indent=0, sort_keys=True)
    print('wrote', OUT)


def main():
    try:
        import mxnet  # noqa: F401
    except ImportError:
        python = sys.argv[1] if len(sys.argv) > 1 else os.environ.get('MXNET_PYTHON')
        if not python:
            raise SystemExit('run with an interpreter that has MXNet 1.9.1, or pass it '
                             '(argument or $MXNET_PYTHON)')
        subprocess.run([python, os.path.abspath(__file__)], check=True)
        return
    part = os.environ.get('PROBE_PART')
    if part:
        import mxnet as mx
        np.savez(part, **{'cell/%s/%s' % (case, k): v for case in CONV_STEP_SHAPES
                          for k, v in run_cell(mx, case).items()})
    else:
        write()
    sys.stdout.flush()
    # MXNet may hang at interpreter exit (MXNET_SEMANTICS.md)
    os._exit(0)


if __name__ == '__main__':
    main()
