"""infer_shape_partial under NumPy-shape semantics (MXNet 1.9.1's test_infer_shape.py):
unknown dimensions read -1 and an unknown shape None; the legacy form outside the scope."""
import symgraph as mx


def test_unknown_shape_is_none_and_unknown_dims_minus_one_under_np_shape():
    ret = mx.sym.sin(mx.sym.var('data'))
    assert ret.infer_shape_partial() == ([()], [()], [])
    with mx.np_shape():
        assert ret.infer_shape_partial() == ([None], [None], [])
    z = mx.sym.dot(mx.sym.var('x'), mx.sym.var('y'))
    assert z.infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    with mx.np_shape(True):
        args, outs, _ = z.infer_shape_partial(x=(-1, 3, 4), y=(4, 5))
        assert outs == [(-1, 3, 5)] and args == [(-1, 3, 4), (4, 5)]
    y = mx.sym.transpose(mx.sym.var('x'), axes=[0, 3, 2, 1])
    with mx.np_shape(True):
        assert y.infer_shape_partial(x=(-1, 3, 224, 224))[1] == [(-1, 224, 224, 3)]
    assert y.infer_shape_partial(x=(0, 3, 224, 224))[1] == [(0, 224, 224, 3)]
