"""SliceChannel fills its input's unknown dimensions from a known piece (MXNet 1.9.1's
test_infer_shape.py test_incomplete_infer_slicechannel)."""
import symgraph as mx


def _args(sym):
    return dict(zip(sym.list_arguments(), sym.infer_shape()[0]))


def test_squeezed_pieces_fill_the_input():
    a = mx.sym.Variable('a', shape=(0, 10))
    b = mx.sym.SliceChannel(data=a, num_outputs=10, axis=1, squeeze_axis=True)
    assert _args(b[1] + mx.sym.Variable('c', shape=(5,)))['a'] == (5, 10)


def test_unsqueezed_pieces_fill_the_input_and_the_split_axis():
    a = mx.sym.Variable('a', shape=(0, 15, 0))
    b = mx.sym.SliceChannel(data=a, num_outputs=3, squeeze_axis=False)
    assert _args(b[1] + mx.sym.Variable('c', shape=(3, 5, 2)))['a'] == (3, 15, 2)
    a = mx.sym.Variable('a', shape=(4, 0))
    b = mx.sym.split(a, num_outputs=2, axis=-1)
    assert _args(b[0] + mx.sym.Variable('c', shape=(4, 3)))['a'] == (4, 6)
