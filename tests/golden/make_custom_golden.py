"""Golden data for custom operators, made with the real MXNet 1.9.1.

Run with the MXNet venv (Python 3.8, numpy < 1.24)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_custom_golden.py

It writes ``tests/golden/custom/graph.json`` (names, shapes, JSON, the req lists the custom
ops saw) and ``tests/golden/custom/graph.npz`` (inputs, outputs, gradients, aux states per
phase). The op definitions and the graph are functions of the ``mx`` module, so
``test_custom_golden.py`` builds the very same code with symgraph. MXNet is imported only
when this file runs as a script.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'custom')
SEED = 20240611
SHAPES = {'data': (4, 5), 'label': (4, 6)}
GRAD_REQ = {'data': 'null', 'fc_weight': 'write', 'fc_bias': 'add', 'ss_gamma': 'add',
            'b0': 'write', 'label': 'null'}
STEPS = 2


def define_ops(mx, log):
    """Register ``gc_scale_shift`` and ``gc_sq_loss``; ``log`` collects what they see."""

    class ScaleShift(mx.operator.CustomOp):
        def __init__(self, alpha):
            super(ScaleShift, self).__init__()
            self.alpha = alpha

        def forward(self, is_train, req, in_data, out_data, aux):
            log.append(['ss.forward', int(is_train), list(req)])
            x, gamma, beta = [a.asnumpy() for a in in_data]
            pre = x * gamma + beta
            self.assign(out_data[1], req[1], mx.nd.array(pre))
            self.assign(out_data[0], req[0], np.tanh(pre) * self.alpha)
            if is_train:
                aux[0][:] = aux[0] + 1

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            log.append(['ss.backward', list(req)])
            x, gamma = in_data[0].asnumpy(), in_data[1].asnumpy()
            t = out_data[0].asnumpy() / self.alpha
            d_pre = out_grad[0].asnumpy() * self.alpha * (1 - t * t) + out_grad[1].asnumpy()
            self.assign(in_grad[0], req[0], mx.nd.array(d_pre * gamma))
            self.assign(in_grad[1], req[1], mx.nd.array((d_pre * x).sum(axis=0)))
            self.assign(in_grad[2], req[2], mx.nd.array(d_pre.sum(axis=0)))

    @mx.operator.register('gc_scale_shift')
    class ScaleShiftProp(mx.operator.CustomOpProp):
        def __init__(self, alpha='1.0'):
            super(ScaleShiftProp, self).__init__(need_top_grad=True)
            log.append(['ss.prop', alpha])
            self.alpha = float(alpha)

        def list_arguments(self):
            return ['data', 'gamma', 'beta']

        def list_outputs(self):
            return ['out', 'pre']

        def list_auxiliary_states(self):
            return ['steps']

        def infer_shape(self, in_shape):
            c = in_shape[0][1]
            return [in_shape[0], (c,), (c,)], [in_shape[0], in_shape[0]], [(1,)]

        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return out_grad + in_data[:2] + [out_data[0]]

        def create_operator(self, ctx, shapes, dtypes):
            log.append(['ss.create', str(ctx), [list(s) for s in shapes], list(dtypes)])
            return ScaleShift(self.alpha)

    class SqLoss(mx.operator.CustomOp):
        def __init__(self, grad_scale):
            super(SqLoss, self).__init__()
            self.grad_scale = grad_scale

        def forward(self, is_train, req, in_data, out_data, aux):
            log.append(['loss.forward', int(is_train), list(req)])
            self.assign(out_data[0], req[0], in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            log.append(['loss.backward', list(req)])
            x, y = in_data[0].asnumpy(), in_data[1].asnumpy()
            self.assign(in_grad[0], req[0], mx.nd.array((x - y) * self.grad_scale / len(x)))
            self.assign(in_grad[1], req[1], 0)

    @mx.operator.register('gc_sq_loss')
    class SqLossProp(mx.operator.CustomOpProp):
        def __init__(self, grad_scale='1'):
            super(SqLossProp, self).__init__(need_top_grad=False)
            self.grad_scale = float(grad_scale)

        def list_arguments(self):
            return ['data', 'label']

        def infer_shape(self, in_shape):
            return [in_shape[0], in_shape[0]], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return SqLoss(self.grad_scale)


def build_graph(mx):
    """FullyConnected -> two-output custom op (gamma omitted) -> custom loss head."""
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, num_hidden=6, name='fc')
    ss = mx.sym.Custom(data=fc, beta=mx.sym.Variable('b0'), op_type='gc_scale_shift',
                       alpha=0.5, name='ss')
    loss = mx.sym.Custom(ss[0], mx.sym.Variable('label'), op_type='gc_sq_loss',
                         grad_scale=2, name='loss')
    return mx.sym.Group([loss, ss[1]])


def inputs(arg_names):
    """Deterministic argument values and head gradients."""
    rng = np.random.RandomState(SEED)
    shapes = {'data': (4, 5), 'fc_weight': (6, 5), 'fc_bias': (6,), 'ss_gamma': (6,),
              'b0': (6,), 'label': (4, 6)}
    args = {n: rng.uniform(-1, 1, shapes[n]).astype(np.float32) for n in arg_names}
    heads = [rng.uniform(-1, 1, (4, 6)).astype(np.float32) for _ in range(STEPS)]
    return args, heads


def run(mx, sym, log):
    """Bind, run STEPS training steps and a final inference forward; collect arrays."""
    arrays = {}
    exe = sym.simple_bind(mx.cpu(), grad_req=GRAD_REQ, **SHAPES)
    args, heads = inputs(sym.list_arguments())
    for n, v in args.items():
        exe.arg_dict[n][:] = v
        arrays['arg:' + n] = v
    for n, g in exe.grad_dict.items():
        if g is not None:
            g[:] = 0.25     # 'add' accumulates onto this
    for k in range(STEPS):
        outs = exe.forward(is_train=True)
        exe.backward([mx.nd.zeros((4, 6)), mx.nd.array(heads[k])])
        for i, o in enumerate(outs):
            arrays['p%d:out:%d' % (k, i)] = o.asnumpy()
        for n, g in exe.grad_dict.items():
            if GRAD_REQ[n] != 'null' and g is not None:
                arrays['p%d:grad:%s' % (k, n)] = g.asnumpy()
        for n, a in exe.aux_dict.items():
            arrays['p%d:aux:%s' % (k, n)] = a.asnumpy()
        arrays['head:%d' % k] = heads[k]
    outs = exe.forward(is_train=False)
    for i, o in enumerate(outs):
        arrays['infer:out:%d' % i] = o.asnumpy()
    x = args['data']
    imp = mx.nd.Custom(mx.nd.array(x), mx.nd.ones((5,)), mx.nd.zeros((5,)),
                       mx.nd.zeros((1,)), op_type='gc_scale_shift', alpha=2)
    arrays['nd:out'] = imp[0].asnumpy()
    arrays['nd:pre'] = imp[1].asnumpy()
    if hasattr(mx.nd, 'waitall'):
        mx.nd.waitall()
    return arrays


def describe(sym):
    """Names and shape inference results (JSON-able)."""
    arg, out, aux = sym.infer_shape(**SHAPES)
    parg, pout, paux = sym.infer_shape_partial(data=(4, 5))
    tolist = lambda lst: [list(s) for s in lst]  # noqa: E731
    return {'list_arguments': sym.list_arguments(), 'list_outputs': sym.list_outputs(),
            'list_auxiliary_states': sym.list_auxiliary_states(),
            'infer_shape': [tolist(arg), tolist(out), tolist(aux)],
            'infer_shape_partial_data_only': [tolist(parg), tolist(pout), tolist(paux)],
            'internals': sym.get_internals().list_outputs()}


def main():
    os.environ['MXNET_MKLDNN_ENABLED'] = '0'
    os.environ.setdefault('MXNET_ENGINE_TYPE', 'NaiveEngine')
    os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')
    import mxnet as mx
    log = []
    define_ops(mx, log)
    sym = build_graph(mx)
    meta = describe(sym)
    meta['json'] = json.loads(sym.tojson())
    arrays = run(mx, sym, log)
    meta['log'] = log
    meta['mxnet_version'] = mx.__version__
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, 'graph.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    np.savez(os.path.join(OUT, 'graph.npz'), **arrays)
    print('wrote %s (%d arrays)' % (OUT, len(arrays)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
