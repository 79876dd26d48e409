"""simple_bind names the arguments whose shapes it cannot infer."""
import pytest

import symgraph as mx
from symgraph.base import BindError


def test_unknown_argument_shapes_are_named():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    net = mx.sym.dot(x, y)
    with pytest.warns(UserWarning):
        with pytest.raises(BindError, match=r"cannot infer the shapes of \['y'\]"):
            net.simple_bind(mx.cpu(), x=(2, 3))
    with pytest.warns(UserWarning):
        with pytest.raises(BindError, match=r"\['x'\]"):
            mx.sym.FullyConnected(x, num_hidden=2, name='fc').simple_bind(mx.cpu(),
                                                                          x=(0, 3))
