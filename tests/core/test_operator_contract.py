"""The operator contract stays small (issue 27): what every operator answers lives on
:class:`symgraph.opdef.Operator`; what a pass asks lives in the passes' rule tables
(:mod:`symgraph.graph.rules`), and operators reach the CPU backend only through the
declared kernel seam, never by calling ``cpu_backend()`` or by keeping per-array state
outside their Steps.
"""
import glob
import os
import re

import pytest

from symgraph import opdef

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
#: the most public members the base class may have (MXNet's per-operator contract:
#: parameters and structure, names, shape and type rules, forward/backward, in-place
#: pairs, what backward needs, no_grad, is_loss, subgraphs, bind)
MAX_PUBLIC = 32


def public_members(cls):
    """Names of the public attributes and methods ``cls`` and its bases below ``object``
    define."""
    names = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        names.update(k for k in vars(klass) if not k.startswith('_'))
    return sorted(names)


def test_public_members_are_counted_as_defined():
    names = public_members(opdef.Operator)
    # the counter sees the contract's core (a counter that saw nothing would pass)
    assert {'forward', 'backward', 'infer_shape', 'infer_type', 'list_arguments',
            'inplace', 'bind', 'no_grad', 'is_loss'} <= set(names)
    assert not any(n.startswith('_') for n in names)


def test_operator_has_at_most_32_public_members():
    names = public_members(opdef.Operator)
    assert len(names) <= MAX_PUBLIC, '%d public members: %s' % (len(names), names)


def test_pass_questions_are_no_operator_members():
    # what only a pass asks is a rule table of the pass (symgraph/graph/rules.py)
    pass_only = {'post_op', 'fuse_post_ops', 'fuse_training_post_op', 'inference_identity',
                 'inference_unused_inputs', 'inference_variant', 'reads_layout',
                 'writes_layout', 'layout_variant', 'out_layout', 'grad_inplace',
                 'grad_same', 'grad_writes_into', 'scratch_bytes',
                 # "which operator runs instead": one question, rules.instead
                 'out_is_first_input', 'for_node', 'specialize'}
    assert not pass_only & set(public_members(opdef.Operator))


def _ops_sources():
    paths = sorted(glob.glob(os.path.join(ROOT, 'ops', '*.py')))
    assert len(paths) > 40                   # the operator modules are found
    out = {}
    for path in paths:
        with open(path) as f:
            out[os.path.basename(path)] = f.read()
    return out


def _uses(pattern):
    return sorted('%s:%d' % (name, i + 1) for name, text in _ops_sources().items()
                  for i, line in enumerate(text.splitlines()) if re.search(pattern, line))


#: names of oneDNN size-limit tables as operators used to keep them (``ONEDNN_MIN``,
#: ``_ONEDNN_ACT``, ``_ADD_RELU_ONEDNN``): the thresholds and routing are the backend's
_SIZE_TABLES = r'\b_?[A-Z_]*ONEDNN[A-Z_]*\s*='


def test_the_grep_finds_what_it_looks_for():
    assert re.search(r'\bcpu_backend\(', 'be = opdef.cpu_backend()')
    assert re.search(r'\bobject\.__setattr__', "object.__setattr__(self, 'x', 1)")
    assert re.search(_SIZE_TABLES, "ONEDNN_MIN = {'forward': (9, 1 << 16)}")
    assert re.search(_SIZE_TABLES, "_ONEDNN_ACT = {'relu': ('relu', 0.0, 1 << 16, 1 << 18)}")
    assert re.search(_SIZE_TABLES, '_ADD_RELU_ONEDNN = (1 << 14, 1 << 18)')
    assert not re.search(_SIZE_TABLES, "kern = cpu_kernel('eltwise_forward')")
    assert _uses(r'\bopdef\b')               # the operators do use the operator API


@pytest.mark.parametrize('pattern, why', [
    (r'\bcpu_backend\(', 'operators ask the declared kernel seam, not the backend object'),
    # (what an operator derives as it is made goes through Operator._fix, in opdef)
    (r'\bobject\.__setattr__', 'operators are immutable: per-bind values live in Steps'),
    (r'\bweakref\b', 'memo of "the same arrays again" lives in Steps, not weak tables'),
    (_SIZE_TABLES, 'size thresholds and routing live inside the CPU backend '
                   '(symgraph/backend/onednn/routing.py), not in operator tables'),
])
def test_ops_do_not(pattern, why):
    found = _uses(pattern)
    assert not found, '%s; found at %s' % (why, ', '.join(found))


def test_the_cpu_rules_are_registered_by_import_symgraph():
    # the package __init__ hands ops/_cpu_rules.py's rows to the passes' tables: each row
    # answers for its class (an instance made without __init__: a row is found by class)
    from symgraph.graph import rules
    from symgraph.ops import _cpu_rules
    assert len(_cpu_rules.RULES) > 30
    for name, cls, fn in _cpu_rules.RULES:
        assert rules.TABLES[name].rule(object.__new__(cls)) is fn, (name, cls.__name__)


def test_a_rule_table_answers_by_class_and_defaults():
    from symgraph.graph import rules
    from symgraph.opdef import get_op
    bn = get_op('BatchNorm')()
    assert rules.POST_OP.ask(bn, 0).kind == 'affine'
    assert rules.POST_OP.ask(bn, 1) is None
    assert rules.POST_OP.ask(get_op('sin')(), 0) is None            # no row: the default
    assert rules.GRAD_SAME.ask(get_op('sin')()) == ()
    # a subclass without a row of its own is answered by its base's row
    assert rules.POST_OP.ask(get_op('BatchNorm_v1')(), 0).kind == 'affine'
    # "which operator runs instead": the operator itself where no rule gives another
    relu = get_op('Activation')(act_type='relu')
    assert rules.instead(relu, 'layout', 'channels_last', [(1, 2, 3, 4)]) is relu
    with pytest.raises(KeyError, match='no rule table'):
        rules.register_rule('no_such_table', type(relu), None)
    with pytest.raises(TypeError, match='keyed by operator class'):
        rules.register_rule('post_op', relu, None)


# ------------------------------------------------------------------ Steps
def test_the_default_step_wraps_forward_and_backward():
    import numpy as np
    import symgraph as mx
    op = opdef.get_op('sin')()
    step = op.bind(mx.cpu(), [(2, 3)], [np.dtype(np.float32)])
    assert type(step) is opdef.Step and step.state is None and step.shareable
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(step.forward([x], False)[0], np.sin(x))
    fn, fast = step.forward_function(False, [x.dtype])
    np.testing.assert_array_equal(fn(x) if fast else fn(x)[0], np.sin(x))
    dy = np.ones_like(x)
    np.testing.assert_array_equal(step.backward([dy], [x], [None], [], [True])[0], np.cos(x))
    bwd = step.backward_function([True])
    np.testing.assert_array_equal(bwd([dy], [x], [None], [])[0], np.cos(x))


def _pool_net():
    import symgraph as mx
    data = mx.sym.var('data')
    kw = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max')
    # two nodes of one operator (equal parameters, one input): two Steps
    return mx.sym.Group([mx.sym.Pooling(data, name='p1', **kw),
                         mx.sym.Pooling(data, name='p2', **kw)])


def test_a_plan_binds_one_step_per_node_and_its_inference_plan_shares_them(monkeypatch):
    import symgraph as mx
    monkeypatch.setenv('SYMGRAPH_INFERENCE_PASSES', 'none')
    exe = _pool_net().simple_bind(mx.cpu(), data=(2, 4, 9, 9))
    plan = exe._plan
    steps = [plan.step(n) for n in plan.steps]
    assert len(steps) == 2 and steps[0] is not steps[1]
    assert steps[0].op == steps[1].op                   # one operator value, two Steps
    assert steps[0].state is not steps[1].state
    monkeypatch.setenv('SYMGRAPH_INFERENCE_PASSES', 'all')
    exe = _pool_net().simple_bind(mx.cpu(), data=(2, 4, 9, 9))
    inference = exe._passes.plan()
    if inference is not None:       # (the passes may change nothing here)
        assert all(inference.step(n) is exe._plan.step(n) for n in inference.steps
                   if id(n) in exe._plan.bound)


def test_a_step_keeps_its_nodes_workspace_and_nothing_else():
    import numpy as np
    import symgraph as mx
    if opdef.cpu_kernel('pool_forward') is None:
        pytest.skip('needs the oneDNN backend')
    from symgraph.backend.onednn import routing
    shape = (2, 8, 64, 64)          # (oneDNN's from the backend routing's sizes)
    assert np.prod(shape) >= routing.POOL_MIN['forward'][1]
    exe = _pool_net().simple_bind(mx.cpu(), data=shape)
    exe.arg_dict['data'][:] = np.random.RandomState(0).uniform(-1, 1, shape)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])
    plan = exe._plan
    kept = [plan.step(n).state for n in plan.steps]
    # each Step holds the workspace of its own node's output only
    assert [len(k) for k in kept] == [1, 1]
    assert not any(k is kept[0] for k in kept[1:])
