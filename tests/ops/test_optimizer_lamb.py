"""LAMB update operators: forward against a NumPy reference of MXNet's kernels, and values
MXNet 1.9.1 gave for the bounds, a zero norm and the multi-precision variants."""
import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, parametrize_cases, check_forward
from symgraph.base import ShapeError, TypeInferenceError


def _phase1(attrs):
    def ref(w, g, mean, var, w32=None):
        dt = np.float32 if w32 is not None else w.dtype
        base = w32 if w32 is not None else w
        f = np.float32
        b1, b2 = f(attrs.get('beta1', 0.9)), f(attrs.get('beta2', 0.999))
        g = f(attrs.get('rescale_grad', 1.0)) * g.astype(dt)
        c = attrs.get('clip_gradient', -1.0)
        if c >= 0:
            g = np.clip(g, -c, c)
        mean = b1 * mean + (1 - b1) * g
        var = b2 * var + (1 - b2) * g * g
        if attrs.get('bias_correction', True):
            t = attrs['t']
            mean = mean / (1 - b1 ** f(t))
            var = var / (1 - b2 ** f(t))
        out = mean / (np.sqrt(var) + f(attrs.get('epsilon', 1e-6))) + f(attrs['wd']) * base
        return out.astype(dt)
    return ref


def _phase2(attrs):
    def ref(w, g, r1, r2, w32=None):
        r1, r2 = float(r1[0]), float(r2[0])
        if attrs.get('lower_bound', -1) >= 0:
            r1 = max(r1, attrs['lower_bound'])
        if attrs.get('upper_bound', -1) >= 0:
            r1 = min(r1, attrs['upper_bound'])
        lr = attrs['lr'] * (r1 / r2) if r1 != 0 and r2 != 0 else attrs['lr']
        base = w if w32 is None else w32
        return (base - lr * g).astype(w.dtype)
    return ref


def _positive_states(rng, shapes, dtype):
    arrs = [rng.uniform(-1, 1, s) for s in shapes]
    arrs[3] = rng.uniform(0.1, 1, shapes[3])         # var
    if len(arrs) > 4:
        arrs[4] = arrs[0].copy()                      # weight32
    return arrs


def _norms(rng, shapes, dtype):
    arrs = [rng.uniform(-1, 1, s) for s in shapes]
    arrs[2], arrs[3] = np.array([2.5]), np.array([0.5])
    if len(arrs) > 4:
        arrs[4] = arrs[0].copy()
    return arrs


S = (3, 4)
P1 = {'t': 3, 'wd': 0.01}
P1b = {'t': 1, 'wd': 0.1, 'beta1': 0.8, 'beta2': 0.99, 'epsilon': 1e-4, 'rescale_grad': 0.5,
       'clip_gradient': 0.3}
P1c = {'t': 2, 'wd': 0.0, 'bias_correction': False}
CASES = [
    OpCase('lamb_update_phase1', P1, shapes=[S] * 4, ref=_phase1(P1), grad=(),
           inputs=_positive_states),
    OpCase('lamb_update_phase1', P1b, shapes=[S] * 4, ref=_phase1(P1b), grad=(),
           inputs=_positive_states),
    OpCase('lamb_update_phase1', P1c, shapes=[S] * 4, ref=_phase1(P1c), grad=(),
           inputs=_positive_states),
    OpCase('mp_lamb_update_phase1', P1b, shapes=[S] * 5, ref=_phase1(P1b), grad=(),
           inputs=_positive_states, dtypes=('float32',),
           input_dtypes=('float16', 'float16', 'float32', 'float32', 'float32')),
    OpCase('lamb_update_phase2', {'lr': 0.1}, shapes=[S, S, (1,), (1,)],
           ref=_phase2({'lr': 0.1}), grad=(), inputs=_norms),
    OpCase('lamb_update_phase2', {'lr': 0.1, 'lower_bound': 3.0},
           shapes=[S, S, (1,), (1,)], ref=_phase2({'lr': 0.1, 'lower_bound': 3.0}),
           grad=(), inputs=_norms),
    OpCase('lamb_update_phase2', {'lr': 0.1, 'upper_bound': 1.0},
           shapes=[S, S, (1,), (1,)], ref=_phase2({'lr': 0.1, 'upper_bound': 1.0}),
           grad=(), inputs=_norms),
    OpCase('mp_lamb_update_phase2', {'lr': 0.05}, shapes=[S, S, (1,), (1,), S],
           ref=_phase2({'lr': 0.05}), grad=(), inputs=_norms, dtypes=('float32',),
           input_dtypes=('float16', 'float32', 'float32', 'float32', 'float32')),
    OpCase('mp_lamb_update_phase2', {'lr': 0.05, 'upper_bound': 1.0},
           shapes=[S, S, (1,), (1,), S], ref=_phase2({'lr': 0.05, 'upper_bound': 1.0}),
           grad=(), inputs=_norms, dtypes=('float32',),
           input_dtypes=('float64', 'float32', 'float32', 'float32', 'float32')),
]


@parametrize_cases(CASES)
def test_forward(case):
    check_forward(case)


def test_phase1_matches_mxnet_bitwise():
    """MXNet 1.9.1: float32 phase 1 with t=3 (its 1 - powf(beta, t) coefficients)."""
    rs = np.random.RandomState(0)
    w, g = rs.randn(6).astype('f4'), rs.randn(6).astype('f4') * 3
    m, v = rs.randn(6).astype('f4') * 0.1, np.abs(rs.randn(6)).astype('f4') * 0.1
    W, G, M, V = [mx.nd.array(x) for x in (w, g, m, v)]
    out = mx.nd.lamb_update_phase1(W, G, M, V, beta1=0.9, beta2=0.999, epsilon=1e-6, t=3,
                                   wd=0.01, rescale_grad=0.5, clip_gradient=1.0)
    np.testing.assert_array_equal(out.asnumpy(), _phase1(
        dict(t=3, wd=0.01, rescale_grad=0.5, clip_gradient=1.0))(w, g, m, v))
    ref_mean = np.float32(0.9) * m + (1 - np.float32(0.9)) * np.clip(np.float32(0.5) * g, -1, 1)
    np.testing.assert_array_equal(M.asnumpy(), ref_mean)


@pytest.mark.parametrize('bounds,want', [
    ({'upper_bound': 0.0}, [2.9, 3.9]),       # r1 cut to 0: the plain rate
    ({'lower_bound': 0.0}, [2.75, 3.75]),
    ({'upper_bound': -1.0}, [2.75, 3.75]),
    ({'lower_bound': 10.0}, [2.5, 3.5]),
])
def test_phase2_bounds_as_mxnet(bounds, want):
    w, g = mx.nd.array([3., 4.]), mx.nd.array([1., 1.])
    out = mx.nd.lamb_update_phase2(w, g, mx.nd.array([5.]), mx.nd.array([2.]), lr=0.1, **bounds)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


def test_phase2_zero_norm_uses_plain_rate():
    w, g = mx.nd.array([3., 4.]), mx.nd.array([1., 1.])
    out = mx.nd.lamb_update_phase2(w, g, mx.nd.array([0.]), mx.nd.array([2.]), lr=0.1)
    np.testing.assert_allclose(out.asnumpy(), [2.9, 3.9], rtol=1e-6)


def test_multi_precision_as_mxnet():
    """MXNet 1.9.1: float32 g from weight32, float16 output, weight32 left unchanged."""
    w16 = mx.nd.array([1.5, -2.25, 0.3], dtype='float16')
    g16 = mx.nd.array([0.5, 1.0, -3.], dtype='float16')
    m, v, w32 = mx.nd.zeros(3), mx.nd.zeros(3), w16.astype('float32')
    g = mx.nd.mp_lamb_update_phase1(w16, g16, m, v, w32, t=1, wd=0.1)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.asnumpy(), [1.149998, 0.774999, -0.96999484], rtol=1e-6)
    np.testing.assert_allclose(m.asnumpy(), [0.05000001, 0.10000002, -0.30000007], rtol=1e-6)
    before = w32.asnumpy()
    out = mx.nd.mp_lamb_update_phase2(w16, g, mx.nd.array([2.]), mx.nd.array([1.]), w32,
                                      lr=0.1)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out.asnumpy(),
                                  np.array([1.27, -2.404, 0.4941], dtype=np.float16))
    np.testing.assert_array_equal(w32.asnumpy(), before)


def test_errors():
    w = mx.nd.ones((2,))
    with pytest.raises(ShapeError, match="'r1' must have shape"):
        mx.nd.lamb_update_phase2(w, w, mx.nd.ones((2,)), mx.nd.ones((1,)), lr=0.1)
    with pytest.raises(mx.base.MXNetError, match="required parameter 'wd'"):
        mx.nd.lamb_update_phase1(w, w, w, w, t=1)


@pytest.mark.parametrize('op,types,bad', [
    ('mp_lamb_update_phase1', ('float32', 'float32', 'float32', 'float32', 'float32'),
     "'weight' is float32, but must be float16"),
    ('mp_lamb_update_phase1', ('float16', 'float32', 'float32', 'float32', 'float32'),
     "'grad' is float32, but must be float16"),
    ('mp_lamb_update_phase1', ('float16', 'float16', 'float16', 'float32', 'float32'),
     "'mean' is float16, but must be float32"),
    ('mp_lamb_update_phase1', ('float16', 'float16', 'float32', 'float32', 'float64'),
     "'weight32' is float64, but must be float32"),
    ('mp_lamb_update_phase2', ('float16', 'float16', 'float32', 'float32', 'float32'),
     "'g' is float16, but must be float32"),
    ('mp_lamb_update_phase2', ('float16', 'float32', 'float32', 'float32', 'float64'),
     "'weight32' is float64, but must be float32"),
])
def test_mixed_precision_types_as_mxnet(op, types, bad):
    """MXNet 1.9.1 refuses these ("Type inconsistent"); a TypeError naming the input here."""
    shapes = [(3,), (3,), (3,), (3,), (3,)] if op.endswith('1') else \
        [(3,), (3,), (1,), (1,), (3,)]
    arrays = [mx.nd.ones(s, dtype=t) for s, t in zip(shapes, types)]
    kw = {'t': 1, 'wd': 0.1} if op.endswith('1') else {'lr': 0.1}
    with pytest.raises(TypeError, match=bad) as info:
        getattr(mx.nd, op)(*arrays, **kw)
    assert isinstance(info.value, TypeInferenceError) and op in str(info.value)
    # graph inference too, naming the node
    names = ['w', 'g', 'a', 'b', 'w32']
    sym = getattr(mx.sym, op)(*[mx.sym.var(n) for n in names], name='lamb', **kw)
    with pytest.raises(TypeInferenceError, match='lamb'):
        sym.infer_type(**dict(zip(names, types)))


def test_mixed_precision_types_inferred_as_mxnet():
    """Unknown types are filled in as MXNet's inference does (float16 weight and grad)."""
    sym = mx.sym.mp_lamb_update_phase1(*[mx.sym.var(n) for n in ('w', 'g', 'm', 'v', 'w32')],
                                       t=1, wd=0.1)
    args, outs, aux = sym.infer_type()
    assert [np.dtype(t) for t in args] == ['float16', 'float16'] and \
        [np.dtype(t) for t in aux] == ['float32'] * 3 and np.dtype(outs[0]) == 'float32'
    sym = mx.sym.mp_lamb_update_phase2(*[mx.sym.var(n) for n in ('w', 'g', 'r1', 'r2', 'w32')],
                                       lr=0.1)
    args, outs, _ = sym.infer_type(w='float64')
    assert [np.dtype(t) for t in args] == ['float64'] + ['float32'] * 4
    assert np.dtype(outs[0]) == 'float64'
