"""Golden data for mx.optimizer, mx.lr_scheduler and mx.kv from MXNet 1.9.1, and the check
that MXNet loads optimizer states written by symgraph.

    # with MXNet 1.9.1: tests/golden/data/optimizer*.{npz,json} and optimizer_states/
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_optimizer.py
    # with symgraph: states for MXNet to load, in tests/golden/ours_optimizer/
    python tests/golden/make_optimizer.py --write-ours
    # with MXNet 1.9.1: load them, continue, compare with what symgraph computed
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_optimizer.py \
        --verify-ours > tests/golden/ours_optimizer/mxnet_verified.txt

The scenarios themselves are in ``optimizer_cases.py``, shared with the tests. AdamW is not
an optimizer of MXNet 1.9.1: the MXNet run registers the algorithm symgraph implements
(``symgraph.optimizer.contrib.AdamW``) written on MXNet's ``contrib.adamw_update``.
"""
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, 'data')
STATES_DIR = os.path.join(DATA, 'optimizer_states')
OURS = os.path.join(HERE, 'ours_optimizer')
sys.path.insert(0, HERE)
import optimizer_cases as cases   # noqa: E402


def register_adamw(mx):
    """symgraph's AdamW (MXNet 2.0's algorithm) on MXNet 1.9.1's contrib.adamw_update."""
    from mxnet.optimizer import Optimizer, register
    from mxnet.ndarray import zeros, full

    @register
    class AdamW(Optimizer):   # pylint: disable=unused-variable
        def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                     correct_bias=True, **kwargs):
            super(AdamW, self).__init__(learning_rate=learning_rate, **kwargs)
            self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
            self.correct_bias = correct_bias

        def create_state(self, index, weight):
            return (zeros(weight.shape, weight.context, dtype=weight.dtype),
                    zeros(weight.shape, weight.context, dtype=weight.dtype))

        def _impl(self, index, weight, grad, state, mp):
            self._update_count(index)
            lr = self._get_lr(index)
            wd = self._get_wd(index)
            t = self._index_update_count[index]
            if self.correct_bias:
                lr *= math.sqrt(1. - self.beta2**t) / (1. - self.beta1**t)
            kw = {'beta1': self.beta1, 'beta2': self.beta2, 'epsilon': self.epsilon}
            if self.clip_gradient:
                kw['clip_gradient'] = self.clip_gradient
            rescale = full((1,), self.rescale_grad, ctx=weight.context)
            if mp:
                weight32, (mean, var) = state
                mx.nd.contrib.mp_adamw_update(weight, grad, mean, var, weight32, rescale,
                                              out=weight, lr=1, wd=wd, eta=lr, **kw)
            else:
                mean, var = state
                mx.nd.contrib.adamw_update(weight, grad, mean, var, rescale, out=weight,
                                           lr=1, wd=wd, eta=lr, **kw)

        def update(self, index, weight, grad, state):
            self._impl(index, weight, grad, state, False)

        def update_multi_precision(self, index, weight, grad, state):
            self._impl(index, weight, grad, state,
                       self.multi_precision and weight.dtype == np.float16)


def generate(mx):
    register_adamw(mx)
    os.makedirs(STATES_DIR, exist_ok=True)
    arrays = cases.run_all_optimizers(mx)
    arrays.update({'kv/' + k: v for k, v in cases.run_kvstore(mx).items()})
    meta = {'mxnet': mx.__version__, 'optimizers': [list(c[:2]) + [c[2], list(c[3])]
                                                    for c in cases.OPTIMIZER_CASES]}
    # states saved by MXNet, and what MXNet computes when it continues from them
    for name in cases.STATE_CASES:
        for dump in (False, True):
            tag = '%s%s' % (name, '_opt' if dump else '')
            blob, weights = cases.save_states(mx, name, dump)
            with open(os.path.join(STATES_DIR, tag + '.states'), 'wb') as f:
                f.write(blob)
            wnp = {i: w.asnumpy() for i, w in weights.items()}
            for i, w in wnp.items():
                arrays['saved/%s/w%d' % (tag, i)] = w
            cont = cases.continue_from_states(mx, name, blob, wnp)
            arrays.update({'cont/%s/%s' % (tag, k): v for k, v in cont.items()})
    # a kvstore's save_optimizer_states
    kv = mx.kv.create('local')
    kv.init(['w', 'b'], [mx.nd.ones((2, 3)), mx.nd.zeros((3,))])
    kv.set_optimizer(mx.optimizer.create('adam', learning_rate=0.1))
    for step in range(2):
        kv.push(['w', 'b'], [mx.nd.ones((2, 3)) * (step + 1), mx.nd.ones((3,)) * -0.5])
    kv.save_optimizer_states(os.path.join(STATES_DIR, 'kv_adam.states'))
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((3,))]
    kv.pull(['w', 'b'], out=outs)
    arrays['kvsaved/w'], arrays['kvsaved/b'] = outs[0].asnumpy(), outs[1].asnumpy()
    # a new store with a new optimizer (counting from 0) and the saved states
    kv = mx.kv.create('local')
    kv.init(['w', 'b'], [outs[0].copy(), outs[1].copy()])
    kv.set_optimizer(mx.optimizer.create('adam', learning_rate=0.1))
    kv.load_optimizer_states(os.path.join(STATES_DIR, 'kv_adam.states'))
    kv.push(['w', 'b'], [mx.nd.ones((2, 3)) * 3, mx.nd.ones((3,)) * 0.25])
    kv.pull(['w', 'b'], out=outs)
    arrays['kvcont/w'], arrays['kvcont/b'] = outs[0].asnumpy(), outs[1].asnumpy()

    np.savez_compressed(os.path.join(DATA, 'optimizer.npz'), **arrays)
    with open(os.path.join(DATA, 'optimizer_meta.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    scheds = cases.run_schedulers(mx)
    with open(os.path.join(DATA, 'optimizer_schedulers.json'), 'w') as f:
        json.dump({'updates': cases.SCHED_UPDATES,
                   'cases': {k: {'lrs': v[0], 'log': v[1]} for k, v in scheds.items()}},
                  f, indent=1, sort_keys=True)
    print('wrote %d arrays, %d schedulers, states in %s' % (len(arrays), len(scheds),
                                                            STATES_DIR))


# ------------------------------------------------------------------------ ours -> MXNet

def write_ours(mx, directory=OURS):
    """symgraph's states (after STEPS updates) and its own continuation from them."""
    os.makedirs(directory, exist_ok=True)
    expected = {}
    for name in cases.STATE_CASES:
        for dump in (False, True):
            tag = '%s%s' % (name, '_opt' if dump else '')
            blob, weights = cases.save_states(mx, name, dump)
            with open(os.path.join(directory, tag + '.states'), 'wb') as f:
                f.write(blob)
            wnp = {i: w.asnumpy() for i, w in weights.items()}
            for i, w in wnp.items():
                expected['saved/%s/w%d' % (tag, i)] = w
            cont = cases.continue_from_states(mx, name, blob, wnp)
            expected.update({'cont/%s/%s' % (tag, k): v for k, v in cont.items()})
    np.savez_compressed(os.path.join(directory, 'expected.npz'), **expected)
    return expected


def verify_ours(mx, directory=OURS):
    register_adamw(mx)
    with np.load(os.path.join(directory, 'expected.npz')) as z:
        expected = {k: z[k] for k in z.files}
    failures = 0
    tags = sorted({k.split('/')[1] for k in expected if k.startswith('saved/')})
    for tag in tags:
        name = tag[:-4] if tag.endswith('_opt') else tag
        with open(os.path.join(directory, tag + '.states'), 'rb') as f:
            blob = f.read()
        wnp = {int(k.rsplit('/w', 1)[1]): v for k, v in expected.items()
               if k.startswith('saved/%s/' % tag)}
        try:
            got = cases.continue_from_states(mx, name, blob, wnp)
        except Exception as e:   # pylint: disable=broad-except
            print('FAIL %s: %s: %s' % (tag, type(e).__name__, e))
            failures += 1
            continue
        worst = 0.0
        for k, v in got.items():
            want = expected['cont/%s/%s' % (tag, k)]
            tol = 1e-2 if v.dtype == np.float16 else 1e-5
            err = float(np.max(np.abs(v.astype('f8') - want.astype('f8'))
                               / (tol + tol * np.abs(want.astype('f8'))))) if v.size else 0.0
            worst = max(worst, err)
        status = 'OK  ' if worst <= 1 else 'FAIL'
        failures += worst > 1
        print('%s %s: MXNet %s continued from symgraph\'s states (worst error / tolerance '
              '%.3g)' % (status, tag, mx.__version__, worst))
    print('%d file(s), %d failure(s)' % (len(tags), failures))


if __name__ == '__main__':
    if '--write-ours' in sys.argv:
        sys.path.insert(0, os.path.join(HERE, '..', '..'))
        import symgraph
        write_ours(symgraph)
        print('wrote', OURS)
    else:
        import mxnet
        if '--verify-ours' in sys.argv:
            verify_ours(mxnet)
        else:
            generate(mxnet)
    sys.stdout.flush()
    os._exit(0)      # MXNet may hang at interpreter exit
