"""Multi-tensor operators (ops/multi_tensor.py): OpCases, bit-for-bit agreement with
MXNet 1.9.1 over several update steps (tests/golden/make_amp_multi.py), agreement with the
single-tensor updates where MXNet's kernels agree, and errors."""
import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, case_tests
from symgraph.base import MXNetError
import _golden_amp_multi as golden


def _pairs(k, extra=None):
    """Inputs for two tensors of shapes (3, 4) and (5,), ``k`` arrays per tensor."""
    def make(r, s, d):
        arrays = []
        for shape in ((3, 4), (5,)):
            for j in range(k):
                arrays.append(r.uniform(0.1 if j == 3 else -1, 1, shape).astype(d))
        return arrays + (extra(d) if extra else [])
    return make


def _sgd_ref(lrs, wds, rescale=1.0):
    def ref(*a):
        return [a[2 * i] + (0 - lrs[i] * wds[i] * a[2 * i] - lrs[i] * rescale * a[2 * i + 1])
                for i in range(2)]
    return ref


_SHAPES2 = [(3, 4), (3, 4), (5,), (5,)]
_LW = {'lrs': (0.1, 0.05), 'wds': (0.01, 0.002), 'num_weights': 2}
_PRE = lambda d: [np.array([0.1, 0.05], d), np.array([0.01, 0.002], d)]   # noqa: E731
# Cases whose states the harness would see change between its runs keep the update
# idempotent (momentum 0, betas 0, lr 0 for the mp_ master copies); the real update
# arithmetic is checked against MXNet in test_against_mxnet.
STATEFUL = ('momenta/means change between the harness\'s runs: the values are MXNet\'s in '
            'test_multi_tensor.py::test_against_mxnet')
CASES = [
    OpCase('multi_sgd_update', dict(_LW, rescale_grad=0.5), shapes=_SHAPES2, grad=(),
           inputs=_pairs(2), ref=_sgd_ref(_LW['lrs'], _LW['wds'], 0.5)),
    OpCase('multi_sgd_mom_update', dict(_LW), shapes=_SHAPES2 * 1, grad=(),
           inputs=_pairs(3), no_ref=STATEFUL),
    OpCase('multi_mp_sgd_update', dict(_LW, lrs=(0.0, 0.0)), shapes=_SHAPES2, grad=(),
           inputs=_pairs(3), dtypes=('float32',), ref=lambda *a: [a[2], a[5]]),
    OpCase('multi_mp_sgd_mom_update', dict(_LW, lrs=(0.0, 0.0)), shapes=_SHAPES2, grad=(),
           inputs=_pairs(4), dtypes=('float32',), ref=lambda *a: [a[3], a[7]]),
    OpCase('preloaded_multi_sgd_update', {'num_weights': 2}, shapes=_SHAPES2, grad=(),
           inputs=_pairs(2, _PRE), dtypes=('float32',), ref=_sgd_ref(_LW['lrs'], _LW['wds'])),
    OpCase('preloaded_multi_sgd_mom_update', {'num_weights': 2}, shapes=_SHAPES2, grad=(),
           inputs=_pairs(3, _PRE), dtypes=('float32',), no_ref=STATEFUL),
    OpCase('preloaded_multi_mp_sgd_update', {'num_weights': 2}, shapes=_SHAPES2, grad=(),
           inputs=_pairs(3, lambda d: [np.zeros(2, d), np.zeros(2, d)]),
           dtypes=('float32',), ref=lambda *a: [a[2], a[5]]),
    OpCase('preloaded_multi_mp_sgd_mom_update', {'num_weights': 2}, shapes=_SHAPES2,
           grad=(), inputs=_pairs(4, lambda d: [np.zeros(2, d), np.zeros(2, d)]),
           dtypes=('float32',), ref=lambda *a: [a[3], a[7]]),
    OpCase('_multi_adamw_update', {'lrs': (0.01, 0.02), 'wds': (0.1, 0.0),
                                   'etas': (1.0, 0.5), 'num_weights': 2, 'beta1': 0,
                                   'beta2': 0},
           shapes=_SHAPES2, grad=(), inputs=_pairs(4, lambda d: [np.ones(1, np.float32)]),
           dtypes=('float32',), no_ref=STATEFUL),
    OpCase('_multi_mp_adamw_update', {'lrs': (0.0, 0.0), 'wds': (0.0, 0.0),
                                      'etas': (1.0, 0.5), 'num_weights': 2},
           shapes=_SHAPES2, grad=(), inputs=_pairs(5, lambda d: [np.ones(1, np.float32)]),
           dtypes=('float32',), ref=lambda *a: [a[4], a[9]]),
    OpCase('_multi_lamb_update', {'learning_rates': (0.01, 0.02), 'wds': (0.1, 0.0),
                                  'step_count': (1, 2), 'num_tensors': 2, 'beta1': 0,
                                  'beta2': 0},
           shapes=_SHAPES2, grad=(), inputs=_pairs(4), dtypes=('float32',), no_ref=STATEFUL),
    OpCase('_multi_mp_lamb_update', {'learning_rates': (0.0, 0.0), 'wds': (0.1, 0.0),
                                     'step_count': (1, 2), 'num_tensors': 2},
           shapes=_SHAPES2, grad=(), inputs=_pairs(5), dtypes=('float32',),
           ref=lambda *a: [a[4], a[9]]),
    OpCase('multi_sum_sq', {'num_arrays': 2}, shapes=[(3, 4), (7,)], grad=(),
           dtypes=('float32',),
           ref=lambda a, b: np.array([(a * a).sum(), (b * b).sum()], np.float32)),
    OpCase('multi_all_finite', {'num_arrays': 2}, shapes=[(3, 4), (7,)], grad=(),
           ref=lambda a, b: np.ones(1, np.float32)),
    OpCase('multi_lars', {'eta': 0.9, 'eps': 1e-8}, shapes=[(4,)] * 4, grad=(),
           dtypes=('float32',),
           inputs=lambda r, s, d: [r.uniform(0.1, 1, 4).astype(d) for _ in range(4)],
           ref=lambda lr, w, g, wd: lr * 0.9 * np.sqrt(w) / (np.sqrt(g) + wd * np.sqrt(w)
                                                             + 1e-8),
           rtol=1e-5),
    OpCase('_contrib_group_adagrad_update', {'lr': 0.1}, shapes=[(4, 3), (4, 3), (4, 1)],
           grad=(), dtypes=('float32', 'float64'),
           inputs=lambda r, s, d: [r.uniform(-1, 1, s[0]).astype(d),
                                   r.uniform(-1, 1, s[1]).astype(d), np.zeros(s[2], d)],
           ref=lambda w, g, h: w - 0.1 * g / np.sqrt((g * g).mean(axis=1, keepdims=True)
                                                     + 1e-5)),
]

test_forward, test_gradient = case_tests(CASES)


@pytest.mark.parametrize('name', golden.names(('multi_', 'preloaded_', 'reset_',
                                               'group_adagrad')))
def test_against_mxnet(name):
    golden.check(name)


def _arrays(*shapes, dtype='float32', seed=0):
    r = np.random.RandomState(seed)
    return [mx.nd.array(r.normal(0, 1, s), dtype=dtype) for s in shapes]


@pytest.mark.parametrize('clip', [-1.0, 0.3])
def test_multi_sgd_mom_equals_sgd_mom_update(clip):
    """MXNet's two kernels compute the same expression: the results agree bit for bit."""
    kw = dict(momentum=0.9, rescale_grad=0.7, clip_gradient=clip)
    w0, g0, m0, w1, g1, m1 = _arrays((3, 4), (3, 4), (3, 4), (5,), (5,), (5,))
    single = [a.copy() for a in (w0, m0, w1, m1)]
    for _ in range(3):
        mx.nd.multi_sgd_mom_update(w0, g0, m0, w1, g1, m1, lrs=(0.1, 0.2), wds=(0.01, 0.0),
                                   num_weights=2, out=[w0, w1], **kw)
        mx.nd.sgd_mom_update(single[0], g0, single[1], lr=0.1, wd=0.01, out=single[0], **kw)
        mx.nd.sgd_mom_update(single[2], g1, single[3], lr=0.2, wd=0.0, out=single[2], **kw)
    for a, b in zip((w0, m0, w1, m1), single):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_preloaded_equals_multi_with_the_same_rates():
    a = _arrays((3, 4), (3, 4), (5,), (5,), seed=1)
    b = [x.copy() for x in a]
    lrs, wds = (0.1, 0.05), (0.01, 0.002)
    mx.nd.multi_sgd_update(*a, lrs=lrs, wds=wds, num_weights=2, out=[a[0], a[2]])
    mx.nd.preloaded_multi_sgd_update(*b, mx.nd.array(lrs), mx.nd.array(wds), num_weights=2,
                                     out=[b[0], b[2]])
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())


def test_reset_arrays_zeroes_in_place_and_all_finite():
    a, b = _arrays((3,), (2, 2))
    assert mx.nd.multi_all_finite(a, b, num_arrays=2).asnumpy().tolist() == [1.0]
    b[0, 0] = np.inf
    assert mx.nd.multi_all_finite(a, b, num_arrays=2).asnumpy().tolist() == [0.0]
    mx.nd.reset_arrays(a, b, num_arrays=2)
    assert not a.asnumpy().any() and not b.asnumpy().any()


def test_adamw_skips_the_step_for_a_non_finite_rescale():
    w, g, m, v = _arrays((4,), (4,), (4,), (4,))
    before = [x.asnumpy().copy() for x in (w, m, v)]
    out = mx.nd._multi_adamw_update(w, g, m, v, mx.nd.array([np.nan]), lrs=(0.1,),
                                    wds=(0.0,), etas=(1.0,), num_weights=1)
    np.testing.assert_array_equal(out.asnumpy(), before[0])
    np.testing.assert_array_equal(m.asnumpy(), before[1])
    np.testing.assert_array_equal(v.asnumpy(), before[2])


def test_argument_names_follow_mxnet():
    s = mx.sym.multi_sgd_update(num_weights=2, lrs=(1, 1), wds=(0, 0), name='u')
    assert s.list_arguments() == ['u_weight_0', 'u_grad_0', 'u_weight_1', 'u_grad_1']
    assert s.list_outputs() == ['u_output0', 'u_output1']
    s = mx.sym.preloaded_multi_sgd_update(num_weights=1, name='p')
    assert s.list_arguments() == ['p_weight_0', 'p_grad_0', 'p_lrs', 'p_wds']
    s = mx.sym.multi_sum_sq(num_arrays=2, name='n')
    assert s.list_arguments() == ['n_array_0', 'n_array_1']
    assert s.infer_shape(n_array_0=(3, 4), n_array_1=(5,))[1] == [(2,)]


def test_errors_name_the_problem():
    w, g = _arrays((3,), (3,))
    with pytest.raises(MXNetError, match='lrs has 1 entries but num_weights is 2'):
        mx.nd.multi_sgd_update(w, g, w, g, lrs=(0.1,), wds=(0, 0), num_weights=2)
    with pytest.raises(MXNetError, match='num_arrays'):
        mx.nd.multi_sum_sq(w, num_arrays=0)
    with pytest.raises(MXNetError, match='grad_0'):
        mx.nd.multi_sgd_update(w, mx.nd.ones((4,)), lrs=(0.1,), wds=(0,), num_weights=1)
    with pytest.raises(MXNetError, match='float32'):
        mx.nd.multi_lars(*[mx.nd.ones(2, dtype='float16')] * 4, eta=1, eps=0)


def test_contrib_list_wrappers_equal_the_operators():
    """mx.nd.contrib.multi_adamw_update / multi_lamb_update take lists per role, as
    MXNet's Python functions, and give the operator's result."""
    a = _arrays((3, 4), (3, 4), (3, 4), (3, 4), (5,), (5,), (5,), (5,), seed=4)
    for x in (a[3], a[7]):
        x[:] = abs(x.asnumpy())
    b = [x.copy() for x in a]
    kw = dict(lrs=(0.1, 0.2), wds=(0.01, 0.0), etas=(1.0, 0.5))
    mx.nd._multi_adamw_update(*a, mx.nd.array([0.5]), num_weights=2, out=[a[0], a[4]], **kw)
    mx.nd.contrib.multi_adamw_update(b[0::4], b[1::4], b[2::4], b[3::4], 0.5,
                                     out=[b[0], b[4]], **kw)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    kw = dict(wds=(0.01, 0.0), step_count=(1, 1))
    mx.nd._multi_lamb_update(*a, learning_rates=(0.1, 0.2), num_tensors=2,
                             out=[a[0], a[4]], **kw)
    mx.nd.contrib.multi_lamb_update(b[0::4], b[1::4], b[2::4], b[3::4], lrs=(0.1, 0.2),
                                    out=[b[0], b[4]], **kw)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
