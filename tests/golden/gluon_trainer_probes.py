"""Gluon Trainer steps under MXNet 1.9.1, for ``tests/gluon/test_trainer.py``.

``run(mx)`` builds a tiny net of three Parameters with fixed values and makes a few
``Trainer.step`` calls with fixed gradients (the loss ``sum(w * G)`` has gradient ``G``,
different at each step and on each context), for several optimizers and Trainer settings;
it returns ``{case: {param: [values after step 1, step 2, ...]}}``. The test runs the same
function under symgraph and compares. ``states_case(mx, path)`` also saves a Trainer's
states file after three steps of SGD with momentum (MXNet's file is loaded by the test), and
``convert_case(mx, amp)`` converts a small hybridized net with AMP's
``convert_hybrid_block`` (for tests/contrib/test_amp_gluon.py).

Write the data with an interpreter that has MXNet 1.9.1::

    MXNET_PYTHON=/path/to/mxnet/python python tests/golden/gluon_trainer_probes.py

(or ``python tests/golden/gluon_trainer_probes.py /path/to/mxnet/python``; run directly
with that interpreter, it writes the files itself). Output:
``tests/golden/data/gluon_trainer/{steps.npz, sgd_mom.states, states_case.npz,
convert_hybrid_block.json}``.
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluon_trainer')

#: parameter name -> shape
SHAPES = {'w1': (4, 3), 'b1': (4,), 'w2': (2, 4)}
STEPS = 4


def initial(name):
    """The fixed starting value of a parameter."""
    n = int(np.prod(SHAPES[name]))
    base = {'w1': 0.3, 'b1': -0.2, 'w2': 0.5}[name]
    return (base + 0.1 * np.sin(np.arange(n) + len(name))).reshape(SHAPES[name]) \
        .astype(np.float32)


def gradient(name, step, ctx_index):
    """The fixed gradient of a parameter at a step on a context."""
    n = int(np.prod(SHAPES[name]))
    g = np.cos(0.7 * np.arange(n) + 1.3 * step + 0.5 * ctx_index + len(name))
    return (g * (1.0 + step)).reshape(SHAPES[name]).astype(np.float32)


#: case -> (optimizer, optimizer_params, trainer kwargs, number of contexts, lr_mult,
#: wd_mult, batch size, learning rate set after step 2 or None)
CASES = {
    'sgd_momentum_wd_lr_mult': ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01},
                                {}, 1, {'b1': 0.5, 'w2': 2.0}, {'b1': 0.0}, 4, None),
    'adam_wd_lr_mult': ('adam', {'learning_rate': 0.01, 'wd': 0.001}, {}, 1,
                        {'w2': 3.0}, {'w1': 2.0}, 2, None),
    'sgd_set_learning_rate': ('sgd', {'learning_rate': 0.2, 'momentum': 0.5}, {}, 1, {}, {},
                              1, 0.05),
    'sgd_clip_rescale': ('sgd', {'learning_rate': 0.1, 'clip_gradient': 0.5,
                                 'rescale_grad': 2.0}, {}, 1, {}, {}, 3, None),
    'rmsprop': ('rmsprop', {'learning_rate': 0.01, 'gamma1': 0.8}, {}, 1, {'b1': 0.1}, {}, 1,
                None),
    'two_ctx_device_on_kvstore': ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01},
                                  {'kvstore': 'device'}, 2, {'b1': 0.5}, {}, 4, None),
    'two_ctx_device_local_update': ('adam', {'learning_rate': 0.01},
                                    {'kvstore': 'device', 'update_on_kvstore': False}, 2,
                                    {'w2': 2.0}, {}, 4, None),
    'two_ctx_local': ('sgd', {'learning_rate': 0.1, 'momentum': 0.9},
                      {'kvstore': 'local'}, 2, {}, {}, 2, None),
    'two_ctx_no_kvstore': ('sgd', {'learning_rate': 0.1}, {'kvstore': None}, 2, {}, {}, 1,
                           None),
    'sgd_fp16_multi_precision': ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01,
                                         'multi_precision': True}, {}, 1, {'b1': 0.5}, {}, 2,
                                 None),
    'adam_fp16_two_ctx_multi_precision': ('adam', {'learning_rate': 0.01,
                                                   'multi_precision': True},
                                          {'kvstore': 'device'}, 2, {}, {}, 4, None),
}
#: the cases whose parameters are not float32
DTYPES = {'sgd_fp16_multi_precision': 'float16',
          'adam_fp16_two_ctx_multi_precision': 'float16'}


def make_params(mx, ctxs, lr_mult, wd_mult, dtype='float32'):
    params = {}
    for name in SHAPES:
        p = mx.gluon.Parameter(name, shape=SHAPES[name], dtype=dtype)
        p.initialize(ctx=ctxs)
        p.set_data(mx.nd.array(initial(name), dtype=dtype))
        p.lr_mult = lr_mult.get(name, 1.0)
        p.wd_mult = wd_mult.get(name, 1.0)
        params[name] = p
    return params


def backward(mx, params, ctxs, step):
    """Write the fixed gradients of ``step`` through autograd (so that they are fresh)."""
    for k, ctx in enumerate(ctxs):
        with mx.autograd.record():
            losses = [(p.data(ctx) * mx.nd.array(gradient(n, step, k), ctx=ctx,
                                                 dtype=p.dtype)).sum()
                      for n, p in sorted(params.items())]
            total = mx.nd.add_n(*losses)
        total.backward()


def run_case(mx, name):
    opt, opt_params, kw, nctx, lr_mult, wd_mult, batch, new_lr = CASES[name]
    ctxs = [mx.cpu(i) for i in range(nctx)]
    params = make_params(mx, ctxs, lr_mult, wd_mult, DTYPES.get(name, 'float32'))
    trainer = mx.gluon.Trainer(params, opt, dict(opt_params), **kw)
    out = {n: [] for n in params}
    for step in range(STEPS):
        backward(mx, params, ctxs, step)
        trainer.step(batch)
        if new_lr is not None and step == 1:
            trainer.set_learning_rate(new_lr)
        for n, p in params.items():
            out[n].append(np.stack([d.asnumpy().astype(np.float32) for d in p.list_data()]))
    return {n: np.stack(v) for n, v in out.items()}


def run(mx):
    """{case: {param: array (steps, contexts, *shape)}}."""
    return {case: run_case(mx, case) for case in CASES}


def states_case(mx, path):
    """Three steps of SGD with momentum, save_states to ``path``; returns the parameters
    after the three steps and after two more (the test loads the file and makes the same
    two steps)."""
    ctxs = [mx.cpu()]
    params = make_params(mx, ctxs, {'b1': 0.5}, {})
    trainer = mx.gluon.Trainer(params, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9,
                                               'wd': 0.01})
    for step in range(3):
        backward(mx, params, ctxs, step)
        trainer.step(2)
    trainer.save_states(path)
    mid = {n: p.data().asnumpy() for n, p in params.items()}
    for step in range(3, 5):
        backward(mx, params, ctxs, step)
        trainer.step(2)
    end = {n: p.data().asnumpy() for n, p in params.items()}
    return mid, end


def convert_net(mx):
    """The float32 network of :func:`convert_case`, hybridized and run once."""
    nn = mx.gluon.nn
    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(nn.Dense(8, activation='relu'), nn.BatchNorm(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.array(np.linspace(-1, 1, 20).reshape(4, 5)))
    return net


def convert_case(mx, amp):
    """AMP's ``convert_hybrid_block`` of :func:`convert_net`:
    ``{'optional_<bool>': {'json': converted graph, 'dtypes': {param: dtype name}}}``."""
    out = {}
    for optional in (False, True):
        block = amp.convert_hybrid_block(convert_net(mx), ctx=mx.cpu(),
                                         cast_optional_params=optional)
        out['optional_%s' % optional] = {
            'json': json.loads(block._cached_graph[1].tojson(remove_amp_cast=False)),
            'dtypes': {k: np.dtype(v.dtype).name for k, v in block.collect_params().items()}}
    return out


def write():
    """Run under MXNet (this interpreter) and write the data files."""
    import mxnet as mx
    os.makedirs(OUT, exist_ok=True)
    flat = {'%s/%s' % (case, n): v for case, d in run(mx).items() for n, v in d.items()}
    np.savez(os.path.join(OUT, 'steps.npz'), **flat)
    mid, end = states_case(mx, os.path.join(OUT, 'sgd_mom.states'))
    np.savez(os.path.join(OUT, 'states_case.npz'),
             **{'mid/' + n: v for n, v in mid.items()},
             **{'end/' + n: v for n, v in end.items()})
    from mxnet.contrib import amp
    with open(os.path.join(OUT, 'convert_hybrid_block.json'), 'w') as f:
        json.dump(convert_case(mx, amp), f, indent=1, sort_keys=True)
    print('wrote', OUT)


def main():
    try:
        import mxnet  # noqa: F401
    except ImportError:
        python = sys.argv[1] if len(sys.argv) > 1 else os.environ.get('MXNET_PYTHON')
        if not python:
            raise SystemExit('run with an interpreter that has MXNet 1.9.1, or pass it '
                             '(argument or $MXNET_PYTHON)')
        env = dict(os.environ, MXNET_MKLDNN_ENABLED='0')
        subprocess.run([python, os.path.abspath(__file__)], check=True, env=env)
        return
    write()
    sys.stdout.flush()
    # MXNet may hang at interpreter exit (MXNET_SEMANTICS.md)
    os._exit(0)


if __name__ == '__main__':
    main()
