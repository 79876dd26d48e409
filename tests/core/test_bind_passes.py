"""One topological sort and one inference pass (shapes, then types) per bind."""
import numpy as np
import pytest

import symgraph as mx
import symgraph.graph.infer as infer
import symgraph.graph.nodes as nodes
from harness import resnet_block


@pytest.fixture
def counts(monkeypatch):
    """Counts calls of the topological sort (wherever the package imported it) and
    runs of an inference pass, by kind."""
    seen = {'sort': 0, 'shape': 0, 'type': 0}
    topo = nodes.topo_order

    def counted_topo(*a, **k):
        seen['sort'] += 1
        return topo(*a, **k)
    import sys
    for mod in list(sys.modules.values()):
        if getattr(mod, '__name__', '').startswith('symgraph') and \
                getattr(mod, 'topo_order', None) is topo:
            monkeypatch.setattr(mod, 'topo_order', counted_topo)
    run = infer._Pass.run

    def counted_run(self):
        seen[self.kind] += 1
        return run(self)
    monkeypatch.setattr(infer._Pass, 'run', counted_run)
    return seen


def test_simple_bind_sorts_once_and_infers_once(counts):
    net = resnet_block()
    exe = net.simple_bind(mx.cpu(), data=(2, 4, 5, 5))
    assert counts == {'sort': 1, 'shape': 1, 'type': 1}
    exe.forward(is_train=True)
    exe.backward()
    assert counts == {'sort': 1, 'shape': 1, 'type': 1}     # running adds none


def test_bind_sorts_once_and_infers_once(counts):
    net = resnet_block()
    exe = net.simple_bind(mx.cpu(), data=(2, 4, 5, 5))
    counts.update(sort=0, shape=0, type=0)
    net.bind(mx.cpu(), exe.arg_dict, args_grad=exe.grad_dict, aux_states=exe.aux_dict)
    assert counts == {'sort': 1, 'shape': 1, 'type': 1}


def test_simple_bind_with_a_partial_type_dict_infers_types_again_from_the_arrays(counts):
    # 'data' float64 leaves nothing unknown: one pass; a type_dict that leaves inputs
    # unknown (allocated float32) makes the executor infer the types once more
    net = resnet_block()
    exe = net.simple_bind(mx.cpu(), type_dict={'data': 'float64'}, data=(2, 4, 5, 5))
    assert counts == {'sort': 1, 'shape': 1, 'type': 1}
    assert np.dtype(exe.arg_dict['c1_weight'].dtype) == np.float64
    x = mx.sym.var('x')
    y = mx.sym.var('y')
    counts.update(sort=0, shape=0, type=0)
    with pytest.warns(UserWarning, match='Cannot decide type'):
        exe = mx.sym.Group([x * 2, mx.sym.exp(y)]).simple_bind(
            mx.cpu(), type_dict={'x': 'float64'}, x=(2,), y=(3,))
    assert [np.dtype(o.dtype) for o in exe.outputs] == [np.float64, np.float32]
    # simple_bind's pass and the arrays' (the warning is worded from simple_bind's values,
    # without a pass of its own)
    assert counts['shape'] == 1 and counts['type'] == 2
