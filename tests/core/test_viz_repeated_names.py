"""plot_network of a graph whose nodes share names draws it with MXNet's RuntimeWarning
(MXNet 1.9.1's test_viz.py test_plot_network) instead of refusing it."""
import warnings

import numpy as np
import pytest

import symgraph as mx

pytest.importorskip('graphviz')


def _net():
    net = mx.sym.FullyConnected(data=mx.sym.var('data'), name='fc', num_hidden=128)
    net = mx.sym.Activation(data=net, name='relu1', act_type='relu')
    net = mx.sym.FullyConnected(data=net, name='fc', num_hidden=10)
    return mx.sym.SoftmaxOutput(data=net, name='out')


def test_repeated_names_warn_once_and_the_graph_is_drawn_with_shapes():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        dot = mx.viz.plot_network(_net(), shape={'data': (100, 200)},
                                  dtype={'data': np.float32}, node_attrs={'fixedsize': 'false'})
    assert len(w) == 1 and w[0].category is RuntimeWarning
    assert str(w[0].message).endswith('Repeated names: fc_bias,fc_weight')
    # both FullyConnected nodes are drawn, the edges labelled with the inferred shapes
    assert dot.source.count('label="FullyConnected') == 2
    for edge in ('fc -> data [label="200(float32)"', 'relu1 -> fc [label="128(float32)"',
                 'node7 -> relu1 [label="128(float32)"', 'out -> node7 [label="10(float32)"'):
        assert edge in dot.source, edge
    assert dot.source.count('->') == 5


def test_unique_names_do_not_warn():
    net = mx.sym.FullyConnected(mx.sym.var('data'), name='fc1', num_hidden=4)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        mx.viz.plot_network(net, shape={'data': (2, 3)})
