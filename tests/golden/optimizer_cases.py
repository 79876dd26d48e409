"""Optimizer, LR scheduler and kvstore scenarios written once against the MXNet 1.x API and
run by both MXNet 1.9.1 (``make_optimizer.py``, to write the golden files) and symgraph (the
tests, to compare): the same calls on the same inputs, ``mx`` being either package.

Python 3.8 compatible (MXNet 1.9.1's venv runs it).
"""
import logging

import numpy as np

#: parameters: index -> (name, shape); lr_mult/wd_mult come from Variable attributes
PARAMS = [(0, 'fc_weight', (3, 4)), (1, 'fc_bias', (4,)), (2, 'bn_gamma', (4,)),
          (3, 'emb_weight', (2, 3))]
STEPS = 5
COMMON = dict(wd=0.01, rescale_grad=0.5, clip_gradient=0.8)

#: (case name, optimizer name, kwargs, options). options: 'mp' (float16 weights with
#: multi_precision), 'single' (one index per updater call, as a kvstore does), 'nosched'
#: (no lr_scheduler), 'noclip', 'nowd', 'names' (param_idx2name and sym)
OPTIMIZER_CASES = [
    ('sgd', 'sgd', dict(learning_rate=0.1), ()),
    ('sgd_mom', 'sgd', dict(learning_rate=0.1, momentum=0.9), ()),
    ('sgd_mom_noclip', 'sgd', dict(learning_rate=0.1, momentum=0.9), ('noclip',)),
    ('sgd_mom_single', 'sgd', dict(learning_rate=0.1, momentum=0.9), ('single',)),
    ('sgd_mom_mp', 'sgd', dict(learning_rate=0.1, momentum=0.9), ('mp',)),
    ('sgd_mp', 'sgd', dict(learning_rate=0.1), ('mp',)),
    ('ccsgd', 'ccsgd', dict(learning_rate=0.1, momentum=0.5), ()),
    ('nag', 'nag', dict(learning_rate=0.1), ()),
    ('nag_mom', 'nag', dict(learning_rate=0.1, momentum=0.9), ()),
    ('nag_mom_mp', 'nag', dict(learning_rate=0.1, momentum=0.9), ('mp',)),
    ('signum', 'signum', dict(learning_rate=0.05, momentum=0.9, wd_lh=0.01), ()),
    ('signsgd', 'signum', dict(learning_rate=0.05, momentum=0.0), ()),
    ('ftml', 'ftml', dict(learning_rate=0.05), ()),
    ('lars', 'lars', dict(learning_rate=0.1, momentum=0.9, eta=0.01), ()),
    ('lars_nomom', 'lars', dict(learning_rate=0.1, eta=0.01, eps=1e-3), ()),
    ('lars_mp', 'lars', dict(learning_rate=0.1, momentum=0.9, eta=0.01), ('mp',)),
    ('lamb', 'lamb', dict(learning_rate=0.01), ()),
    ('lamb_bounds', 'lamb', dict(learning_rate=0.01, lower_bound=0.5, upper_bound=2.0,
                                 bias_correction=False), ()),
    ('lamb_single', 'lamb', dict(learning_rate=0.01), ('single',)),
    ('lamb_mp', 'lamb', dict(learning_rate=0.01), ('mp',)),
    ('lbsgd', 'lbsgd', dict(learning_rate=0.1, momentum=0.9, warmup_epochs=1,
                            updates_per_epoch=4, batch_scale=2), ('single',)),
    ('dcasgd', 'dcasgd', dict(learning_rate=0.1, lamda=0.1), ()),
    ('adam', 'adam', dict(learning_rate=0.01), ()),
    ('adam_mp', 'adam', dict(learning_rate=0.01), ('mp',)),
    ('adam_nowd', 'adam', dict(learning_rate=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6),
     ('nowd', 'noclip')),
    ('adamw', 'adamw', dict(learning_rate=0.01), ()),
    ('adamw_mp', 'adamw', dict(learning_rate=0.01), ('mp',)),
    ('adagrad', 'adagrad', dict(learning_rate=0.1), ()),
    ('adadelta', 'adadelta', dict(learning_rate=1.0, rho=0.9), ()),
    ('rmsprop', 'rmsprop', dict(learning_rate=0.01), ()),
    ('rmsprop_clipw', 'rmsprop', dict(learning_rate=0.01, clip_weights=0.9), ()),
    ('rmsprop_centered', 'rmsprop', dict(learning_rate=0.01, centered=True), ()),
    ('rmsprop_mp', 'rmsprop', dict(learning_rate=0.01, centered=True), ('mp',)),
    ('ftrl', 'ftrl', dict(learning_rate=0.1, lamda1=0.01), ()),
    ('adamax', 'adamax', dict(learning_rate=0.01), ()),
    ('nadam', 'nadam', dict(learning_rate=0.01), ()),
    ('test', 'test', dict(), ()),
    ('groupadagrad', 'groupadagrad', dict(learning_rate=0.1), ('nowd', 'only2d')),
]


def _rng(seed):
    return np.random.RandomState(seed)


def initial_weights(dtype='float32'):
    rng = _rng(1)
    return {i: rng.uniform(-1.5, 1.5, shape).astype(dtype) for i, _, shape in PARAMS}


def gradients(step, dtype='float32'):
    rng = _rng(100 + step)
    return {i: (rng.uniform(-2, 2, shape) * (1 + step)).astype(dtype)
            for i, _, shape in PARAMS}


def _symbol(mx):
    vs = [mx.sym.var('fc_weight', lr_mult=2.0), mx.sym.var('fc_bias'),
          mx.sym.var('bn_gamma', wd_mult=0.5), mx.sym.var('emb_weight')]
    return mx.sym.Group(vs)


def make_optimizer(mx, opt_name, kwargs, options):
    kw = dict(kwargs)
    common = dict(COMMON)
    if 'noclip' in options:
        common.pop('clip_gradient')
    if 'nowd' in options:
        common.pop('wd')
    kw.update(common)
    if 'nosched' not in options:
        lr = kw.get('learning_rate', 0.01)
        kw['lr_scheduler'] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=lr)
    if 'mp' in options:
        kw['multi_precision'] = True
    kw['param_idx2name'] = {i: n for i, n, _ in PARAMS}
    kw['sym'] = _symbol(mx)
    opt = mx.optimizer.create(opt_name, **kw)
    opt.set_lr_mult({'fc_bias': 0.5})
    return opt


def _flat_state(prefix, state, out):
    if state is None:
        return
    if isinstance(state, (tuple, list)):
        for k, s in enumerate(state):
            _flat_state('%s.%d' % (prefix, k), s, out)
        return
    out[prefix] = state.asnumpy()


def run_optimizer(mx, case, steps=STEPS, updater=None, weights=None, start=0):
    """Run ``steps`` updates; returns ({key: array}, updater, weights)."""
    name, opt_name, kwargs, options = case
    dtype = 'float16' if 'mp' in options else 'float32'
    params = [p for p in PARAMS if 'only2d' not in options or len(p[2]) == 2]
    if updater is None:
        updater = mx.optimizer.get_updater(make_optimizer(mx, opt_name, kwargs, options))
    if weights is None:
        init = initial_weights(dtype)
        weights = {i: mx.nd.array(init[i], dtype=dtype) for i, _, _ in params}
    out = {}
    for step in range(start, start + steps):
        g = gradients(step, dtype)
        grads = {i: mx.nd.array(g[i], dtype=dtype) for i, _, _ in params}
        idx = [i for i, _, _ in params]
        if 'single' in options:
            for i in idx:
                updater(i, grads[i], weights[i])
        else:
            updater(idx, [grads[i] for i in idx], [weights[i] for i in idx])
        if step in (start, start + steps - 1):
            for i, _, _ in params:
                out['%s/step%d/w%d' % (name, step, i)] = weights[i].asnumpy()
                _flat_state('%s/step%d/s%d' % (name, step, i), updater.states.get(i), out)
    out['%s/num_update' % name] = np.array(updater.optimizer.num_update)
    return out, updater, weights


def run_all_optimizers(mx, cases=None):
    out = {}
    for case in cases or OPTIMIZER_CASES:
        out.update(run_optimizer(mx, case)[0])
    return out


# ---------------------------------------------------------------------------- schedulers

SCHEDULER_CASES = [
    ('factor', 'FactorScheduler', dict(step=3, factor=0.5, base_lr=0.1)),
    ('factor_stop', 'FactorScheduler', dict(step=2, factor=0.1, stop_factor_lr=1e-4,
                                            base_lr=0.1)),
    ('factor_warm', 'FactorScheduler', dict(step=3, factor=0.5, base_lr=0.1, warmup_steps=4,
                                            warmup_begin_lr=0.01)),
    ('multifactor', 'MultiFactorScheduler', dict(step=[3, 7, 12], factor=0.3, base_lr=0.2)),
    ('multifactor_warm', 'MultiFactorScheduler', dict(step=[5, 9], factor=0.5, base_lr=0.2,
                                                      warmup_steps=3,
                                                      warmup_mode='constant',
                                                      warmup_begin_lr=0.05)),
    ('poly', 'PolyScheduler', dict(max_update=12, base_lr=0.1, pwr=2)),
    ('poly_warm', 'PolyScheduler', dict(max_update=15, base_lr=0.1, pwr=3, final_lr=0.01,
                                        warmup_steps=4, warmup_begin_lr=0.02)),
    ('cosine', 'CosineScheduler', dict(max_update=12, base_lr=0.1)),
    ('cosine_warm', 'CosineScheduler', dict(max_update=15, base_lr=0.1, final_lr=0.005,
                                            warmup_steps=5)),
]
SCHED_UPDATES = list(range(0, 20)) + [25, 40]


class _Capture(logging.Handler):
    def __init__(self):
        logging.Handler.__init__(self)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def run_schedulers(mx):
    """{name: (learning rates over SCHED_UPDATES, log messages)}."""
    out = {}
    root = logging.getLogger()
    for name, cls, kwargs in SCHEDULER_CASES:
        cap = _Capture()
        level = root.level
        root.addHandler(cap)
        root.setLevel(logging.INFO)
        try:
            sched = getattr(mx.lr_scheduler, cls)(**kwargs)
            lrs = [sched(n) for n in SCHED_UPDATES]
        finally:
            root.removeHandler(cap)
            root.setLevel(level)
        out[name] = (lrs, cap.messages)
    return out


# ---------------------------------------------------------------------------- kvstore

def run_kvstore(mx):
    """push/pull/pushpull over two devices, with and without an optimizer, and 2-bit
    compression on a 'device' store."""
    out = {}
    rng = _rng(7)
    devs = [mx.cpu(0), mx.cpu(1)]
    shape = (3, 5)

    def vals(k):
        return [mx.nd.array(rng.uniform(-1, 1, shape) * (k + 1), ctx=d) for d in devs]

    for kind in ('local', 'device'):
        # plain sums
        kv = mx.kv.create(kind)
        kv.init([3, 5], [mx.nd.ones(shape), mx.nd.zeros(shape)])
        kv.push([3, 5], [vals(0), vals(1)])
        outs = [[mx.nd.zeros(shape, ctx=d) for d in devs] for _ in range(2)]
        kv.pull([3, 5], out=outs)
        out['%s/sum3' % kind] = outs[0][1].asnumpy()
        out['%s/sum5' % kind] = outs[1][0].asnumpy()
        v = vals(2)
        kv.pushpull(3, v)
        out['%s/pushpull_inplace' % kind] = v[1].asnumpy()
        # (a key keeps the number of devices of its first push in MXNet: a new store)
        kv = mx.kv.create(kind)
        kv.init(5, mx.nd.zeros(shape))
        o = mx.nd.zeros(shape)
        three = [mx.nd.array(rng.uniform(-1, 1, shape), ctx=mx.cpu(k)) for k in range(3)]
        kv.pushpull(5, three, out=o)
        out['%s/pushpull3' % kind] = o.asnumpy()
        # an optimizer in the store, str keys
        kv = mx.kv.create(kind)
        kv.init(['w', 'b'], [mx.nd.array(rng.uniform(-1, 1, shape)),
                             mx.nd.array(rng.uniform(-1, 1, (5,)))])
        kv.set_optimizer(mx.optimizer.create(
            'sgd', learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.25,
            lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)))
        for step in range(4):
            gw = [mx.nd.array(rng.uniform(-1, 1, shape), ctx=d) for d in devs]
            gb = [mx.nd.array(rng.uniform(-1, 1, (5,)), ctx=d) for d in devs]
            outw = [mx.nd.zeros(shape, ctx=d) for d in devs]
            outb = [mx.nd.zeros((5,), ctx=d) for d in devs]
            if step % 2:
                kv.pushpull(['w', 'b'], [gw, gb], out=[outw, outb])
            else:
                kv.push(['w', 'b'], [gw, gb])
                kv.pull(['w', 'b'], out=[outw, outb])
            out['%s/opt_w%d' % (kind, step)] = outw[1].asnumpy()
            out['%s/opt_b%d' % (kind, step)] = outb[0].asnumpy()
    # 2-bit compression
    for ndev in (1, 2):
        kv = mx.kv.create('device')
        kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
        kv.init('g', mx.nd.zeros(shape))
        for step in range(4):
            g = [mx.nd.array(rng.uniform(-0.8, 0.8, shape), ctx=mx.cpu(k)) for k in range(ndev)]
            o = mx.nd.zeros(shape)
            kv.push('g', g if ndev > 1 else g[0])
            kv.pull('g', out=o)
            out['2bit%d/step%d' % (ndev, step)] = o.asnumpy()
    kv = mx.kv.create('device')
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.3})
    kv.init(0, mx.nd.ones(shape))
    kv.set_optimizer(mx.optimizer.create('sgd', learning_rate=0.5))
    for step in range(3):
        g = [mx.nd.array(rng.uniform(-1, 1, shape), ctx=d) for d in devs]
        o = mx.nd.zeros(shape)
        kv.pushpull(0, g, out=o)
        out['2bit_sgd/step%d' % step] = o.asnumpy()
    return out


# ---------------------------------------------------------------------------- saved states

#: cases whose states are saved after STEPS updates and continued for 2 more
STATE_CASES = ['sgd_mom', 'adam', 'sgd_mom_mp', 'rmsprop_centered', 'lamb', 'nag_mom']


def case_by_name(name):
    for c in OPTIMIZER_CASES:
        if c[0] == name:
            return c
    raise KeyError(name)


def save_states(mx, name, dump_optimizer):
    """(bytes of Updater.get_states after STEPS updates, the weights)."""
    _, updater, weights = run_optimizer(mx, case_by_name(name))
    return updater.get_states(dump_optimizer=dump_optimizer), weights


def continue_from_states(mx, name, blob, weights_np, steps=2):
    """Load ``blob`` into a fresh updater (with a fresh optimizer made as the case's, which a
    pickled optimizer replaces) and run ``steps`` more updates from ``weights_np``."""
    case = case_by_name(name)
    _, opt_name, kwargs, options = case
    updater = mx.optimizer.get_updater(make_optimizer(mx, opt_name, kwargs, options))
    updater.set_states(blob)
    dtype = 'float16' if 'mp' in options else 'float32'
    weights = {i: mx.nd.array(w, dtype=dtype) for i, w in weights_np.items()}
    return run_optimizer(mx, case, steps=steps, updater=updater, weights=weights,
                         start=STEPS)[0]
