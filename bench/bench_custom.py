"""Cost of a Custom node against the same computation as a built-in operator.

A ReLU written as a custom op (forward through ``mx.nd.Activation``, backward with NDArray
arithmetic, both via ``self.assign``) is bound in a one-node graph next to the built-in
``Activation(act_type='relu')``; the script reports microseconds per executor call for an
inference forward and for a training forward + backward, at a tiny and a larger size, and
the per-call overhead of the Custom node (the difference).

Usage::

    python bench/bench_custom.py [--ctx cpu|gpu] [--repeat N]
"""
import argparse
import time

import numpy as np

import symgraph as mx


class _Relu(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.Activation(in_data[0], act_type='relu'))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * (in_data[0] > 0))


@mx.operator.register('bench_relu')
class _ReluProp(mx.operator.CustomOpProp):
    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Relu()


def _executor(kind, shape, ctx):
    x = mx.sym.Variable('x')
    if kind == 'builtin':
        y = mx.sym.Activation(x, act_type='relu', name='relu')
    else:
        y = mx.sym.Custom(x, op_type='bench_relu', name='relu')
    exe = y.simple_bind(ctx, x=shape)
    exe.arg_dict['x'][:] = np.random.RandomState(0).uniform(-1, 1, shape)
    return exe, mx.nd.ones(shape, ctx=ctx)


def _time(fn, repeat, sync):
    for _ in range(max(3, repeat // 10)):
        fn()
    sync()
    best = float('inf')
    for _ in range(5):          # best of 5 rounds: the least disturbed measurement
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--ctx', default='cpu', choices=['cpu', 'gpu'])
    ap.add_argument('--repeat', type=int, default=300)
    args = ap.parse_args(argv)
    ctx = mx.gpu(0) if args.ctx == 'gpu' else mx.cpu()
    sync = mx.nd.waitall
    print('Custom node vs built-in Activation(relu) on %s (microseconds per call, best of 5)'
          % ctx)
    print('%-12s %-16s %10s %10s %10s' % ('shape', 'call', 'built-in', 'Custom', 'overhead'))
    rows = []
    for shape in [(1, 16), (256, 1024)]:
        exes = {k: _executor(k, shape, ctx) for k in ('builtin', 'custom')}
        for call in ('forward', 'forward+backward'):
            res = {}
            for k, (exe, head) in exes.items():
                if call == 'forward':
                    res[k] = _time(lambda: exe.forward(is_train=False), args.repeat, sync)
                else:
                    def step(exe=exe, head=head):
                        exe.forward(is_train=True)
                        exe.backward([head])
                    res[k] = _time(step, args.repeat, sync)
            rows.append((shape, call, res['builtin'], res['custom']))
            print('%-12s %-16s %10.1f %10.1f %10.1f' % (str(shape), call, res['builtin'],
                                                       res['custom'],
                                                       res['custom'] - res['builtin']))
        a = exes['builtin'][0]
        b = exes['custom'][0]
        a.forward(is_train=True)
        a.backward([exes['builtin'][1]])
        b.forward(is_train=True)
        b.backward([exes['custom'][1]])
        np.testing.assert_allclose(a.grad_dict['x'].asnumpy(), b.grad_dict['x'].asnumpy())
        np.testing.assert_allclose(a.outputs[0].asnumpy(), b.outputs[0].asnumpy())
    return rows


if __name__ == '__main__':
    main()
