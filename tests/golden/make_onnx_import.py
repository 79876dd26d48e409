"""ONNX files written by MXNet 1.9.1's own exporter, with MXNet's outputs, for the import tests:

    $MXNET_PYTHON tests/golden/make_onnx_import.py

(``$MXNET_PYTHON``: an interpreter with ``mxnet==1.9.1`` and an ``onnx`` its exporter accepts,
e.g. ``onnx==1.10.2`` with ``protobuf<3.21``; the script runs itself again under that
interpreter when started by another one.) Writes ``tests/golden/data/onnx/``:

* ``<model>.onnx``: ``mx.onnx.export_model`` of the model (the opset is the one MXNet picks
  for the installed ``onnx``);
* ``<model>-io.npz``: ``in:<name>`` the seeded inputs, ``out:<i>`` MXNet's outputs of
  ``forward(is_train=False)`` on them;
* ``<model>-mxnet-import.json``: what MXNet 1.9.1's own importer
  (``mx.contrib.onnx``) makes of the file: ``metadata`` (``get_model_metadata``), and
  ``outputs``, ``arg_params``, ``aux_params`` (names, from ``import_model``) or
  ``error`` where it fails;
* ``cnn-symbol.json`` / ``cnn-0000.params``: the small CNN as an MXNet checkpoint
  (``mx.model.save_checkpoint``), the input of ``examples/onnx_to_pytorch.py``.

The models: ``cnn`` (Convolution, BatchNorm with ``fix_gamma=False``, relu, max and global
average Pooling, Flatten, FullyConnected, softmax), ``mlp`` (FullyConnected, relu, tanh,
sigmoid), ``resnet_tiny`` (Gluon model zoo ``ResNetV1`` with ``BasicBlockV1``, one block per
stage, 4-32 channels, hybridized and exported: the resnet18_v1 structure small enough to
commit), ``lstm`` (a Gluon two-layer ``rnn.LSTM``, run with oneDNN on: MXNet's native CPU
RNN refuses Gluon-exported graphs; its input size equals its hidden size because MXNet's
exporter slices layer 0's input weights as if they were hidden x hidden) and
``transformer`` (FullyConnected with ``flatten=False``, LayerNorm, batch_dot attention,
softmax, GELU).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'onnx')
MODELS = ('cnn', 'mlp', 'resnet_tiny', 'lstm', 'transformer')


def _reexec():
    """Run this script under $MXNET_PYTHON when the current interpreter lacks MXNet."""
    try:
        import mxnet  # noqa: F401  (only whether it imports)
        return False
    except ImportError:
        py = os.environ.get('MXNET_PYTHON')
        if not py:
            sys.exit('MXNet 1.9.1 is not importable here; set MXNET_PYTHON')
        sys.exit(subprocess.call([py, os.path.abspath(__file__)] + sys.argv[1:]))


def _cnn(mx):
    data = mx.sym.var('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='conv0')
    x = mx.sym.BatchNorm(x, fix_gamma=False, name='bn0')
    x = mx.sym.Activation(x, act_type='relu', name='relu0')
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool0')
    x = mx.sym.Convolution(x, kernel=(3, 3), stride=(2, 2), num_filter=16, name='conv1')
    x = mx.sym.BatchNorm(x, fix_gamma=False, name='bn1')
    x = mx.sym.Activation(x, act_type='relu', name='relu1')
    x = mx.sym.Pooling(x, kernel=(1, 1), global_pool=True, pool_type='avg', name='pool1')
    x = mx.sym.Flatten(x, name='flat')
    x = mx.sym.FullyConnected(x, num_hidden=10, name='fc')
    return mx.sym.softmax(x, name='prob'), {'data': (2, 3, 16, 16)}


def _mlp(mx):
    data = mx.sym.var('data')
    x = mx.sym.FullyConnected(data, num_hidden=32, name='fc1')
    x = mx.sym.Activation(x, act_type='relu', name='relu1')
    x = mx.sym.FullyConnected(x, num_hidden=16, name='fc2')
    x = mx.sym.Activation(x, act_type='tanh', name='tanh2')
    x = mx.sym.FullyConnected(x, num_hidden=4, name='fc3')
    return mx.sym.Activation(x, act_type='sigmoid', name='sig3'), {'data': (3, 20)}


def _transformer(mx):
    data = mx.sym.var('data')                       # (batch, seq, units)
    q = mx.sym.FullyConnected(data, num_hidden=16, flatten=False, name='q')
    k = mx.sym.FullyConnected(data, num_hidden=16, flatten=False, name='k')
    v = mx.sym.FullyConnected(data, num_hidden=16, flatten=False, name='v')
    att = mx.sym.batch_dot(q, k, transpose_b=True, name='qk') * 0.25
    att = mx.sym.softmax(att, axis=-1, name='att')
    ctx = mx.sym.batch_dot(att, v, name='ctx')
    x = mx.sym.LayerNorm(ctx + data, axis=-1, eps=1e-5, name='ln')
    h = mx.sym.FullyConnected(x, num_hidden=32, flatten=False, name='ffn1')
    h = mx.sym.LeakyReLU(h, act_type='gelu', name='gelu')
    h = mx.sym.FullyConnected(h, num_hidden=16, flatten=False, name='ffn2')
    return h + x, {'data': (2, 5, 16)}


def _init_params(mx, sym, shapes, rng):
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args, aux = {}, {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name not in shapes:
            args[name] = mx.nd.array(rng.uniform(-0.5, 0.5, shape).astype('float32'))
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
        low = 0.5 if name.endswith('var') else -0.5
        aux[name] = mx.nd.array(rng.uniform(low, 1.0, shape).astype('float32'))
    return args, aux


def _gluon(mx, name):
    """A hybridized Gluon block, initialised and run once (so that it exports)."""
    if name == 'resnet_tiny':
        from mxnet.gluon.model_zoo.vision.resnet import ResNetV1, BasicBlockV1
        net = ResNetV1(BasicBlockV1, [1, 1, 1, 1], [4, 4, 8, 16, 32], classes=10)
        shapes = {'data': (2, 3, 32, 32)}
    else:
        net = mx.gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(mx.gluon.rnn.LSTM(12, num_layers=2, layout='NTC', input_size=12))
            net.add(mx.gluon.nn.Dense(5, flatten=False))
        shapes = {'data': (2, 7, 12)}
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    net(mx.nd.zeros(shapes['data']))
    prefix = os.path.join(OUT, '_tmp_' + name)
    net.export(prefix)
    sym, args, aux = mx.model.load_checkpoint(prefix, 0)
    for f in (prefix + '-symbol.json', prefix + '-0000.params'):
        os.remove(f)
    if name == 'resnet_tiny':               # moving statistics that are not 0 and 1
        rng = __import__('numpy').random.RandomState(5)
        for k in aux:
            low = 0.5 if k.endswith('var') else -0.5
            aux[k] = mx.nd.array(rng.uniform(low, 1.0, aux[k].shape).astype('float32'))
    return sym, args, aux, shapes


def _mxnet_import(mx, name, path):
    """What MXNet's own importer makes of the file: names and metadata (JSON)."""
    import contextlib
    import io
    import json
    out = {}
    with contextlib.redirect_stdout(io.StringIO()):    # its deprecation notices
        meta = mx.contrib.onnx.get_model_metadata(path)
        out['metadata'] = {k: [list(t) for t in v] for k, v in meta.items()}
        try:
            sym, args, aux = mx.contrib.onnx.import_model(path)
            out.update(outputs=sym.list_outputs(), arg_params=sorted(args),
                       aux_params=sorted(aux))
        except Exception as e:      # noqa: BLE001 - recorded: MXNet cannot import it
            out['error'] = '%s: %s' % (type(e).__name__, str(e).splitlines()[0][:200])
    with open(os.path.join(OUT, name + '-mxnet-import.json'), 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


def make(name):
    import numpy as np
    import mxnet as mx
    rng = np.random.RandomState(MODELS.index(name) + 1)
    if name in ('resnet_tiny', 'lstm'):
        sym, args, aux, shapes = _gluon(mx, name)
    else:
        sym, shapes = globals()['_' + name](mx)
        args, aux = _init_params(mx, sym, shapes, rng)
    inputs = {k: rng.uniform(-1, 1, s).astype('float32') for k, s in shapes.items()}
    exe = sym.bind(mx.cpu(), dict(args, **{k: mx.nd.array(v) for k, v in inputs.items()}),
                   aux_states=aux, grad_req='null')
    outs = [o.asnumpy() for o in exe.forward(is_train=False)]
    path = os.path.join(OUT, name + '.onnx')
    params = dict(args, **aux)
    mx.onnx.export_model(sym, params, in_shapes=[shapes[k] for k in shapes],
                         in_types=[np.float32] * len(shapes), onnx_file_path=path)
    arrays = {'in:' + k: v for k, v in inputs.items()}
    arrays.update({'out:%d' % i: o for i, o in enumerate(outs)})
    np.savez_compressed(os.path.join(OUT, name + '-io.npz'), **arrays)
    if name == 'cnn':
        mx.model.save_checkpoint(os.path.join(OUT, 'cnn'), 0, sym, args, aux)
    _mxnet_import(mx, name, path)
    print('%s: %s, outputs %s' % (name, path, [o.shape for o in outs]))


def main():
    _reexec()
    os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')
    os.makedirs(OUT, exist_ok=True)
    names = sys.argv[1:] or MODELS
    if len(names) > 1:
        # one process per model: the LSTM needs oneDNN on, the others off (MXNet's oneDNN
        # pooling and deconvolution kernels are wrong in places), and MXNet reads the switch
        # once at start
        for name in names:
            env = dict(os.environ, MXNET_MKLDNN_ENABLED='1' if name == 'lstm' else '0')
            rc = subprocess.call([sys.executable, os.path.abspath(__file__), name], env=env)
            if rc:
                sys.exit(rc)
        return
    make(names[0])
    sys.stdout.flush()
    os._exit(0)                     # MXNet may hang at interpreter exit


if __name__ == '__main__':
    main()
