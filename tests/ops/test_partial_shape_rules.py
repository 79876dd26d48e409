"""where and batch_dot infer nothing from partly known inputs where MXNet 1.9.1's rules
infer nothing (MXNet's test_infer_shape.py test_where_partial_shape and
test_batch_dot_partial_shape), and infer as before once the needed dimensions are known."""
import symgraph as mx


def test_where_waits_for_the_condition():
    w = mx.sym.where(mx.sym.var('cond'), mx.sym.var('x'), mx.sym.var('y'))
    assert w.infer_shape_partial(cond=(0, 2), x=(0, 2), y=(0, 2))[1] == [()]
    assert w.infer_shape_partial(cond=(0,), x=(2, 2), y=(2, 2))[1] == [()]
    with mx.np_shape(True):
        assert w.infer_shape_partial(cond=(-1, 2), x=(-1, 2), y=(-1, 2))[1] == [None]
    assert w.infer_shape(cond=(3, 2), x=(3, 2))[1] == [(3, 2)]
    assert w.infer_shape(cond=(3,), x=(3, 2))[0] == [(3,), (3, 2), (3, 2)]


def test_batch_dot_waits_for_the_inner_dimensions():
    z = mx.sym.batch_dot(mx.sym.var('x'), mx.sym.var('y'))
    assert z.infer_shape_partial(x=(0, 3, 4), y=(0, 4, 5))[1] == [(0, 3, 5)]
    assert z.infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))[1] == [()]
    with mx.np_shape(True):
        assert z.infer_shape_partial(x=(-1, 3, 4), y=(-1, 4, 5))[1] == [(-1, 3, 5)]
        assert z.infer_shape_partial(x=(-1, 3, 4), y=(-1, -1, 5))[1] == [None]
    t = mx.sym.batch_dot(mx.sym.var('x'), mx.sym.var('y'), transpose_a=True)
    assert t.infer_shape(x=(2, 4, 3), y=(2, 4, 5))[1] == [(2, 3, 5)]
