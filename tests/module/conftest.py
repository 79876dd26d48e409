"""Small networks and data shared by the module tests."""
import logging

import numpy as np
import pytest

import symgraph as mx


def mlp(num_hidden=8, num_classes=3):
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=num_hidden, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=num_classes, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def fixed_params(symbol, data_shape, seed=0):
    """Deterministic parameters for ``symbol`` bound to ``data_shape``."""
    arg_shapes, _, aux_shapes = symbol.infer_shape(data=data_shape)
    rng = np.random.RandomState(seed)
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s))
            for n, s in zip(symbol.list_arguments(), arg_shapes)
            if n not in ('data', 'softmax_label')}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.0, s))
           for n, s in zip(symbol.list_auxiliary_states(), aux_shapes)}
    return args, aux


@pytest.fixture
def data():
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (20, 5)).astype(np.float32)
    y = rng.randint(0, 3, 20).astype(np.float32)
    return x, y


class LogLines(logging.Handler):
    """Collects the messages logged to the root logger (where Module logs)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append((record.levelname, record.getMessage()))

    def messages(self, level=None):
        return [m for lv, m in self.lines if level is None or lv == level]


@pytest.fixture
def root_log():
    handler = LogLines()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


@pytest.fixture
def net():
    """The MLP (5 -> 8 -> 3, SoftmaxOutput)."""
    return mlp()


@pytest.fixture
def params():
    """``params(symbol, data_shape, seed=0)``: deterministic ``(arg_params, aux_params)``."""
    return fixed_params
