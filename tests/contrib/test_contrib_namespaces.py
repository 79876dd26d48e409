"""mx.contrib.nd / .sym / .ndarray / .symbol as MXNet 1.9.1's mxnet.contrib has them
(test_contrib_operator.py calls mx.contrib.nd.MultiBoxPrior and mx.contrib.sym.box_nms)."""
import numpy as np

import symgraph as mx


def test_contrib_namespaces_are_the_contrib_operators():
    assert mx.contrib.nd is mx.nd.contrib and mx.contrib.ndarray is mx.nd.contrib
    assert mx.contrib.sym is mx.sym.contrib and mx.contrib.symbol is mx.sym.contrib
    x = mx.nd.array(np.random.uniform(size=(1, 3, 4, 4)))
    a = mx.contrib.nd.MultiBoxPrior(x, sizes=[0.75, 0.5], ratios=[1, 2])
    b = mx.nd.contrib.MultiBoxPrior(x, sizes=[0.75, 0.5], ratios=[1, 2])
    assert a.shape == (1, 4 * 4 * 3, 4)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    s = mx.contrib.sym.box_nms(mx.sym.var('data'), overlap_thresh=0.5)
    assert s.list_arguments() == ['data']
    assert '_contrib_box_nms' in s.tojson()
