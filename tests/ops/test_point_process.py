"""``_contrib_hawkesll`` (ops/point_process.py): OpCases with float64 numeric gradients of
every continuous input, a loop reference written from MXNet 1.9.1's kernel, MXNet's unit-test
values (tests/python/unittest/test_contrib_hawkesll.py), and forward and backward against MXNet
1.9.1 (tests/golden/make_hawkes_cv.py, data/hawkes_cv.npz)."""
import math
import os

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import ParameterError
from symgraph.opdef import ShapeError, TypeInferenceError, get_op

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), os.pardir, 'golden', 'data',
                              'hawkes_cv.npz'))


def _hawkes_ref(mu, alpha, beta, state, lags, marks, vlen, max_time):
    """The kernel of hawkes_ll-inl.h, one loop per row, in float64."""
    N, K = mu.shape
    ll = np.zeros(N)
    out_state = np.zeros((N, K))
    for i in range(N):
        s = state[i].astype(np.float64).copy()
        last = np.zeros(K)
        t = 0.0
        j = 0
        while j < vlen[i]:
            c = marks[i, j]
            t += lags[i, j]
            d = t - last[c]
            ed = math.exp(-beta[c] * d)
            lda = mu[i, c] + alpha[c] * beta[c] * s[c] * ed
            ll[i] += math.log(lda) - (mu[i, c] * d + alpha[c] * s[c] * (1 - ed))
            s[c] = 1 + s[c] * ed
            last[c] = t
            j += 1
        for k in range(K):
            d = max_time[i] - last[k]
            ed = math.exp(-beta[k] * d)
            ll[i] -= mu[i, k] * d + alpha[k] * s[k] * (1 - ed)
            out_state[i, k] = ed * s[k]
    return [ll.astype(mu.dtype), out_state.astype(mu.dtype)]


def _hawkes_inputs(N, K, T, vlen):
    def make(rng, shapes, dtype):
        return [rng.uniform(0.5, 2.0, (N, K)), rng.uniform(0.1, 0.9, K),
                rng.uniform(0.5, 2.5, K), rng.uniform(0.0, 1.5, (N, K)),
                rng.uniform(0.05, 1.0, (N, T)), rng.randint(0, K, (N, T)).astype(np.int32),
                np.array(vlen, np.float64), T * 1.0 + rng.uniform(0.5, 2.0, N)]
    return make


def _shapes(N, K, T):
    return [(N, K), (K,), (K,), (N, K), (N, T), (N, T), (N,), (N,)]


CASES = [
    # every float input but valid_length (piecewise constant) gets its numeric gradient,
    # the head gradients of both outputs included
    OpCase('_contrib_hawkesll', {}, _shapes(3, 2, 5), inputs=_hawkes_inputs(3, 2, 5, [3, 5, 0]),
           ref=_hawkes_ref, grad=(0, 1, 2, 3, 4, 7), rtol=1e-5, atol=1e-5),
    OpCase('_contrib_hawkesll', {}, _shapes(2, 3, 6),
           inputs=_hawkes_inputs(2, 3, 6, [2.5, 6]), ref=_hawkes_ref, grad=(0, 1, 2, 3, 4, 7),
           rtol=1e-5, atol=1e-5, id='hawkesll[fractional valid_length]'),
    OpCase('_contrib_hawkesll', {}, _shapes(1, 1, 4), inputs=_hawkes_inputs(1, 1, 4, [4]),
           ref=_hawkes_ref, grad=(0, 1, 2, 3, 4, 7), rtol=1e-5, atol=1e-5,
           id='hawkesll[one mark]'),
]

test_forward, test_gradient = case_tests(CASES)


def _nd(a):
    return mx.nd.array(a, dtype=a.dtype)


_NAMES = ['lda', 'alpha', 'beta', 'state', 'lags', 'marks', 'valid_length', 'max_time']


def _run(ins, head, head_state=None, grad=('lda', 'alpha', 'beta')):
    """Forward and backward through mx.sym + bind: (outputs, {name: gradient})."""
    y = mx.sym.contrib.hawkesll(*[mx.sym.var(n) for n in _NAMES])
    args = {n: _nd(a) for n, a in zip(_NAMES, ins)}
    grads = {n: mx.nd.zeros(args[n].shape, dtype=args[n].dtype) for n in grad}
    ex = y.bind(mx.cpu(), args, args_grad=grads,
                grad_req={n: 'write' if n in grad else 'null' for n in _NAMES})
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    dt = ins[0].dtype
    hs = np.zeros(ins[0].shape, dt) if head_state is None else head_state
    ex.backward([mx.nd.array(head, dtype=dt), mx.nd.array(hs, dtype=dt)])
    return outs, {n: ex.grad_dict[n].asnumpy() for n in grad}


@pytest.mark.parametrize('name', ['hawkes_f32', 'hawkes_f32_frac_len', 'hawkes_f64',
                                  'hawkes_doc'])
def test_forward_and_backward_match_mxnet(name):
    ins = [GOLDEN['%s/in%d' % (name, i)] for i in range(8)]
    dt = ins[0].dtype
    ll, st = mx.nd.contrib.hawkesll(*[_nd(a) for a in ins])
    assert ll.dtype == dt and st.dtype == dt
    # MXNet evaluates exp and log in float32 (expf/logf) even for float64 data
    tol = dict(rtol=2e-6, atol=2e-5)
    np.testing.assert_allclose(ll.asnumpy(), GOLDEN[name + '/out0'], **tol)
    np.testing.assert_allclose(st.asnumpy(), GOLDEN[name + '/out1'], **tol)
    # MXNet ignores out_state's head gradient: compare with a head on the log-likelihood only
    _, grads = _run(ins, GOLDEN[name + '/head'])
    for i, n in enumerate(('lda', 'alpha', 'beta')):
        np.testing.assert_allclose(grads[n], GOLDEN['%s/grad%d' % (name, i)],
                                   rtol=2e-5, atol=2e-5, err_msg='gradient of ' + n)


def test_mxnet_unit_test_values():
    """tests/python/unittest/test_contrib_hawkesll.py of MXNet 1.9.1 (lda is tiled there:
    its gradient is the column sum here)."""
    ins = [np.tile(np.array([1.5, 2.0, 3.0], np.float32), (2, 1)),
           np.array([0.2, 0.3, 0.4], np.float32), np.array([2.0, 2.0, 2.0], np.float32),
           np.zeros((2, 3), np.float32),
           np.array([[6, 7, 8, 9, 3, 2, 5, 1, 7], [1, 2, 3, 4, 2, 1, 2, 1, 4]], np.float32),
           np.array([[0, 0, 0, 1, 0, 0, 1, 2, 0], [1, 2, 0, 0, 0, 2, 2, 1, 0]], np.int32),
           np.array([9, 9], np.float32), np.array([100, 100], np.float32)]
    _, g = _run(ins, np.ones(2, np.float32))
    np.testing.assert_allclose(g['lda'].sum(axis=0), [-193.33987481, -198.0, -198.66828681],
                               rtol=1e-5)
    np.testing.assert_allclose(g['alpha'], [-9.95093892, -4.0, -3.98784892], rtol=1e-5)
    np.testing.assert_allclose(g['beta'], [-1.49052169e-02, -5.87469511e-09, -7.29065224e-03],
                               rtol=1e-4)
    ll, _ = mx.nd.contrib.hawkesll(*[_nd(a) for a in GOLDEN_DOC])
    np.testing.assert_allclose(ll.asnumpy(), [-649.79453489, -649.57118596, -649.38025115,
                                              -649.17811484], rtol=1e-6)


GOLDEN_DOC = [GOLDEN['hawkes_doc/in%d' % i] for i in range(8)]


def test_symbol_names_shapes_and_json():
    y = mx.sym.contrib.hawkesll(*[mx.sym.var(n) for n in _NAMES], name='h')
    assert y.list_arguments() == _NAMES
    assert y.list_outputs() == ['h_output', 'h_out_state']
    args, outs, _ = y.infer_shape(lda=(4, 3), lags=(4, 7))
    assert args == [(4, 3), (3,), (3,), (4, 3), (4, 7), (4, 7), (4,), (4,)]
    assert outs == [(4,), (4, 3)]
    types = y.infer_type(lda='float64')
    assert [np.dtype(t).name for t in types[0]] == ['float64'] * 5 + ['int32'] + ['float64'] * 2
    assert mx.sym.load_json(y.tojson()).tojson() == y.tojson()


def test_bind_with_every_gradient_requested():
    """MXNet 1.9.1 fails this bind ("req[kIATimes] == kNullOp") and ignores out_state's head
    gradient; here every continuous input gets its gradient (central differences of the
    forward) and valid_length a zero one."""
    ins = [GOLDEN['hawkes_f64/in%d' % i] for i in range(8)]
    rng = np.random.RandomState(4)
    head, head_state = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, (2, 3))
    names = ('lda', 'alpha', 'beta', 'state', 'lags', 'valid_length', 'max_time')
    _, grads = _run(ins, head, head_state, grad=names)
    assert np.all(grads['valid_length'] == 0)

    def loss(arrs):
        ll, st = mx.nd.contrib.hawkesll(*[_nd(a) for a in arrs])
        return float((ll.asnumpy() * head).sum() + (st.asnumpy() * head_state).sum())
    for i, n in enumerate(_NAMES):
        if n in ('marks', 'valid_length'):
            continue
        num = np.zeros_like(ins[i])
        for k in np.ndindex(ins[i].shape):
            plus, minus = [a.copy() for a in ins], [a.copy() for a in ins]
            plus[i][k] += 1e-6
            minus[i][k] -= 1e-6
            num[k] = (loss(plus) - loss(minus)) / 2e-6
        np.testing.assert_allclose(grads[n], num, rtol=1e-5, atol=1e-6, err_msg=n)


def test_errors():
    op = get_op('_contrib_hawkesll')()
    with pytest.raises(ShapeError, match="'alpha' must be 1-D"):
        op.infer_shape([(2, 3), (3, 1), (3,), (2, 3), (2, 4), (2, 4), (2,), (2,)])
    with pytest.raises(ShapeError, match="'state' has shape \\(2, 2\\)"):
        op.infer_shape([(2, 3), (3,), (3,), (2, 2), (2, 4), (2, 4), (2,), (2,)])
    with pytest.raises(TypeInferenceError, match="'marks' must be int32"):
        op.infer_type([np.float32] * 8)
    with pytest.raises(TypeInferenceError, match="'beta' has type float64"):
        op.infer_type([np.float32, np.float32, np.float64, None, None, np.int32, None, None])
    ins = [GOLDEN['hawkes_f32/in%d' % i] for i in range(8)]
    bad = list(ins)
    bad[6] = np.array([3, 7, 0], np.float32)                   # T is 6
    with pytest.raises(ParameterError, match='valid_length must be at most.*got 7.0 in row 1'):
        mx.nd.contrib.hawkesll(*[_nd(a) for a in bad])
    bad = list(ins)
    bad[5] = ins[5].copy()
    bad[5][1, 2] = 2                                           # K is 2
    with pytest.raises(ParameterError, match='marks must lie in \\[0, 2\\).*got 2 at \\(1, 2\\)'):
        mx.nd.contrib.hawkesll(*[_nd(a) for a in bad])
    bad[5][1, 2] = 0
    bad[5][2, 0] = 9                    # row 2 counts no point: its marks are not read
    mx.nd.contrib.hawkesll(*[_nd(a) for a in bad])


def test_mxnet_written_graph_loads_and_runs():
    y = mx.sym.load_json(str(GOLDEN['json_hawkesll/attrs']))
    assert y.list_arguments() == _NAMES and y.list_outputs() == ['hk_output', 'hk_out_state']
    ins = [GOLDEN['hawkes_f32/in%d' % i] for i in range(8)]
    ex = y.bind(mx.cpu(), {n: _nd(a) for n, a in zip(_NAMES, ins)})
    outs = ex.forward()
    np.testing.assert_allclose(outs[0].asnumpy(), GOLDEN['hawkes_f32/out0'], rtol=2e-6,
                               atol=2e-5)
