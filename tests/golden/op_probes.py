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
    return out
