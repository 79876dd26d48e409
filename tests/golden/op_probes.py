"""Operator behaviours at their edges checked against MXNet 1.9.1, written once for both
frameworks (Python 3.8 compatible): ``run(mx)`` returns {probe: JSON-able result}."""
import numpy as np


def _error(fn):
    try:
        fn()
    except Exception:
        return 'error'
    return 'ok'


def run(mx):
    out = {}
    a = mx.nd.array([[3., 1, 2], [0, 5, 4]])
    # an explicit None for a parameter is kept (axis=None flattens)
    out['axis_none'] = [list(mx.nd.argsort(a, axis=None).shape),
                        mx.nd.topk(a, axis=None, k=2).asnumpy().tolist(),
                        mx.nd.sort(a, axis=None).asnumpy().tolist()]
    x = mx.nd.array(np.arange(6.).reshape(2, 3))
    out['slice_axis_end_none'] = mx.nd.slice_axis(x, axis=1, begin=1, end=None).asnumpy().tolist()
    # BilinearResize2D with a single output row or column
    r = mx.nd.array(np.arange(24.).reshape(1, 1, 6, 4))
    out['resize_to_one'] = [
        mx.nd.contrib.BilinearResize2D(r, height=4, width=1, align_corners=False)
        .asnumpy().ravel().tolist(),
        mx.nd.contrib.BilinearResize2D(r, height=1, width=1, align_corners=False)
        .asnumpy().ravel().tolist()]
    # one_hot values cast as C casts them
    out['one_hot_wrap'] = [
        mx.nd.one_hot(mx.nd.array([0, 1]), depth=2, on_value=-1, dtype='uint8')
        .asnumpy().ravel().tolist(),
        mx.nd.one_hot(mx.nd.array([0, 1]), depth=2, on_value=300, dtype='uint8')
        .asnumpy().ravel().tolist()]
    # inputs MXNet refuses
    out['refused'] = [
        _error(lambda: mx.nd.softmax(mx.nd.array([[1, 2, 3]], dtype='int32')).asnumpy()),
        _error(lambda: mx.nd.log_softmax(mx.nd.array([[1, 2]], dtype='uint8')).asnumpy()),
        _error(lambda: mx.nd.UpSampling(mx.nd.ones((1, 2, 3)), scale=2,
                                        sample_type='nearest').asnumpy()),
        _error(lambda: mx.nd.LRN(mx.nd.ones((1, 3, 2, 2)), nsize=5).asnumpy()),
        _error(lambda: mx.nd.contrib.box_nms(mx.nd.ones((1, 6)), id_index=1,
                                             score_index=1).asnumpy()),
        _error(lambda: mx.nd.one_hot(mx.nd.array([0]), depth=-1).asnumpy())]
    # bipartite matching: ties, thresholds both ways, topk (MXNet stops after topk + 1)
    rng = np.random.RandomState(0)
    out['bipartite_matching'] = []
    for data, kw in [(np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]]), dict(threshold=0.35)),
                     (np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]]),
                      dict(threshold=0.4, is_ascend=True)),
                     (np.full((2, 3), 0.5), dict(threshold=0.1)),
                     (np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]]),
                      dict(threshold=0.0, topk=1)),
                     (rng.rand(3, 5, 3).round(1), dict(threshold=0.2, is_ascend=True, topk=2))]:
        rows, cols = mx.nd.contrib.bipartite_matching(mx.nd.array(data), **kw)
        out['bipartite_matching'].append([rows.asnumpy().tolist(), cols.asnumpy().tolist()])
    # numerics: MakeLoss 'batch' counts every axis but the last, the sigmoid tail keeps
    # relative precision, norm does not overflow, float16 GELU in float32, clamped
    # cross-entropy, clip with a_min > a_max, smooth_l1 with scalar 0
    grads = []
    for shape in ((5,), (4, 3, 2), (2, 3, 4, 5)):
        v = mx.sym.var('v')
        exe = mx.sym.MakeLoss(v, normalization='batch').simple_bind(mx.cpu(), v=shape)
        exe.forward(is_train=True)
        exe.backward()
        grads.append(float(exe.grad_dict['v'].asnumpy().ravel()[0]))
    out['makeloss_batch'] = [round(g, 6) for g in grads]
    t = mx.nd.array([-20., -30., -50., 3.])
    out['sigmoid_tail'] = ['%.4e' % v for v in mx.nd.Activation(t, act_type='sigmoid')
                           .asnumpy().tolist()]
    out['sigmoid_tail_f16'] = mx.nd.Activation(mx.nd.array([-10., -8.], dtype='float16'),
                                               act_type='sigmoid').asnumpy().tolist()
    out['norm_range'] = ['%.4e' % v for v in mx.nd.norm(
        mx.nd.array([[3e20, 4e20], [3e-25, 4e-25]]), axis=1).asnumpy().tolist()]
    out['gelu_f16'] = mx.nd.LeakyReLU(mx.nd.array([-5., -4., -3., 1.], dtype='float16'),
                                      act_type='gelu').asnumpy().tolist()
    out['softmax_ce_clamp'] = round(float(mx.nd.softmax_cross_entropy(
        mx.nd.array([[1e3, 0, -1e3], [0, 0, 0], [1, 2, 3]]),
        mx.nd.array([1, 1, 1])).asnumpy()[0]), 4)
    out['clip_swapped'] = mx.nd.clip(mx.nd.array([-3, -1, -.5, 0, .5, 1, 3]), a_min=1,
                                     a_max=-1).asnumpy().tolist()
    out['smooth_l1_zero'] = mx.nd.smooth_l1(mx.nd.array([-2., 0.5]), scalar=0).asnumpy().tolist()
    e = mx.sym.Embedding(mx.sym.var('d'), mx.sym.var('w'), input_dim=5, output_dim=3)
    out['embedding_weight_type'] = [np.dtype(t).name for t in
                                    e.infer_type(d='float32', w='float16')[1]]
    # update operators: sign of NaN is 0; contrib.adamw_update takes a number for
    # rescale_grad; a wrong out= is refused
    w = mx.nd.ones(6)
    g = mx.nd.array([np.nan, np.inf, -np.inf, 0, -0., 1])
    out['signsgd_nan'] = mx.nd.signsgd_update(w, g, lr=.1).asnumpy().tolist()
    w, m, v = mx.nd.ones(3), mx.nd.zeros(3), mx.nd.zeros(3)
    mx.nd.contrib.adamw_update(w, mx.nd.array([.5, -.5, 1]), m, v, rescale_grad=0.5, lr=0.1,
                               eta=1.0, wd=0.01, out=w)
    out['adamw_number_rescale'] = [round(x, 5) for x in
                                   w.asnumpy().tolist() + m.asnumpy().tolist()]
    out['update_bad_out'] = [
        _error(lambda: mx.nd.sgd_update(mx.nd.ones((2,)), mx.nd.ones((2,)), lr=.1,
                                        out=mx.nd.zeros((3, 2)))),
        _error(lambda: mx.nd.sgd_update(mx.nd.ones((2,)), mx.nd.ones((2,)), lr=.1,
                                        out=mx.nd.zeros((2,), dtype='float16')))]
    # integer data where MXNet wants floating point
    i = mx.nd.array([1, 2], dtype='int32')
    out['float_only'] = [_error(lambda: mx.nd.Activation(i, act_type='relu').asnumpy()),
                         _error(lambda: mx.nd.LeakyReLU(i).asnumpy()),
                         _error(lambda: mx.nd.LinearRegressionOutput(i, i).asnumpy())]
    # nag_mom_update with out=weight: mom's wd term reads the new weight, as MXNet's kernel
    w, g, mom = mx.nd.array([1, 2]), mx.nd.array([.5, -.5]), mx.nd.array([.1, .1])
    steps = []
    for _ in range(2):
        mx.nd.nag_mom_update(w, g, mom, lr=.1, momentum=.9, wd=.1, out=w)
        steps.append([round(x, 5) for x in w.asnumpy().tolist() + mom.asnumpy().tolist()])
    out['nag_out_is_weight'] = steps
    return out
