"""Golden values for ``tests/ops/test_mxnet_gaps.py`` (issue 15's argument and numeric gaps):
what MXNet 1.9.1 computes, accepts or refuses for each case, written to
``data/mxnet_gaps.json``. Python 3.8 compatible.

    cd tests/golden && MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON make_mxnet_gaps.py
"""
import json
import os

import numpy as np
import mxnet as mx

OUT = {}


def record(name, fn):
    """Store ``fn()``'s value (arrays as nested lists) or the error class it raised."""
    try:
        r = fn()
    except mx.base.MXNetError as e:
        OUT[name] = {'error': str(e).strip().splitlines()[-1][:300]}
        return
    if isinstance(r, (list, tuple)):
        r = [x.asnumpy().tolist() if hasattr(x, 'asnumpy') else x for x in r]
    elif hasattr(r, 'asnumpy'):
        r = {'shape': list(r.shape), 'dtype': np.dtype(r.dtype).name,
             'value': r.asnumpy().tolist()}
    OUT[name] = {'value': r}


def _with_grad(op, a, w, **kw):
    a = mx.nd.array(a, dtype='float64')
    a.attach_grad()
    with mx.autograd.record():
        y = op(a, **kw)
        s = (y * mx.nd.array(w, dtype='float64')).sum()
    s.backward()
    return [y, a.grad]


def linalg():
    upper = [[4., 2.], [100., 3.]]          # SPD in its upper triangle only
    w = [[1., 2.], [3., 4.]]
    for lower, a in ((True, np.array(upper).T.tolist()), (False, upper)):
        record('potrf_lower_%s' % lower,
               lambda: _with_grad(mx.nd.linalg.potrf, a, w, lower=lower))
    tri = [[2., 5.], [0.5, 3.]]
    for lower, a in ((True, tri), (False, np.array(tri).T.tolist())):
        record('potri_lower_%s' % lower,
               lambda: _with_grad(mx.nd.linalg.potri, a, w, lower=lower))


POOL_CASES = {   # name: (data shape, Pooling keywords); data is arange
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


def pooling():
    for name, (shape, kw) in POOL_CASES.items():
        data = mx.nd.array(np.arange(np.prod(shape)).reshape(shape))
        record('pool_' + name, lambda: mx.nd.Pooling(data, **kw).asnumpy().tolist())


MAXMIN_A = [1., float('nan'), float('nan'), 2., 2., -0.]
MAXMIN_B = [float('nan'), 1., float('nan'), 2., 3., 0.]


def binary_grads():
    """Forward and both gradients (head gradient 1) of max/min with NaN and tied inputs."""
    for op in ('_maximum', '_minimum', 'broadcast_maximum', 'broadcast_minimum'):
        fn = getattr(mx.sym, op, None) or getattr(mx.sym._internal, op)
        s = fn(mx.sym.var('a'), mx.sym.var('b'))
        a, b = mx.nd.array(MAXMIN_A), mx.nd.array(MAXMIN_B)
        ex = s.bind(mx.cpu(), {'a': a, 'b': b},
                    args_grad={'a': mx.nd.zeros((6,)), 'b': mx.nd.zeros((6,))})
        out = ex.forward(is_train=True)[0]
        ex.backward([mx.nd.ones((6,))])
        OUT['grad_' + op] = {'value':
                             [out.asnumpy().tolist(), ex.grad_dict['a'].asnumpy().tolist(),
                              ex.grad_dict['b'].asnumpy().tolist()]}


def proposal_input(batch, seed=0):
    """MXNet's test_multi_proposal_op input (63 x 63 map, 9 anchors) from RandomState(seed):
    the same generator as bench/bench_proposal.py."""
    rng = np.random.RandomState(seed)
    feat = (1000 + 15) // 16
    cls = rng.random_sample((batch, 18, feat, feat)).astype(np.float32)
    bbox = rng.random_sample((batch, 36, feat, feat)).astype(np.float32)
    info = np.zeros((batch, 3), np.float32)
    for i in range(batch):
        size = rng.randint(100, feat * 16, size=(2,))
        info[i] = [size[0], size[1], rng.randint(70, 100) / 100.0]
    return cls, bbox, info


def multi_proposal():
    cls, bbox, info = proposal_input(3)
    rois, score = mx.nd.contrib.MultiProposal(
        cls_prob=mx.nd.array(cls), bbox_pred=mx.nd.array(bbox), im_info=mx.nd.array(info),
        feature_stride=16, scales=(8, 16, 32), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=12000,
        rpn_post_nms_top_n=30, threshold=0.7, rpn_min_size=16, output_score=True)
    OUT['multi_proposal'] = {'value': [rois.asnumpy().tolist(), score.asnumpy().tolist()]}


MOD_VALS = [0., -0., 1., -1., 2.5, -2.5, 3., float('inf'), float('-inf'), float('nan')]


def mod_signs():
    """mod of every pair of MOD_VALS (float32), zeros written with their sign as strings."""
    a, b = np.meshgrid(np.array(MOD_VALS, np.float32), np.array(MOD_VALS, np.float32),
                       indexing='ij')
    a, b = mx.nd.array(a.ravel()), mx.nd.array(b.ravel())
    res = {'_mod': mx.nd._internal._mod(a, b), 'broadcast_mod': mx.nd.broadcast_mod(a, b)}
    for s in (0., -0., 2.5, -2.5, float('inf')):
        v = mx.nd.array(MOD_VALS)
        res['_mod_scalar(%r)' % s] = mx.nd._internal._mod_scalar(v, scalar=s)
        res['_rmod_scalar(%r)' % s] = mx.nd._internal._rmod_scalar(v, scalar=s)
    OUT['mod'] = {'value': {k: [repr(float(x)) for x in v.asnumpy()] for k, v in res.items()}}


def main():
    linalg()
    mod_signs()
    pooling()
    binary_grads()
    multi_proposal()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'mxnet_gaps.json')
    with open(path, 'w') as f:
        json.dump(OUT, f, sort_keys=True)
        f.write("\n")


if __name__ == '__main__':
    main()
