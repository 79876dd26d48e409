"""Gluon core probes, written once for MXNet 1.9.1 and symgraph (``define(mx)`` takes the
framework module): small HybridBlocks built on ``gluon.HybridBlock`` alone (no gluon.nn),
so that they test Block, Parameter and hybridize themselves.

Three uses, each its own interpreter::

    # MXNet 1.9.1: write the golden data (tests/golden/data/gluon_core/)
    /path/to/mxnet/python tests/golden/gluon_core_probes.py generate
    # symgraph: write our export and save_parameters files into DIR
    python tests/golden/gluon_core_probes.py write-ours DIR
    # MXNet 1.9.1: load those files (SymbolBlock.imports, Module, load_parameters) and check
    # that they give the golden outputs
    /path/to/mxnet/python tests/golden/gluon_core_probes.py verify DIR

The interpreter of MXNet may also be given as $MXNET_PYTHON for ``all``, which runs the
three steps in turn.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluon_core')
X_SHAPE = (2, 3, 5, 5)


def define(mx):
    """The probe blocks, built on ``mx.gluon.HybridBlock``: {name: class}."""
    gluon = mx.gluon

    class Dense(gluon.HybridBlock):
        def __init__(self, units, in_units=0, **kwargs):
            super(Dense, self).__init__(**kwargs)
            self._units = units
            with self.name_scope():
                self.weight = self.params.get('weight', shape=(units, in_units),
                                              allow_deferred_init=True)
                self.bias = self.params.get('bias', shape=(units,), init='zeros',
                                            allow_deferred_init=True)

        def hybrid_forward(self, F, x, weight, bias):
            return F.FullyConnected(x, weight, bias, num_hidden=self._units, name='fwd')

    class Conv(gluon.HybridBlock):
        def __init__(self, channels, in_channels=0, **kwargs):
            super(Conv, self).__init__(**kwargs)
            self._channels = channels
            with self.name_scope():
                self.weight = self.params.get('weight', shape=(channels, in_channels, 3, 3),
                                              allow_deferred_init=True)
                self.bias = self.params.get('bias', shape=(channels,), init='zeros',
                                            allow_deferred_init=True)

        def hybrid_forward(self, F, x, weight, bias):
            return F.Convolution(x, weight, bias, kernel=(3, 3), pad=(1, 1),
                                 num_filter=self._channels, name='fwd')

    class BN(gluon.HybridBlock):
        def __init__(self, in_channels=0, **kwargs):
            super(BN, self).__init__(**kwargs)
            with self.name_scope():
                self.gamma = self.params.get('gamma', shape=(in_channels,), init='ones',
                                             allow_deferred_init=True)
                self.beta = self.params.get('beta', shape=(in_channels,), init='zeros',
                                            allow_deferred_init=True)
                self.running_mean = self.params.get('running_mean', grad_req='null',
                                                    shape=(in_channels,), init='zeros',
                                                    allow_deferred_init=True,
                                                    differentiable=False)
                self.running_var = self.params.get('running_var', grad_req='null',
                                                   shape=(in_channels,), init='ones',
                                                   allow_deferred_init=True,
                                                   differentiable=False)

        def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
            return F.BatchNorm(x, gamma, beta, running_mean, running_var, fix_gamma=False,
                               name='fwd')

    class Seq(gluon.HybridBlock):
        """A HybridSequential of our own: children registered by number."""
        def add(self, *blocks):
            for b in blocks:
                self.register_child(b)

        def hybrid_forward(self, F, x):
            for b in self._children.values():
                x = b(x)
            return x

    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super(Net, self).__init__(**kwargs)
            with self.name_scope():
                self.conv = Conv(4)
                self.bn = BN()
                self.head = Seq()
                with self.head.name_scope():
                    self.head.add(Dense(8), Dense(3))

        def hybrid_forward(self, F, x):
            y = F.relu(self.bn(self.conv(x)))
            y = self.head(F.relu(F.Flatten(y)))
            return y

    class Plain(gluon.Block):
        """A non-hybrid Block holding HybridBlocks."""
        def __init__(self, **kwargs):
            super(Plain, self).__init__(**kwargs)
            with self.name_scope():
                self.body = Net()
                self.extra = Dense(2)

        def forward(self, x):
            return self.extra(self.body(x))

    return {'Dense': Dense, 'Conv': Conv, 'BN': BN, 'Seq': Seq, 'Net': Net, 'Plain': Plain}


def inputs():
    """The input and head gradient of every probe."""
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, X_SHAPE).astype(np.float32)
    head = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    return x, head


def fill(mx, net):
    """Initialize ``net`` (deferred shapes resolved by one forward), then give every
    parameter values of a fixed random stream in sorted name order."""
    x, _ = inputs()
    net.initialize()
    net(mx.nd.array(x))
    rng = np.random.RandomState(3)
    params = net.collect_params()
    for name in sorted(params.keys()):
        p = params[name]
        v = rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)
        if name.endswith('running_var'):
            v = np.abs(v) + 0.5
        p.set_data(mx.nd.array(v))


def run_net(mx, net, x, head):
    """(output, {param: grad}, x grad, {param: value after}) of a recorded training step."""
    xa = mx.nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        out = net(xa)
    out.backward(mx.nd.array(head))
    params = net.collect_params()
    grads = {k: p.grad().asnumpy() for k, p in params.items() if p.grad_req != 'null'}
    after = {k: p.data().asnumpy() for k, p in params.items()}
    return out.asnumpy(), grads, xa.grad.asnumpy(), after


def probes(mx):
    """JSON-able observations of names, reprs and summaries."""
    blocks = define(mx)
    res = {}
    with mx.name.NameManager():
        net = blocks['Net']()
        net2 = blocks['Net']()
        plain = blocks['Plain']()
        d = blocks['Dense'](5, in_units=4, prefix='mydense_')
    res['names'] = {
        'net': [net.name, net.prefix, net.conv.name, net.head.name,
                [c.name for c in net.head._children.values()], net2.name, plain.name,
                plain.body.name, plain.extra.name, d.name],
        'collect_params': list(net.collect_params().keys()),
        'plain_params': list(plain.collect_params().keys()),
        'select_weight': list(net.collect_params('.*weight').keys()),
        'select_alt': list(net.collect_params('net0_conv0_weight|.*dense1_bias').keys()),
        'structural': sorted(net._collect_params_with_prefix().keys()),
        'plain_structural': sorted(plain._collect_params_with_prefix().keys()),
        'shapes_before': {k: list(p.shape) for k, p in net.collect_params().items()},
    }
    res['repr_net'] = repr(net)
    res['repr_params'] = repr(d.collect_params())
    res['repr_param'] = repr(d.weight)
    res['var_attrs'] = {k: p.var().list_attr() for k, p in net.collect_params().items()}
    x, _ = inputs()
    net.initialize()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        net.summary(mx.nd.array(x))
    res['summary'] = buf.getvalue()
    res['shapes_after'] = {k: list(p.shape) for k, p in net.collect_params().items()}
    return res


def generate(mx, out=OUT):
    """Write MXNet's files and values."""
    os.makedirs(out, exist_ok=True)
    blocks = define(mx)
    x, head = inputs()
    with mx.name.NameManager():
        net = blocks['Net']()
    fill(mx, net)
    net.save_parameters(os.path.join(out, 'net.params'))
    with mx.name.NameManager():
        legacy = blocks['Net']()
    fill(mx, legacy)
    legacy.save_params(os.path.join(out, 'net_legacy.params'))
    y_eval = net(mx.nd.array(x)).asnumpy()
    y, grads, xgrad, after = run_net(mx, net, x, head)
    net.hybridize()
    with mx.name.NameManager():
        hnet = blocks['Net']()
    hnet.load_parameters(os.path.join(out, 'net.params'))
    hnet.hybridize()
    hy, hgrads, hxgrad, hafter = run_net(mx, hnet, x, head)
    np.testing.assert_allclose(hy, y, rtol=1e-5, atol=1e-6)
    hnet.export(os.path.join(out, 'net'), epoch=3)
    arrays = {'x': x, 'head': head, 'y_eval': y_eval, 'y': y, 'xgrad': xgrad}
    arrays.update({'grad:' + k: v for k, v in grads.items()})
    arrays.update({'after:' + k: v for k, v in after.items()})
    np.savez(os.path.join(out, 'values.npz'), **arrays)
    with open(os.path.join(out, 'probes.json'), 'w') as f:
        json.dump(probes(mx), f, indent=1, sort_keys=True)


def write_ours(mx, out):
    """Write symgraph's export and save_parameters files of the golden net."""
    os.makedirs(out, exist_ok=True)
    blocks = define(mx)
    x, _ = inputs()
    with mx.name.NameManager():
        net = blocks['Net']()
    net.load_parameters(os.path.join(OUT, 'net.params'))
    net.save_parameters(os.path.join(out, 'ours.params'))
    net.hybridize()
    net(mx.nd.array(x))
    net.export(os.path.join(out, 'ours'), epoch=1)


def verify(mx, ours):
    """Under MXNet: our files load and give MXNet's outputs."""
    gold = np.load(os.path.join(OUT, 'values.npz'))
    x = mx.nd.array(gold['x'])
    blocks = define(mx)
    with mx.name.NameManager():
        net = blocks['Net']()
    net.load_parameters(os.path.join(ours, 'ours.params'))
    np.testing.assert_allclose(net(x).asnumpy(), gold['y_eval'], rtol=1e-5, atol=1e-6)
    print('MXNet load_parameters(our save_parameters): outputs match')
    imported = mx.gluon.SymbolBlock.imports(os.path.join(ours, 'ours-symbol.json'), ['data'],
                                            os.path.join(ours, 'ours-0001.params'))
    np.testing.assert_allclose(imported(x).asnumpy(), gold['y_eval'], rtol=1e-5, atol=1e-6)
    print('MXNet SymbolBlock.imports(our export): outputs match')
    sym, args, auxs = mx.model.load_checkpoint(os.path.join(ours, 'ours'), 1)
    mod = mx.mod.Module(sym, data_names=['data'], label_names=None)
    mod.bind(data_shapes=[('data', X_SHAPE)], for_training=False)
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), gold['y_eval'], rtol=1e-5,
                               atol=1e-6)
    print('MXNet Module on our export: outputs match')


def main(argv):
    if not argv or argv[0] not in ('generate', 'write-ours', 'verify', 'all'):
        sys.exit(__doc__)
    if argv[0] == 'all':
        mxpy = os.environ.get('MXNET_PYTHON')
        if not mxpy:
            sys.exit('set MXNET_PYTHON to the interpreter of MXNet 1.9.1')
        me = os.path.abspath(__file__)
        tmp = tempfile.mkdtemp()
        subprocess.check_call([mxpy, me, 'generate'])
        subprocess.check_call([sys.executable, me, 'write-ours', tmp])
        subprocess.check_call([mxpy, me, 'verify', tmp])
        return
    if argv[0] == 'write-ours':
        sys.path.insert(0, os.path.join(HERE, '..', '..'))
        import symgraph as mx
        write_ours(mx, argv[1])
        return
    os.environ.setdefault('MXNET_MKLDNN_ENABLED', '0')
    import mxnet as mx
    if argv[0] == 'generate':
        generate(mx)
    else:
        verify(mx, argv[1])
    sys.stdout.flush()
    os._exit(0)     # MXNet may hang at interpreter exit


if __name__ == '__main__':
    main(sys.argv[1:])
