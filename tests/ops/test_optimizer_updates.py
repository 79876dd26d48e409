"""Optimizer update operators against a per-element loop of MXNet's formulas and against
MXNet 1.9.1 runs (``tests/golden/optupd_nd.npz``, written by
``tests/golden/graphs_compute_optimizer_updates.py``): several steps of
``mx.nd.<op>(weight, grad, *states, out=weight)`` and three forwards of a bound executor,
the states being updated in place in both."""
import importlib
import json
import math

import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, parametrize_cases, check_forward
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, TypeInferenceError, get_op

importlib.import_module('graphs')     # before the golden module (graphs <-> graphs_compute)
import graphs_compute_optimizer_updates as gold  # noqa: E402
from symgraph.opdef import positional_params


def f32(v):
    return float(np.float32(v))


def clip(x, c):
    return min(max(x, -c), c) if c >= 0 else x


def sign(x):
    return (x > 0) - (x < 0)


# ---------------------------------------------------------------------------
# one element of each update, written from MXNet's kernels: (w, g, *states) -> (w, *states)

def _sgd(a, w, g):
    lr, wd = a['lr'], a.get('wd', 0.0)
    return ((1 - lr * wd) * w - lr * clip(a.get('rescale_grad', 1.0) * g,
                                          a.get('clip_gradient', -1.0)),)


def _sgd_mom(a, w, g, mom):
    lr, wd = a['lr'], a.get('wd', 0.0)
    g = clip(a.get('rescale_grad', 1.0) * g, a.get('clip_gradient', -1.0))
    mom = a.get('momentum', 0.0) * mom - lr * wd * w - lr * g
    return w + mom, mom


def _nag(a, w, g, mom):
    m = a.get('momentum', 0.0)
    g = clip(a.get('rescale_grad', 1.0) * g, a.get('clip_gradient', -1.0)) \
        + a.get('wd', 0.0) * w
    mom = m * mom - a['lr'] * g
    return w + m * mom - a['lr'] * g, mom


def _mp_nag(a, w, g, mom):
    """MXNet's mp kernel updates mom with the new weight32 in the wd term."""
    w_new, _ = _nag(a, w, g, mom)
    g = clip(a.get('rescale_grad', 1.0) * g, a.get('clip_gradient', -1.0))
    return w_new, a.get('momentum', 0.0) * mom - a['lr'] * (g + a.get('wd', 0.0) * w_new)


def _wdg(a, w, g):
    return clip(a.get('rescale_grad', 1.0) * g + a.get('wd', 0.0) * w,
                a.get('clip_gradient', -1.0))


def _adam(a, w, g, mean, var):
    b1, b2 = a.get('beta1', 0.9), a.get('beta2', 0.999)
    g = _wdg(a, w, g)
    mean = b1 * mean + (1 - b1) * g
    var = b2 * var + (1 - b2) * g * g
    return w - a['lr'] * mean / (math.sqrt(var) + a.get('epsilon', 1e-8)), mean, var


def _rmsprop(a, w, g, n):
    g1 = a.get('gamma1', 0.95)
    g = _wdg(a, w, g)
    n = (1 - g1) * g * g + g1 * n
    w = w - a['lr'] * g / math.sqrt(n + a.get('epsilon', 1e-8))
    return clip(w, a.get('clip_weights', -1.0)), n


def _rmspropalex(a, w, g, n, gm, delta):
    g1 = a.get('gamma1', 0.95)
    g = _wdg(a, w, g)
    n = (1 - g1) * g * g + g1 * n
    gm = (1 - g1) * g + g1 * gm
    delta = a.get('gamma2', 0.9) * delta - a['lr'] * g / math.sqrt(
        n - gm * gm + a.get('epsilon', 1e-8))
    return clip(w + delta, a.get('clip_weights', -1.0)), n, gm, delta


def _signsgd(a, w, g):
    return ((1 - a['lr'] * a.get('wd', 0.0)) * w - a['lr'] * sign(g),)


def _signum(a, w, g, mom):
    m = a.get('momentum', 0.0)
    g = clip(a.get('rescale_grad', 1.0) * g, a.get('clip_gradient', -1.0))
    mom = m * mom - (1 - m) * a.get('wd', 0.0) * w - (1 - m) * g
    return (1 - a['lr'] * a.get('wd_lh', 0.0)) * w + a['lr'] * sign(mom), mom


def _ftml(a, w, g, d, v, z):
    b1, b2, t, lr = a.get('beta1', 0.6), a.get('beta2', 0.999), a['t'], a['lr']
    g = clip(a.get('rescale_grad', 1.0) * g + a.get('wd', 0.0) * w, a.get('clip_grad', -1.0))
    v = b2 * v + (1 - b2) * g * g
    d_t = (1 - b1 ** t) / lr * (math.sqrt(v / (1 - b2 ** t)) + a.get('epsilon', 1e-8))
    z = b1 * z + (1 - b1) * g - (d_t - b1 * d) * w
    return -z / d_t, d_t, v, z


def _ftrl(a, w, g, z, n):
    lr, l1 = a['lr'], a.get('lamda1', 0.01)
    g = clip(a.get('rescale_grad', 1.0) * g, a.get('clip_gradient', -1.0))
    z = z + g - (math.sqrt(n + g * g) - math.sqrt(n)) * w / lr
    n = n + g * g
    w = (sign(z) * l1 - z) / ((a.get('beta', 1.0) + math.sqrt(n)) / lr + a.get('wd', 0.0)) \
        if abs(z) > l1 else 0.0
    return w, z, n


def _adamw(a, w, g, mean, var, r):
    if not math.isfinite(r) or r == 0:
        return w, mean, var
    b1, b2 = a.get('beta1', 0.9), a.get('beta2', 0.999)
    g = clip(r * g, a.get('clip_gradient', -1.0))
    mean = b1 * mean + (1 - b1) * g
    var = b2 * var + (1 - b2) * g * g
    w = w - a['eta'] * (a['lr'] * mean / (math.sqrt(var) + a.get('epsilon', 1e-8))
                        + a.get('wd', 0.0) * w)
    return w, mean, var


#: op -> (element function, mp: the last state is the float32 master weight)
STEP = {
    'sgd_update': (_sgd, False), 'sgd_mom_update': (_sgd_mom, False),
    'mp_sgd_update': (_sgd, True), 'mp_sgd_mom_update': (_sgd_mom, True),
    'nag_mom_update': (_nag, False), 'mp_nag_mom_update': (_mp_nag, True),
    'adam_update': (_adam, False), 'rmsprop_update': (_rmsprop, False),
    'rmspropalex_update': (_rmspropalex, False), 'signsgd_update': (_signsgd, False),
    'signum_update': (_signum, False), 'ftml_update': (_ftml, False),
    'ftrl_update': (_ftrl, False), '_adamw_update': (_adamw, False),
    '_mp_adamw_update': (_adamw, True),
}


def reference(opname, attrs, w, g, states, rescale=None):
    """The update of every element by a loop: (new weight, new states) in float64, float32
    parameters as MXNet holds them."""
    double = ('epsilon',) if opname == 'ftml_update' else ()     # ftml's epsilon is a double
    a = {k: f32(v) if isinstance(v, float) and k not in double else v
         for k, v in attrs.items()}
    fn, mp = STEP[opname]
    states = [np.asarray(s, np.float64) for s in states]
    master = states[-1] if mp else np.asarray(w, np.float64)
    plain = states[:-1] if mp else states
    w_out = np.zeros(master.shape)
    s_out = [np.zeros(master.shape) for _ in plain]
    extra = () if rescale is None else (float(np.asarray(rescale).reshape(-1)[0]),)
    for i in np.ndindex(master.shape):
        r = fn(a, float(master[i]), float(g[i]), *[float(s[i]) for s in plain], *extra)
        w_out[i] = r[0]
        for s, v in zip(s_out, r[1:]):
            s[i] = v
    if mp:
        s_out.append(w_out.copy())
    return w_out, s_out


# ---------------------------------------------------------------------------
# OpCases (forward against the loop; symbol + executor + JSON in test_registry)

SHAPE = (3, 4)


def _inputs(opname, rescale=1.0):
    names = gold.INPUTS[opname]

    def make(rng, shapes, dtype):
        out = []
        for n, s in zip(names, shapes):
            if n == 'rescale_grad':
                out.append(np.array([rescale]))
            elif n in gold.POSITIVE:
                out.append(rng.uniform(*gold.POSITIVE[n], s))
            else:
                out.append(rng.uniform(-1.5, 1.5, s))
        if 'weight32' in names:
            out[names.index('weight32')] = out[0].copy()
        return out
    return make


def _case(opname, attrs, rescale=1.0, dtypes=('float32', 'float64'), **kw):
    n = len(gold.INPUTS[opname])
    shapes = [SHAPE] * n
    if opname.endswith('adamw_update'):
        shapes[-1] = (1,)

    def ref(*ins):
        names = gold.INPUTS[opname]
        states = [x for k, x in zip(names, ins) if k not in ('weight', 'grad', 'rescale_grad')]
        r = ins[-1] if opname.endswith('adamw_update') else None
        return reference(opname, attrs, ins[0], ins[1], states, r)[0].astype(ins[0].dtype)
    return OpCase(opname, attrs, shapes=shapes, ref=ref, inputs=_inputs(opname, rescale),
                  dtypes=dtypes, grad=(), rtol=2e-5, atol=1e-5, **kw)


CASES = [
    _case('sgd_update', {'lr': 0.1}),
    _case('sgd_update', {'lr': 0.1, 'wd': 0.01, 'rescale_grad': 0.5, 'clip_gradient': 0.3}),
    _case('sgd_update', {'lr': 0.1, 'clip_gradient': 0.0, 'lazy_update': False}),
    _case('sgd_mom_update', {'lr': 0.1, 'momentum': 0.9}),
    _case('sgd_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.1, 'rescale_grad': 2.0,
                             'clip_gradient': 1.0}),
    _case('mp_sgd_update', {'lr': 0.1, 'wd': 0.01, 'clip_gradient': 0.5}),
    _case('mp_sgd_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.01}),
    _case('nag_mom_update', {'lr': 0.1, 'momentum': 0.9}),
    _case('nag_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.05, 'rescale_grad': 0.5,
                             'clip_gradient': 0.4}),
    _case('mp_nag_mom_update', {'lr': 0.1, 'momentum': 0.9, 'wd': 0.01}),
    _case('adam_update', {'lr': 0.01}),
    _case('adam_update', {'lr': 0.01, 'beta1': 0.8, 'beta2': 0.99, 'epsilon': 1e-6,
                          'wd': 0.1, 'rescale_grad': 0.5, 'clip_gradient': 0.2}),
    _case('rmsprop_update', {'lr': 0.01}),
    _case('rmsprop_update', {'lr': 0.05, 'gamma1': 0.9, 'wd': 0.1, 'clip_gradient': 0.3,
                             'clip_weights': 0.8}),
    _case('rmspropalex_update', {'lr': 0.01}),
    _case('rmspropalex_update', {'lr': 0.02, 'gamma1': 0.9, 'gamma2': 0.8, 'wd': 0.1,
                                 'rescale_grad': 0.5, 'clip_weights': 0.9}),
    _case('signsgd_update', {'lr': 0.1, 'wd': 0.1, 'rescale_grad': -1.0}),
    _case('signum_update', {'lr': 0.1, 'momentum': 0.9}),
    _case('signum_update', {'lr': 0.1, 'momentum': 0.8, 'wd': 0.1, 'wd_lh': 0.05,
                            'clip_gradient': 0.3}),
    _case('ftml_update', {'lr': 0.1, 't': 1}),
    _case('ftml_update', {'lr': 0.05, 't': 3, 'beta1': 0.5, 'wd': 0.1, 'clip_grad': 0.3}),
    _case('ftrl_update', {'lr': 0.1, 'lamda1': 0.2}),
    _case('ftrl_update', {'lr': 0.1, 'lamda1': 0.1, 'beta': 0.5, 'wd': 0.1,
                          'rescale_grad': 0.5, 'clip_gradient': 0.3}),
    _case('_adamw_update', {'lr': 0.01, 'eta': 1.0}),
    _case('_adamw_update', {'lr': 0.01, 'eta': 0.5, 'wd': 0.1, 'clip_gradient': 0.2},
          rescale=0.5),
    _case('_adamw_update', {'lr': 0.01, 'eta': 1.0}, rescale=np.inf, id='adamw_skip_inf'),
    _case('_mp_adamw_update', {'lr': 0.01, 'eta': 1.0, 'wd': 0.01}),
    OpCase('all_finite', {}, shapes=[(2, 3)], ref=lambda x: np.ones(1, np.float32), grad=()),
    OpCase('all_finite', {'init_output': False}, shapes=[(2, 3)], grad=(),
           inputs=lambda rng, s, dt: [np.array([[1, np.nan, 2], [0, 1, 2]])],
           ref=lambda x: np.zeros(1, np.float32), id='all_finite_nan'),
    OpCase('all_finite', {}, shapes=[(4,)], grad=(), dtypes=('float16', 'float32'),
           inputs=lambda rng, s, dt: [np.array([1, -np.inf, 2, 0])],
           ref=lambda x: np.zeros(1, np.float32), id='all_finite_inf'),
]


@parametrize_cases(CASES)
def test_forward(case):
    check_forward(case)


# ---------------------------------------------------------------------------
# MXNet 1.9.1 runs replayed: mx.nd with out=weight, and a bound executor

def _npz():
    with np.load(gold.NPZ) as z:
        return {k: z[k] for k in z.files}


DATA = _npz()
RUNS = json.loads(str(DATA['meta']))


def _tol(dtype):
    return dict(rtol=1e-2, atol=2e-3) if np.dtype(dtype) == np.float16 else \
        dict(rtol=2e-5, atol=2e-6)


def _init(name, opname):
    return {n: DATA['%s/init:%s' % (name, n)] for n in gold.INPUTS[opname]
            if n not in ('grad', 'rescale_grad')}


@pytest.mark.parametrize('run', RUNS, ids=[r[0] for r in RUNS])
def test_nd_steps_match_mxnet(run):
    name, opname, attrs, dtypes, steps = run
    grads = [DATA['%s/grad%d' % (name, k)] for k in range(steps)]
    got = gold.run_nd(mx, opname, attrs, _init(name, opname), grads, dtypes)
    for key, want in sorted(got.items()):
        ref = DATA['%s/%s' % (name, key)]
        assert want.dtype == ref.dtype, key
        np.testing.assert_allclose(want, ref, err_msg='%s %s' % (name, key),
                                   **_tol(ref.dtype))


@pytest.mark.parametrize('run', RUNS, ids=[r[0] for r in RUNS])
def test_nd_steps_match_loop_reference(run):
    """The same steps through the element loop (in float64, from MXNet's initial arrays)."""
    name, opname, attrs, dtypes, steps = run
    arrays = _init(name, opname)
    names = [n for n in gold.INPUTS[opname] if n not in ('weight', 'grad', 'rescale_grad')]
    w, states = arrays['weight'].astype(np.float64), [arrays[n] for n in names]
    for k in range(steps):
        a = dict(attrs, t=k + 1) if opname == 'ftml_update' else attrs
        r = gold.ADAMW_RESCALE[k % 4] if opname.endswith('adamw_update') else None
        g = DATA['%s/grad%d' % (name, k)].astype(np.float64)
        w, states = reference(opname, a, w, g, states, r)
        for n, s in zip(['weight'] + names, [w] + states):
            want = DATA['%s/step%d:%s' % (name, k, n)]
            np.testing.assert_allclose(s, want, rtol=1e-2 if want.dtype == np.float16
                                       else 1e-4, atol=1e-3 if want.dtype == np.float16
                                       else 1e-5, err_msg='%s step %d %s' % (name, k, n))


@pytest.mark.parametrize('opname,attrs', gold.EXEC_RUNS, ids=[r[0] for r in gold.EXEC_RUNS])
def test_executor_updates_states_in_place(opname, attrs):
    name = 'exec_' + opname
    got = gold.run_exec(mx, opname, attrs, _init(name, opname), DATA[name + '/grad'])
    assert sorted(got) == sorted(k[len(name) + 1:] for k in DATA
                                 if k.startswith(name + '/fwd'))
    for key, value in sorted(got.items()):
        ref = DATA['%s/%s' % (name, key)]
        np.testing.assert_allclose(value, ref, err_msg='%s %s' % (name, key),
                                   **_tol(ref.dtype))


def test_symbol_lists_states_as_auxiliary():
    w, g = mx.sym.var('w'), mx.sym.var('g')
    s = mx.sym.adam_update(w, g, mx.sym.var('m'), mx.sym.var('v'), lr=0.1)
    assert s.list_arguments() == ['w', 'g'] and s.list_auxiliary_states() == ['m', 'v']
    s = mx.sym.mp_sgd_mom_update(weight=w, grad=g, lr=0.1, name='u')
    assert s.list_auxiliary_states() == ['u_mom', 'u_weight32']
    args, outs, aux = s.infer_shape(w=(2, 3))
    assert args == [(2, 3), (2, 3)] and outs == [(2, 3)] and aux == [(2, 3), (2, 3)]
    args, outs, aux = s.infer_type(w='float16')
    assert [np.dtype(t).name for t in args + outs + aux] == ['float16'] * 3 + ['float32'] * 2
    s = mx.sym._adamw_update(w, g, lr=0.1, eta=1.0, name='aw')
    assert s.list_auxiliary_states() == ['aw_mean', 'aw_var', 'aw_rescale_grad']
    assert mx.sym.all_finite(w).infer_shape(w=(5, 2))[1] == [(1,)]


# ---------------------------------------------------------------------------
# imperative behaviour

def test_out_weight_and_states_in_place():
    w = mx.nd.array([1.0, -2.0, 3.0])
    g = mx.nd.array([0.5, -4.0, 2.0])
    mom = mx.nd.ones(3)
    out = mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(w.asnumpy(), [1, -2, 3])          # weight only through out
    np.testing.assert_allclose(mom.asnumpy(), [0.85, 1.3, 0.7], rtol=1e-6)
    np.testing.assert_allclose(out.asnumpy(), [1.85, -0.7, 3.7], rtol=1e-6)
    r = mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, out=w)
    assert r is w
    np.testing.assert_allclose(mom.asnumpy(), [0.715, 1.57, 0.43], rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), [1.715, -0.43, 3.43], rtol=1e-6)


def test_positional_parameters_follow_mxnet_order():
    w, g, m = mx.nd.ones(2), mx.nd.ones(2), mx.nd.zeros(2)
    a = mx.nd.sgd_mom_update(w, g, m, 0.1, 0.9, 0.01).asnumpy()     # lr, momentum, wd
    b = mx.nd.sgd_mom_update(w, g, mx.nd.zeros(2), lr=0.1, momentum=0.9, wd=0.01).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert positional_params(get_op('ftml_update'))[:5] == ['lr', 'beta1', 'beta2',
                                                             'epsilon', 't']
    assert positional_params(get_op('_adamw_update')) == [
        'lr', 'beta1', 'beta2', 'epsilon', 'wd', 'eta', 'clip_gradient']


def test_adamw_skips_step_on_bad_rescale():
    for r in (0.0, np.inf, np.nan):
        w, g = mx.nd.array([1.0, -2.0]), mx.nd.array([0.5, 1.0])
        m, v = mx.nd.ones(2), mx.nd.ones(2)
        mx.nd._internal._adamw_update(w, g, m, v, mx.nd.array([r]), lr=0.1, eta=1.0, out=w)
        np.testing.assert_array_equal(w.asnumpy(), [1, -2])
        np.testing.assert_array_equal(m.asnumpy(), [1, 1])
        np.testing.assert_array_equal(v.asnumpy(), [1, 1])


def test_errors():
    w = mx.nd.ones((3,))
    with pytest.raises(ShapeError, match="sgd_update: input 'grad' has shape"):
        mx.nd.sgd_update(w, mx.nd.ones((4,)), lr=0.1)
    with pytest.raises(ShapeError, match="'mom'"):
        mx.nd.sgd_mom_update(w, w, mx.nd.ones((4,)), lr=0.1)
    with pytest.raises(MXNetError, match="required parameter 'lr'"):
        mx.nd.sgd_update(w, w)
    with pytest.raises(MXNetError, match="required parameter 't'"):
        mx.nd.ftml_update(w, w, w, w, w, lr=0.1)
    with pytest.raises(MXNetError, match="required parameter 'eta'"):
        mx.nd._internal._adamw_update(w, w, w, w, mx.nd.ones(1), lr=0.1)
    with pytest.raises(MXNetError, match='floating point'):
        mx.nd.sgd_update(mx.nd.ones(3, dtype='int32'), mx.nd.ones(3, dtype='int32'), lr=0.1)
    with pytest.raises(MXNetError, match='floating point'):
        mx.nd.all_finite(mx.nd.ones(3, dtype='int32'))
    op = get_op('sgd_update')(lr=0.1)
    with pytest.raises(TypeInferenceError, match="'grad' has type float64"):
        op.infer_type([np.dtype('float32'), np.dtype('float64')])
    op = get_op('mp_sgd_update')(lr=0.1)
    with pytest.raises(TypeInferenceError, match="'weight32' must be float32"):
        op.infer_type([np.dtype('float16'), np.dtype('float16'), np.dtype('float16')])


def test_no_gradient():
    for name in STEP:
        assert get_op(name).no_grad
    assert get_op('all_finite').no_grad


def test_nag_in_place_reads_new_weight():
    """MXNet 1.9.1 (one element, lr=0.1, momentum=0.9, wd=0.05, rescale_grad=0.5,
    clip_gradient=0.4): without out, mom -> -0.8576175 (ours); with out=weight MXNet's
    kernel reads the already written weight for mom's wd term and gives -0.85375774. The
    output weight is the same in both (-1.1964172); symgraph gives both moms as MXNet."""
    attrs = dict(lr=0.1, momentum=0.9, wd=0.05, rescale_grad=0.5, clip_gradient=0.4)
    for out, want in ((False, -0.8576175), (True, -0.85375774)):
        w, m = mx.nd.array([-0.4244667]), mx.nd.array([-0.952803])
        kw = {'out': w} if out else {}
        r = mx.nd.nag_mom_update(w, mx.nd.array([0.04434293]), m, **attrs, **kw)
        np.testing.assert_allclose(r.asnumpy(), [-1.1964172], rtol=1e-6)
        np.testing.assert_allclose(m.asnumpy(), [want], rtol=1e-6)


#: MXNet 1.9.1's parameter order (inspect.signature of mx.nd.<op>, inputs left out)
MXNET_SIGNATURES = {
    'sgd_update': 'lr wd rescale_grad clip_gradient lazy_update',
    'sgd_mom_update': 'lr momentum wd rescale_grad clip_gradient lazy_update',
    'mp_sgd_update': 'lr wd rescale_grad clip_gradient lazy_update',
    'mp_sgd_mom_update': 'lr momentum wd rescale_grad clip_gradient lazy_update',
    'nag_mom_update': 'lr momentum wd rescale_grad clip_gradient',
    'mp_nag_mom_update': 'lr momentum wd rescale_grad clip_gradient',
    'adam_update': 'lr beta1 beta2 epsilon wd rescale_grad clip_gradient lazy_update',
    'rmsprop_update': 'lr gamma1 epsilon wd rescale_grad clip_gradient clip_weights',
    'rmspropalex_update': 'lr gamma1 gamma2 epsilon wd rescale_grad clip_gradient '
                          'clip_weights',
    'signsgd_update': 'lr wd rescale_grad clip_gradient',
    'signum_update': 'lr momentum wd rescale_grad clip_gradient wd_lh',
    'ftml_update': 'lr beta1 beta2 epsilon t wd rescale_grad clip_grad',
    'ftrl_update': 'lr lamda1 beta wd rescale_grad clip_gradient',
    '_adamw_update': 'lr beta1 beta2 epsilon wd eta clip_gradient',
    '_mp_adamw_update': 'lr beta1 beta2 epsilon wd eta clip_gradient',
    'all_finite': 'init_output',
}


@pytest.mark.parametrize('name', sorted(MXNET_SIGNATURES))
def test_signature_matches_mxnet(name):
    op = get_op(name)
    assert positional_params(op) == MXNET_SIGNATURES[name].split()
    required = {k: v for k, v in {'lr': 0.1, 'eta': 1.0, 't': 1}.items() if k in op._params}
    made = op(**required)
    # inputs in MXNet's order (the order mx.nd binds positional arrays to)
    assert made.list_arguments() + made.list_auxiliary_states() == \
        gold.INPUTS.get(name, ['data'])
