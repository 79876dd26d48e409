"""Gluon blocks take batches on ``cpu_shared``/``cpu_pinned`` contexts (a DataLoader worker's
batches arrive on ``cpu_shared(0)``): MXNet 1.9.1 looks a Parameter's copy up by the device
type's lowest bit and the device id, so those contexts find the ``cpu(0)`` copy."""
import numpy as np
import pytest

import symgraph as mx


@pytest.mark.parametrize('kind', ['cpu_shared', 'cpu_pinned'])
@pytest.mark.parametrize('hybrid', [False, True])
def test_block_runs_on_shared_and_pinned_batches(kind, hybrid):
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(1.0))
    if hybrid:
        net.hybridize()
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    want = net(mx.nd.array(x)).asnumpy()
    got = net(mx.nd.array(x, ctx=mx.Context(kind, 0))).asnumpy()
    np.testing.assert_array_equal(got, want)
    assert net.weight.data(mx.Context(kind, 0)) is net.weight.data(mx.cpu(0))


def test_other_device_ids_are_still_refused():
    p = mx.gluon.Parameter('w', shape=(2,))
    p.initialize(ctx=mx.cpu(0))
    with pytest.raises(RuntimeError, match='not initialized on context cpu_shared\\(1\\)'):
        p.data(mx.Context('cpu_shared', 1))


def test_repeated_contexts_give_the_last_copy_as_mxnet():
    p = mx.gluon.Parameter('w', shape=(2,))
    p.initialize(ctx=[mx.cpu(0), mx.cpu(0)])
    assert p.data(mx.cpu(0)) is p.list_data()[1]
