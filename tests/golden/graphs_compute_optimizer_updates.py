"""Golden data of the optimizer update operators (``ops/optimizer_updates.py``).

Two kinds, both from MXNet 1.9.1:

* compute cases ``optupd_*``: the operator bound in an executor (``simple_bind`` of a graph
  loaded from JSON, since MXNet's own ``mx.sym.sgd_update(weight=..., grad=...)`` cannot
  compose these operators), three forwards in a row: the states are auxiliary states that
  every forward updates in place, so the outputs and states of each step are compared.
* ``optupd_nd.npz`` next to this file: imperative runs ``op(weight, grad, *states,
  out=weight, **attrs)`` over several steps, as an optimizer calls them; written by
  ``MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON graphs_compute_optimizer_updates.py`` and
  replayed by ``tests/ops/test_optimizer_updates.py``.

Python 3.8 compatible; no ``import mxnet`` at module level.
"""
import json
import os

import numpy as np

from graphs_compute import case
from graphs import const, uniform

#: op -> (inputs in MXNet's order, makers of the states that must be positive)
INPUTS = {
    'sgd_update': ['weight', 'grad'],
    'sgd_mom_update': ['weight', 'grad', 'mom'],
    'mp_sgd_update': ['weight', 'grad', 'weight32'],
    'mp_sgd_mom_update': ['weight', 'grad', 'mom', 'weight32'],
    'nag_mom_update': ['weight', 'grad', 'mom'],
    'mp_nag_mom_update': ['weight', 'grad', 'mom', 'weight32'],
    'adam_update': ['weight', 'grad', 'mean', 'var'],
    'rmsprop_update': ['weight', 'grad', 'n'],
    'rmspropalex_update': ['weight', 'grad', 'n', 'g', 'delta'],
    'signsgd_update': ['weight', 'grad'],
    'signum_update': ['weight', 'grad', 'mom'],
    'ftml_update': ['weight', 'grad', 'd', 'v', 'z'],
    'ftrl_update': ['weight', 'grad', 'z', 'n'],
    '_adamw_update': ['weight', 'grad', 'mean', 'var', 'rescale_grad'],
    '_mp_adamw_update': ['weight', 'grad', 'mean', 'var', 'weight32', 'rescale_grad'],
}

#: states drawn from uniform(lo, hi) rather than normal(0, 1)
POSITIVE = {'var': (0.1, 1.0), 'n': (1.0, 2.0), 'g': (-0.5, 0.5), 'd': (0.5, 1.5),
            'v': (0.1, 1.0)}


def graph_json(opname, attrs):
    """MXNet JSON of one operator node ``op`` fed by Variables named after its inputs."""
    names = INPUTS[opname]
    nodes = [{'op': 'null', 'name': n, 'inputs': []} for n in names]
    nodes.append({'op': opname, 'name': 'op',
                  'attrs': dict((k, str(v)) for k, v in sorted(attrs.items())),
                  'inputs': [[i, 0, 0] for i in range(len(names))]})
    return json.dumps({'nodes': nodes, 'arg_nodes': list(range(len(names))),
                       'node_row_ptr': list(range(len(nodes) + 1)),
                       'heads': [[len(names), 0, 0]],
                       'attrs': {'mxnet_version': ['int', 10901]}})


def _loader(opname, attrs):
    def build(mx):
        return mx.sym.load_json(graph_json(opname, attrs))
    return build


def _exec_case(name, opname, attrs):
    shape = (3, 4)
    makers = dict((n, uniform(*POSITIVE[n])) for n in INPUTS[opname][2:] if n in POSITIVE)
    case('optupd_' + name, _loader(opname, attrs), {'weight': shape, 'grad': shape},
         inputs=makers, phases=('fwd', 'fwd', 'fwd'), heads='none', grad_req='null',
         note='states are auxiliary states updated in place by every forward')


# MXNet's simple_bind cannot infer the storage type of the states (auxiliary states), so
# only the stateless operators are compute cases; the stateful ones run through bind() in
# EXEC_RUNS below.
_exec_case('sgd', 'sgd_update', {'lr': 0.1, 'wd': 0.01, 'clip_gradient': 0.5})
_exec_case('signsgd', 'signsgd_update', {'lr': 0.1, 'wd': 0.1})

#: (op, attrs) bound with explicit auxiliary states and run forward three times
EXEC_RUNS = [
    ('sgd_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.01, 'rescale_grad': 0.5}),
    ('mp_sgd_update', {'lr': 0.1, 'wd': 0.01}),
    ('mp_sgd_mom_update', {'lr': 0.1, 'momentum': 0.9}),
    ('nag_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.05, 'clip_gradient': 0.7}),
    ('mp_nag_mom_update', {'lr': 0.1, 'momentum': 0.8}),
    ('adam_update', {'lr': 0.01, 'wd': 0.1, 'clip_gradient': 1.0}),
    ('rmsprop_update', {'lr': 0.01, 'clip_weights': 1.2}),
    ('rmspropalex_update', {'lr': 0.01, 'wd': 0.01}),
    ('signum_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.1, 'wd_lh': 0.01}),
    ('ftml_update', {'lr': 0.1, 't': 2, 'wd': 0.01}),
    ('ftrl_update', {'lr': 0.1, 'lamda1': 0.5, 'wd': 0.01}),
]


def run_exec(mx, opname, attrs, arrays, grad):
    """Bind ``opname``'s graph to ``arrays`` (weight and states) and ``grad``, run forward
    three times; return the output and the states after each (``fwd<k>:<name>``)."""
    sym = mx.sym.load_json(graph_json(opname, attrs))
    nd = dict((k, mx.nd.array(v, dtype=v.dtype)) for k, v in arrays.items())
    nd['grad'] = mx.nd.array(grad, dtype=grad.dtype)
    args = dict((n, nd[n]) for n in sym.list_arguments())
    aux = dict((n, nd[n]) for n in sym.list_auxiliary_states())
    exe = sym.bind(mx.cpu(), args, aux_states=aux, grad_req='null')
    res = {}
    for k in range(3):
        res['fwd%d:output' % k] = exe.forward(is_train=False)[0].asnumpy()
        for n in aux:
            res['fwd%d:%s' % (k, n)] = nd[n].asnumpy()      # the caller's arrays
    return res


def _all_finite(mx):
    return mx.sym.all_finite(mx.sym.Variable('data'), name='op')


case('optupd_all_finite_inf', _all_finite, {'data': (2, 3)},
     inputs={'data': const([[1, 2, np.inf], [0, -1, 3]])}, phases=('fwd',), heads='none',
     grad_req='null')
case('optupd_all_finite_ok', _all_finite, {'data': (2, 3)}, phases=('fwd',), heads='none',
     grad_req='null')

# ---------------------------------------------------------------------------
# imperative runs (optupd_nd.npz)

NPZ = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'optupd_nd.npz')

_F16 = {'weight': 'float16', 'grad': 'float16'}
#: (run name, op, attrs, dtypes of inputs other than float32, steps)
ND_RUNS = [
    ('sgd', 'sgd_update', {'lr': 0.1}, {}, 3),
    ('sgd_all', 'sgd_update', {'lr': 0.1, 'wd': 0.01, 'rescale_grad': 0.5,
                               'clip_gradient': 0.3}, {}, 3),
    ('sgd_clip0', 'sgd_update', {'lr': 0.1, 'clip_gradient': 0.0}, {}, 2),
    ('sgd_f64', 'sgd_update', {'lr': 0.1, 'wd': 0.1}, {'weight': 'float64',
                                                     'grad': 'float64'}, 3),
    ('sgd_mom', 'sgd_mom_update', {'lr': 0.1, 'momentum': 0.9}, {}, 4),
    ('sgd_mom_all', 'sgd_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.01,
                                       'rescale_grad': 2.0, 'clip_gradient': 1.0,
                                       'lazy_update': False}, {}, 4),
    ('sgd_mom_f64', 'sgd_mom_update', {'lr': 0.05, 'momentum': 0.5, 'wd': 0.1},
     {'weight': 'float64', 'grad': 'float64', 'mom': 'float64'}, 3),
    ('mp_sgd', 'mp_sgd_update', {'lr': 0.1, 'wd': 0.01, 'clip_gradient': 0.5}, _F16, 3),
    ('mp_sgd_mom', 'mp_sgd_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.01,
                                         'rescale_grad': 0.5}, _F16, 4),
    ('nag_mom', 'nag_mom_update', {'lr': 0.1, 'momentum': 0.9}, {}, 4),
    # no wd: with out=weight, MXNet's nag kernel reads the new weight for mom's wd term
    # (see test_nag_in_place_reads_new_weight)
    ('nag_mom_all', 'nag_mom_update', {'lr': 0.1, 'momentum': 0.9,
                                       'rescale_grad': 0.5, 'clip_gradient': 0.4}, {}, 4),
    ('mp_nag_mom', 'mp_nag_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.01,
                                         'clip_gradient': 0.5}, _F16, 4),
    ('adam', 'adam_update', {'lr': 0.01}, {}, 4),
    ('adam_all', 'adam_update', {'lr': 0.01, 'beta1': 0.8, 'beta2': 0.99, 'epsilon': 1e-6,
                                 'wd': 0.1, 'rescale_grad': 0.5, 'clip_gradient': 0.2},
     {}, 4),
    ('adam_f64', 'adam_update', {'lr': 0.01, 'wd': 0.01},
     {'weight': 'float64', 'grad': 'float64', 'mean': 'float64', 'var': 'float64'}, 3),
    ('rmsprop', 'rmsprop_update', {'lr': 0.01}, {}, 4),
    ('rmsprop_all', 'rmsprop_update', {'lr': 0.05, 'gamma1': 0.9, 'epsilon': 1e-4,
                                       'wd': 0.1, 'rescale_grad': 0.5, 'clip_gradient': 0.3,
                                       'clip_weights': 0.8}, {}, 4),
    ('rmspropalex', 'rmspropalex_update', {'lr': 0.01}, {}, 4),
    ('rmspropalex_all', 'rmspropalex_update', {'lr': 0.02, 'gamma1': 0.9, 'gamma2': 0.8,
                                               'wd': 0.1, 'rescale_grad': 0.5,
                                               'clip_gradient': 0.3, 'clip_weights': 0.9},
     {}, 4),
    ('signsgd', 'signsgd_update', {'lr': 0.1, 'wd': 0.1, 'rescale_grad': -1.0,
                                   'clip_gradient': 0.0}, {}, 3),
    ('signum', 'signum_update', {'lr': 0.1, 'momentum': 0.9}, {}, 4),
    ('signum_all', 'signum_update', {'lr': 0.1, 'momentum': 0.8, 'wd': 0.1, 'wd_lh': 0.05,
                                     'rescale_grad': 0.5, 'clip_gradient': 0.3}, {}, 4),
    ('ftml', 'ftml_update', {'lr': 0.1}, {}, 4),
    ('ftml_all', 'ftml_update', {'lr': 0.05, 'beta1': 0.5, 'beta2': 0.99, 'epsilon': 1e-6,
                                 'wd': 0.1, 'rescale_grad': 0.5, 'clip_grad': 0.3}, {}, 4),
    ('ftrl', 'ftrl_update', {'lr': 0.1, 'lamda1': 0.2}, {}, 4),
    ('ftrl_all', 'ftrl_update', {'lr': 0.1, 'lamda1': 0.1, 'beta': 0.5, 'wd': 0.1,
                                 'rescale_grad': 0.5, 'clip_gradient': 0.3}, {}, 4),
    ('adamw', '_adamw_update', {'lr': 0.01, 'eta': 1.0}, {}, 4),
    ('adamw_all', '_adamw_update', {'lr': 0.01, 'eta': 0.5, 'beta1': 0.8, 'beta2': 0.99,
                                    'epsilon': 1e-6, 'wd': 0.1, 'clip_gradient': 0.2},
     {}, 4),
    ('mp_adamw', '_mp_adamw_update', {'lr': 0.01, 'eta': 1.0, 'wd': 0.01}, _F16, 4),
]
#: rescale_grad arrays of the adamw runs per step (inf and 0 skip the step)
ADAMW_RESCALE = [1.0, np.inf, 0.5, 0.0]


def initial_arrays(rng, opname, dtypes, shape=(3, 4)):
    """Initial weight, states and per-step gradients of a run (float32 unless told)."""
    out = {}
    for n in INPUTS[opname]:
        if n in ('grad', 'rescale_grad'):
            continue
        if n == 'weight32':
            out[n] = out['weight'].astype(np.float32)
            continue
        lo_hi = POSITIVE.get(n)
        a = rng.uniform(lo_hi[0], lo_hi[1], shape) if lo_hi else rng.standard_normal(shape)
        out[n] = a.astype(dtypes.get(n, 'float32'))
    return out


def run_nd(mx, opname, attrs, arrays, grads, dtypes):
    """Apply ``opname`` len(grads) times with out=weight; return the arrays after each
    step (``step<k>:<name>``)."""
    nd = dict((k, mx.nd.array(v, dtype=v.dtype)) for k, v in arrays.items())
    fn = getattr(mx.nd, opname, None) or getattr(mx.nd._internal, opname)
    res = {}
    for k, g in enumerate(grads):
        kw = dict(attrs)
        if opname == 'ftml_update':
            kw['t'] = k + 1
        ins = []
        for n in INPUTS[opname]:
            if n == 'grad':
                ins.append(mx.nd.array(g, dtype=g.dtype))
            elif n == 'rescale_grad':
                ins.append(mx.nd.array([ADAMW_RESCALE[k % len(ADAMW_RESCALE)]]))
            else:
                ins.append(nd[n])
        fn(*ins, out=nd['weight'], **kw)
        for n, a in nd.items():
            res['step%d:%s' % (k, n)] = a.asnumpy()
    return res


def generate():
    import mxnet as mx
    rng = np.random.RandomState(1234)
    data, meta = {}, []
    for name, opname, attrs, dtypes, steps in ND_RUNS:
        arrays = initial_arrays(rng, opname, dtypes)
        grads = [(rng.standard_normal((3, 4)) * 1.5).astype(dtypes.get('grad', 'float32'))
                 for _ in range(steps)]
        for n, a in arrays.items():
            data['%s/init:%s' % (name, n)] = a
        for k, g in enumerate(grads):
            data['%s/grad%d' % (name, k)] = g
        for key, a in run_nd(mx, opname, attrs, arrays, grads, dtypes).items():
            data['%s/%s' % (name, key)] = a
        meta.append([name, opname, attrs, dtypes, steps])
    for opname, attrs in EXEC_RUNS:
        name = 'exec_' + opname
        dtypes = _F16 if opname.startswith('mp_') else {}
        arrays = initial_arrays(rng, opname, dtypes)
        grad = rng.standard_normal((3, 4)).astype(dtypes.get('grad', 'float32'))
        for n, a in arrays.items():
            data['%s/init:%s' % (name, n)] = a
        data['%s/grad' % name] = grad
        for key, a in run_exec(mx, opname, attrs, arrays, grad).items():
            data['%s/%s' % (name, key)] = a
    data['meta'] = np.array(json.dumps(meta))
    np.savez_compressed(NPZ, **data)
    print('wrote %s: %d runs, %d executor runs' % (NPZ, len(meta), len(EXEC_RUNS)))

