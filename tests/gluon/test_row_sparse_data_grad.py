"""Parameter.row_sparse_data under autograd.record(): the gradient reaches the parameter
(MXNet's row_sparse_data hands out the parameter's own array, the Trainer's store pulling
the rows into it; so does symgraph's), so that a Trainer steps it (MXNet's test_trainer_multi_layer_init
in tests/python/unittest/test_gluon_trainer.py)."""
import numpy as np

import symgraph as mx
from symgraph import gluon


def _param(ctx):
    p = gluon.Parameter('w', shape=(4, 3), stype='row_sparse', grad_stype='row_sparse')
    p.initialize(mx.init.One(), ctx=ctx)
    trainer = gluon.Trainer([p], 'sgd', {'learning_rate': 1.0})
    return p, trainer


def test_rows_kept_and_others_zero():
    p, _ = _param(mx.cpu(0))
    w = p.row_sparse_data(mx.nd.array([2, 0, 2]))
    np.testing.assert_array_equal(w.asnumpy(), [[1] * 3, [0] * 3, [1] * 3, [0] * 3])


def test_gradient_reaches_the_parameter_and_the_trainer_steps_it():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    p, trainer = _param(ctxs)
    data = [mx.nd.array([0, 2], ctx=ctxs[0]), mx.nd.array([1, 2], ctx=ctxs[1])]
    with mx.autograd.record():
        losses = []
        for x in data:
            w = p.row_sparse_data(x)
            losses.append(mx.nd.Embedding(x, w, input_dim=4, output_dim=3).sum())
    for loss in losses:
        loss.backward()
    np.testing.assert_array_equal(p.grad(ctxs[0]).asnumpy(),
                                  [[1] * 3, [0] * 3, [1] * 3, [0] * 3])
    np.testing.assert_array_equal(p.grad(ctxs[1]).asnumpy(),
                                  [[0] * 3, [1] * 3, [1] * 3, [0] * 3])
    trainer.step(1)        # no stale gradient: both copies were written by backward
    # the gradients of both devices summed: rows 0, 1 once, row 2 twice, row 3 never
    want = np.array([[0] * 3, [0] * 3, [-1] * 3, [1] * 3], dtype=np.float32)
    for c in ctxs:      # (a row_sparse Parameter refuses data(), as MXNet's)
        got = p.row_sparse_data(mx.nd.arange(0, 4, ctx=c))
        assert got.stype == 'row_sparse' and got.context == c
        np.testing.assert_array_equal(got.asnumpy(), want)
