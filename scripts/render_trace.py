#!/usr/bin/env python
"""Draw a profiler trace as an SVG timeline (symgraph.profiler.render_svg).

    python scripts/render_trace.py --trace profile.json --out profile.svg
    python scripts/render_trace.py                  # the README's picture

Without ``--trace`` it profiles the picture's program and draws it into
``docs/profile_trace.svg`` (and its trace into ``--json`` if given): a small CNN with a
custom operator (Convolution, BatchNorm, relu, a Python ``CustomOp`` sigmoid, Convolution,
pooling, FullyConnected, SoftmaxOutput) bound with ``simple_bind``, one training step
(forward, backward, an SGD update per weight through ``mx.nd``) after a warm-up, profiled
with ``profile_all=True``: the executor's steps and their backward on the main thread's
row, the custom operator's Python code and its ``mx.nd`` calls inside its node, the
oneDNN primitives on their row, the executor's live bytes as a counter.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def demo_trace(path):
    """Profile the picture's program into the trace file ``path``."""
    import symgraph as mx

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register('sigmoid_py')
    class SigmoidProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def list_arguments(self):
            return ['data']

        def list_outputs(self):
            return ['output']

        def infer_shape(self, in_shape):
            return [in_shape[0]], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()

    data = mx.sym.Variable('data')
    net = mx.sym.Convolution(data, num_filter=32, kernel=(3, 3), pad=(1, 1), name='conv1')
    net = mx.sym.BatchNorm(net, name='bn1')
    net = mx.sym.Activation(net, act_type='relu', name='relu1')
    net = mx.sym.Custom(net, op_type='sigmoid_py', name='gate')
    net = mx.sym.Convolution(net, num_filter=32, kernel=(3, 3), pad=(1, 1), name='conv2')
    net = mx.sym.Activation(net, act_type='relu', name='relu2')
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool')
    net = mx.sym.FullyConnected(net, num_hidden=10, name='fc')
    net = mx.sym.SoftmaxOutput(net, name='softmax')
    exe = net.simple_bind(mx.cpu(), data=(32, 16, 32, 32))
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.randint(0, 10, arr.shape) if name == 'softmax_label' else \
            rng.uniform(-0.3, 0.3, arr.shape)
    weights = [n for n in exe.arg_dict if n not in ('data', 'softmax_label')]

    def step():
        exe.forward(is_train=True)
        exe.backward()
        for n in weights:
            mx.nd.sgd_update(exe.arg_dict[n], exe.grad_dict[n], lr=0.01,
                             out=exe.arg_dict[n])
    step()
    mx.profiler.set_config(profile_all=True, filename=path, continuous_dump=False)
    mx.profiler.set_state('run')
    step()
    mx.profiler.set_state('stop')
    mx.profiler.dump()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--trace', help='a trace file to draw (default: profile the demo)')
    ap.add_argument('--out', default=os.path.join(ROOT, 'docs', 'profile_trace.svg'))
    ap.add_argument('--json', help='with the demo: also keep its trace file here')
    ap.add_argument('--width', type=int, default=1400)
    ap.add_argument('--title', default=None)
    args = ap.parse_args(argv)
    from symgraph.profiler import render_svg
    if args.trace:
        render_svg(args.trace, args.out, width=args.width,
                   title=args.title or os.path.basename(args.trace))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = args.json or os.path.join(tmp, 'profile.json')
            demo_trace(path)
            render_svg(path, args.out, width=args.width, title=args.title or
                       'symgraph profile: one training step (forward, backward, SGD '
                       'updates) of a CNN with a Python custom operator')
    print('wrote', args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
