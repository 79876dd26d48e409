"""Issue 15's argument and numeric gaps: keywords, shapes and values where symgraph differed
from MXNet 1.9.1. Expected values come from MXNet (``tests/golden/make_mxnet_gaps.py`` writes
``tests/golden/data/mxnet_gaps.json``) or are quoted from it in the test.
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.test_utils import check_numeric_gradient

_GOLDEN = os.path.join(os.path.dirname(__file__), os.pardir, 'golden', 'data',
                       'mxnet_gaps.json')
with open(_GOLDEN) as _f:
    GOLD = json.load(_f)


def _with_grad(op, a, w, **kw):
    """Output of ``op(a)`` and the gradient of ``sum(op(a) * w)`` w.r.t. ``a`` (float64)."""
    y = op(mx.sym.var('a'), **kw)
    a = mx.nd.array(a, dtype='float64')
    ex = y.bind(mx.cpu(), {'a': a}, args_grad={'a': mx.nd.zeros(a.shape, dtype='float64')})
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward([mx.nd.array(w, dtype='float64')])
    return [out, ex.grad_dict['a'].asnumpy()]


@pytest.mark.parametrize('lower', [True, False])
def test_potrf_lower(lower):
    upper = np.array([[4., 2.], [100., 3.]])      # SPD in its upper triangle only
    a = upper.T if lower else upper
    out, grad = _with_grad(mx.sym.linalg.potrf, a, [[1., 2.], [3., 4.]], lower=lower)
    want = GOLD['potrf_lower_%s' % lower]['value']
    np.testing.assert_allclose(out, want[0], rtol=1e-12)
    np.testing.assert_allclose(grad, want[1], rtol=1e-12)


@pytest.mark.parametrize('lower', [True, False])
def test_potri_lower(lower):
    tri = np.array([[2., 5.], [0.5, 3.]])
    a = tri if lower else tri.T
    out, grad = _with_grad(mx.sym.linalg.potri, a, [[1., 2.], [3., 4.]], lower=lower)
    want = GOLD['potri_lower_%s' % lower]['value']
    np.testing.assert_allclose(out, want[0], rtol=1e-12)
    np.testing.assert_allclose(grad, want[1], rtol=1e-12, atol=1e-15)


def test_potrf_lower_json_as_mxnet():
    s = mx.sym.linalg.potrf(mx.sym.var('a'), lower=False, name='potrf0')
    node = json.loads(s.tojson())['nodes'][1]
    assert node['attrs'] == {'lower': 'False'}                  # as MXNet 1.9.1 writes it
    assert json.loads(mx.sym.linalg.potrf(mx.sym.var('a')).tojson())['nodes'][1].get(
        'attrs', {}) == {}


_POOL = {   # name: (data shape, Pooling keywords), as in make_mxnet_gaps.py; data is arange
    'pad3_kernel2_avg': ((1, 1, 4, 4), dict(kernel=(2, 2), pad=(1, 0, 1), pool_type='avg')),
    'pad4_kernel2_max': ((1, 1, 4, 4), dict(kernel=(2, 2), pad=(1, 1, 1, 2), pool_type='max')),
    'stride3_kernel2_avg': ((1, 1, 4, 4), dict(kernel=(2, 2), stride=(1, 2, 2),
                                              pool_type='avg')),
    'pad2_kernel1_max': ((1, 2, 4), dict(kernel=(2,), pad=(1, 1), pool_type='max')),
    'pad1_global_max': ((1, 1, 4, 4), dict(kernel=(2, 2), pad=(1,), global_pool=True,
                                          pool_type='max')),
    'pad1_kernel2_max': ((1, 1, 4, 4), dict(kernel=(2, 2), pad=(1,), pool_type='max')),
    'stride1_kernel2_max': ((1, 1, 4, 4), dict(kernel=(2, 2), stride=(1,), pool_type='max')),
    'pad2_kernel3_max': ((1, 1, 4, 4, 4), dict(kernel=(2, 2, 2), pad=(1, 1),
                                               pool_type='max')),
}


@pytest.mark.parametrize('name', sorted(_POOL))
def test_pooling_pad_stride_of_another_rank(name):
    """MXNet reads the first len(kernel) entries of a longer pad/stride; a shorter one fails
    (except with global_pool, which ignores both)."""
    shape, kw = _POOL[name]
    data = mx.nd.array(np.arange(np.prod(shape)).reshape(shape))
    want = GOLD['pool_' + name]
    if 'error' in want:
        with pytest.raises(mx.base.MXNetError, match='fewer dimensions than kernel'):
            mx.nd.Pooling(data, **kw)
        return
    np.testing.assert_allclose(mx.nd.Pooling(data, **kw).asnumpy(), want['value'])


def test_broadcast_like_across_dtypes():
    # MXNet 1.9.1: float16 lhs like an int64 rhs -> float16 [[1.5, 2.5, -3]] * 2; gradients
    # float16 [[2, 2, 2]] (lhs) and int64 zeros (rhs); rhs's type is not inferred from lhs
    s = mx.sym.broadcast_like(mx.sym.var('a'), mx.sym.var('b'))
    assert s.infer_type(a='float32', b='int32') == ([np.float32, np.int32], [np.float32], [])
    assert s.infer_type_partial(b='int32') == ([None, np.int32], [None], [])
    a = mx.nd.array([[1.5, 2.5, -3]], dtype='float16')
    b = mx.nd.ones((2, 3), dtype='int64')
    r = mx.nd.broadcast_like(a, b)
    assert r.dtype == np.float16
    np.testing.assert_array_equal(r.asnumpy(), [[1.5, 2.5, -3.0]] * 2)
    ex = s.bind(mx.cpu(), {'a': a, 'b': b},
                args_grad={'a': mx.nd.zeros((1, 3), dtype='float16'),
                           'b': mx.nd.ones((2, 3), dtype='int64')})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((2, 3), dtype='float16')])
    assert ex.grad_dict['a'].dtype == np.float16
    np.testing.assert_array_equal(ex.grad_dict['a'].asnumpy(), [[2, 2, 2]])
    assert ex.grad_dict['b'].dtype == np.int64
    np.testing.assert_array_equal(ex.grad_dict['b'].asnumpy(), np.zeros((2, 3)))


@pytest.mark.parametrize('method, args, shape', [
    ('flatten', (), (2, 3)), ('expand_dims', (1,), (2, 1, 1, 3)),
    ('expand_dims', (-1,), (2, 1, 3, 1)), ('squeeze', (), (2, 3))])
def test_ndarray_shape_methods_inplace(method, args, shape):
    # MXNet 1.9.1: x.flatten/expand_dims/squeeze(inplace=True) is a view sharing memory
    x = mx.nd.array(np.arange(6).reshape(2, 1, 3))
    y = getattr(x, method)(*args, inplace=True)
    assert y.shape == shape
    y[:] = -1
    np.testing.assert_array_equal(x.asnumpy(), -np.ones((2, 1, 3)))
    z = getattr(x, method)(*args)                    # default: a copy
    assert z.shape == shape
    z[:] = 5
    np.testing.assert_array_equal(x.asnumpy(), -np.ones((2, 1, 3)))


_MXNET_FLATTEN_JSON = (   # written by MXNet 1.9.1: mx.sym.Flatten(a, inplace=True, name='f')
    '{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "Flatten", "name": "f", '
    '"attrs": {"inplace": "True"}, "inputs": [[0, 0, 0]]}], "arg_nodes": [0], '
    '"node_row_ptr": [0, 1, 2], "heads": [[1, 0, 0]], '
    '"attrs": {"mxnet_version": ["int", 10901]}}')


def test_parameterless_operator_takes_any_keyword():
    # MXNet 1.9.1: an operator without parameters (Flatten, relu) accepts any keyword and
    # stores it as a node attribute; nd.Flatten(x, inplace=True) is a plain Flatten
    x = mx.nd.array(np.arange(6).reshape(2, 3, 1))
    with pytest.warns(UserWarning, match="Flatten takes no parameters; 'inplace' ignored"):
        y = mx.nd.Flatten(x, inplace=True)
    np.testing.assert_array_equal(y.asnumpy(), np.arange(6).reshape(2, 3))
    with pytest.warns(UserWarning, match="'foo' ignored"):
        s = mx.sym.relu(mx.sym.var('a'), foo=1, name='r')
    assert s.attr_dict() == {'r': {'foo': '1'}}
    assert json.loads(s.tojson())['nodes'][1]['attrs'] == {'foo': '1'}
    loaded = mx.sym.load_json(_MXNET_FLATTEN_JSON)         # no warning on load
    assert loaded.infer_shape(a=(2, 3, 4)) == ([(2, 3, 4)], [(2, 12)], [])
    assert json.loads(loaded.tojson())['nodes'][1]['attrs'] == {'inplace': 'True'}
    with pytest.raises(mx.base.MXNetError, match="unknown parameter 'foo'"):
        mx.nd.expand_dims(x, axis=0, foo=1)        # one with parameters still refuses


@pytest.mark.parametrize('op', ['_maximum', '_minimum', 'broadcast_maximum',
                                'broadcast_minimum'])
def test_maximum_minimum_gradient_with_nan(op):
    # MXNet 1.9.1: lhs gets the gradient where lhs >= rhs (<= for minimum), rhs where
    # lhs < rhs (>): neither where one of them is NaN
    nan = float('nan')
    a, b = [1., nan, nan, 2., 2., -0.], [nan, 1., nan, 2., 3., 0.]
    fn = getattr(mx.sym, op, None) or getattr(mx.sym._internal, op)
    s = fn(mx.sym.var('a'), mx.sym.var('b'))
    ex = s.bind(mx.cpu(), {'a': mx.nd.array(a), 'b': mx.nd.array(b)},
                args_grad={'a': mx.nd.zeros((6,)), 'b': mx.nd.zeros((6,))})
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward([mx.nd.ones((6,))])
    want = GOLD['grad_' + op]['value']
    np.testing.assert_array_equal(out, want[0])
    np.testing.assert_array_equal(ex.grad_dict['a'].asnumpy(), want[1])
    np.testing.assert_array_equal(ex.grad_dict['b'].asnumpy(), want[2])


def test_check_numeric_gradient_grad_req_add_and_null():
    """MXNet 1.9.1's test_roipooling and check_sequence_func pass grad_nodes as a dict with
    'add' and 'null' requests: 'add' must add to the (random) gradient array, 'null' leave it
    untouched; neither is compared with a numeric gradient of zero."""
    rng = np.random.RandomState(1234)
    roi = mx.sym.ROIPooling(data=mx.sym.var('data'), rois=mx.sym.var('rois'),
                            pooled_size=(4, 4), spatial_scale=1)
    x1 = rng.rand(4, 3, 12, 8).astype('float32')
    x2 = np.array([[0, 1.1, 1.1, 6.2, 6.2], [2, 6.1, 2.1, 8.2, 11.2],
                   [1, 3.1, 1.1, 5.2, 10.2], [0, 3, 3, 3, 3]], dtype='float32')
    for req in ('write', 'add'):
        check_numeric_gradient(roi, [x1, x2], grad_nodes={'data': req, 'rois': 'null'},
                               numeric_eps=1e-4, rtol=1e-1, atol=1e-4)
    X, L = mx.sym.var('X'), mx.sym.var('L')
    x = rng.uniform(-1, 1, (3, 4)).astype('float32')
    lengths = np.array([1, 3, 2, 3])
    for y in (mx.sym.SequenceMask(X, L, use_sequence_length=True, value=0.3),
              mx.sym.SequenceReverse(X, L, use_sequence_length=True)):
        check_numeric_gradient(y, [x, lengths], grad_nodes={'X': 'write'},
                               numeric_eps=1e-2, rtol=1e-2)
        for req in ('add', 'null'):
            check_numeric_gradient(y, [x, lengths], grad_nodes={'X': req},
                                   numeric_eps=1e-3, rtol=1e-2, atol=1e-4)


def test_check_numeric_gradient_refuses_unknown_grad_req():
    with pytest.raises(ValueError, match="invalid grad_req for \\['a'\\]"):
        check_numeric_gradient(mx.sym.var('a') * 2, [np.ones(3)], grad_nodes={'a': 'bogus'})


@pytest.mark.parametrize('mode', ['training', 'always'])
def test_dropout_p1_is_nan(mode):
    # MXNet 1.9.1 (its test_dropout asserts it): p=1 scales the all-zero keep mask by
    # 1/(1-p) = inf, so output and gradient are NaN everywhere; inference passes through
    # in 'training' mode
    x = mx.nd.array([np.nan, 1, -2, np.inf])
    ex = mx.sym.Dropout(mx.sym.var('a'), p=1.0, mode=mode).bind(
        mx.cpu(), {'a': x}, args_grad={'a': mx.nd.zeros(4)})
    assert np.isnan(ex.forward(is_train=True)[0].asnumpy()).all()
    ex.backward([mx.nd.ones(4)])
    assert np.isnan(ex.grad_dict['a'].asnumpy()).all()
    out = ex.forward(is_train=False)[0].asnumpy()
    if mode == 'training':
        np.testing.assert_array_equal(out, [np.nan, 1, -2, np.inf])
    else:
        assert np.isnan(out).all()


@pytest.mark.parametrize('call', [
    lambda: mx.nd.depth_to_space(mx.nd.ones((1, 4, 2, 2)), block_size=2.0),
    lambda: mx.nd.space_to_depth(mx.nd.ones((1, 1, 4, 4)), block_size=2.0),
    lambda: mx.nd.FullyConnected(mx.nd.ones((1, 2)), mx.nd.ones((3, 2)), no_bias=True,
                                 num_hidden=3.0),
    lambda: mx.sym.depth_to_space(mx.sym.var('a'), block_size=np.float64(2))])
def test_int_parameter_refuses_float(call):
    # MXNet 1.9.1: "Invalid Parameter format for block_size expect int but value='2.0'"
    with pytest.raises(mx.base.MXNetError, match='expected an int, got 2.0|3.0'):
        call()


@pytest.mark.parametrize('func', ['zeros', 'ones'])
def test_zeros_ones_refuse_what_mxnet_refuses(func):
    # MXNet 1.9.1: "Operator _zeros inferring shapes failed ... shape : (0, 2)" (also () and
    # negative sizes); "Cannot find argument 'foo'"; empty((0, 2)) is allowed
    fn = getattr(mx.nd, func)
    for shape in [(0, 2), (), (2, -3), (-1,)]:
        with pytest.raises(mx.base.MXNetError, match='positive int dimensions'):
            fn(shape)
    with pytest.raises(mx.base.MXNetError, match="unknown argument 'foo'"):
        fn((2,), foo=1)
    out = mx.nd.full((2,), 7)
    assert fn((2,), out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [float(func == 'ones')] * 2)
    assert fn(np.int64(2)).shape == (2,) and fn([2, 3]).shape == (2, 3)
    assert mx.nd.empty((0, 2)).shape == (0, 2)


def _draw(seed, **kw):
    mx.random.seed(seed, **kw)
    return mx.nd.random.uniform(shape=(3,)).asnumpy()


def test_random_seed_takes_any_int():
    # MXNet 1.9.1 passes the seed as a C int: -1, 2**32, 2**63, 2**64 + 1, True and
    # np.int64 are accepted; 2**32 + 5 draws as 5, 2**32 and 2**63 as 0, 2**64 + 1 as 1
    np.testing.assert_array_equal(_draw(2 ** 32 + 5), _draw(5))
    np.testing.assert_array_equal(_draw(2 ** 32), _draw(0))
    np.testing.assert_array_equal(_draw(2 ** 63), _draw(0))
    np.testing.assert_array_equal(_draw(2 ** 64 + 1), _draw(1))
    np.testing.assert_array_equal(_draw(True), _draw(1))
    np.testing.assert_array_equal(_draw(np.int64(7)), _draw(7, ctx=mx.cpu()))
    assert not np.array_equal(_draw(-1), _draw(1))
    # refused with ValueError('seed_state must be int'), as MXNet
    for bad in (1.5, '3', None):
        with pytest.raises(ValueError, match='seed_state must be int'):
            mx.random.seed(bad)


def test_ndarray_index_and_setitem_errors_as_mxnet():
    # MXNet 1.9.1: a str/float key is a ValueError "NDArray does not support slicing with key
    # a of type <class 'str'>."; a non-array value a TypeError "... does not support
    # assignment with non-array-like object abc of type <class 'str'>"; None assigns NaN;
    # float and bool index arrays index with their integer values
    x = mx.nd.array(np.arange(12).reshape(3, 4))
    for key in ('a', 1.5, (0, 'a'), (0, 1.5), np.float32(1)):
        with pytest.raises(ValueError, match='does not support slicing with key'):
            x[key]
        with pytest.raises(ValueError, match='does not support slicing with key'):
            x[key] = 1
    for value in ('abc', b'ab', {}, 1j):
        with pytest.raises(TypeError, match='non-array-like object'):
            x[0] = value
    np.testing.assert_array_equal(x.asnumpy(), np.arange(12).reshape(3, 4))
    x[0] = None
    assert np.isnan(x.asnumpy()[0]).all()
    y = mx.nd.array(np.arange(12).reshape(3, 4))
    y[np.array([True, False, True])] = 9          # rows 1 and 0, as MXNet
    np.testing.assert_array_equal(y.asnumpy()[:, 0], [9, 9, 8])
    np.testing.assert_array_equal(y[[1.5]].asnumpy(), [[9, 9, 9, 9]])
    np.testing.assert_array_equal(y[np.array([2.7])].asnumpy(), [[8, 9, 10, 11]])


def _proposal_input(batch, seed=0):
    """As tests/golden/make_mxnet_gaps.py (MXNet's test_multi_proposal_op input)."""
    rng = np.random.RandomState(seed)
    feat = (1000 + 15) // 16
    cls = rng.random_sample((batch, 18, feat, feat)).astype(np.float32)
    bbox = rng.random_sample((batch, 36, feat, feat)).astype(np.float32)
    info = np.zeros((batch, 3), np.float32)
    for i in range(batch):
        size = rng.randint(100, feat * 16, size=(2,))
        info[i] = [size[0], size[1], rng.randint(70, 100) / 100.0]
    return cls, bbox, info


def test_multi_proposal_on_mxnets_test_input():
    # 3 images of MXNet's test input, 12000 boxes each into NMS (MXNet 1.9.1's values; its
    # float32 intersections differ from ours in the last bits)
    cls, bbox, info = _proposal_input(3)
    rois, score = mx.nd.contrib.MultiProposal(
        cls_prob=mx.nd.array(cls), bbox_pred=mx.nd.array(bbox), im_info=mx.nd.array(info),
        feature_stride=16, scales=(8, 16, 32), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=12000,
        rpn_post_nms_top_n=30, threshold=0.7, rpn_min_size=16, output_score=True)
    want = GOLD['multi_proposal']['value']
    np.testing.assert_allclose(rois.asnumpy(), want[0], rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(score.asnumpy(), want[1], rtol=1e-6)


def test_mod_values_and_zero_signs():
    # MXNet 1.9.1's float mod (fmod, shifted by b where the signs differ): 0 where b == 0,
    # 0 mod -1 = +0, -0 mod 1 = -0, -2.5 mod -2.5 = -0; the golden file writes each value's
    # repr so that the sign of a zero is compared too
    vals = [0., -0., 1., -1., 2.5, -2.5, 3., np.inf, -np.inf, np.nan]
    a, b = np.meshgrid(np.array(vals, np.float32), np.array(vals, np.float32), indexing='ij')
    a, b = mx.nd.array(a.ravel()), mx.nd.array(b.ravel())
    got = {'_mod': mx.nd._internal._mod(a, b), 'broadcast_mod': mx.nd.broadcast_mod(a, b)}
    for s in (0., -0., 2.5, -2.5, float('inf')):
        v = mx.nd.array(vals)
        got['_mod_scalar(%r)' % s] = mx.nd._internal._mod_scalar(v, scalar=s)
        got['_rmod_scalar(%r)' % s] = mx.nd._internal._rmod_scalar(v, scalar=s)
    want = GOLD['mod']['value']
    assert sorted(got) == sorted(want)
    for k, v in got.items():
        assert [repr(float(x)) for x in v.asnumpy()] == want[k], k


def test_partial_shape_inference_mxnet_completes():
    # what MXNet 1.9.1's infer_shape_partial gives (0 = unknown); symgraph already matched
    x, y = mx.sym.var('x'), mx.sym.var('y')
    assert mx.sym.batch_dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(0, 4, 5)) == \
        ([(0, 3, 4), (0, 4, 5)], [(0, 3, 5)], [])
    c = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, name='c')
    assert c.infer_shape_partial(x=(0, 3, 8, 8)) == \
        ([(0, 3, 8, 8), (4, 3, 3, 3), (4,)], [(0, 4, 6, 6)], [])
    t = mx.sym.elemwise_add(mx.sym.transpose(x, axes=(2, 0, 1)), y)
    assert t.infer_shape_partial(y=(2, 3, 4)) == ([(3, 4, 2), (2, 3, 4)], [(2, 3, 4)], [])
    assert mx.sym.transpose(x).infer_shape_partial(x=(0, 3, 4)) == \
        ([(0, 3, 4)], [(4, 3, 0)], [])
    p = mx.sym.LeakyReLU(x, act_type='prelu', name='p')
    assert p.infer_shape_partial(x=(0, 3, 8, 8)) == ([(0, 3, 8, 8), (3,)], [(0, 3, 8, 8)], [])
    assert p.infer_shape(x=(2, 5)) == ([(2, 5), (5,)], [(2, 5)], [])
