"""Seeing a graph: MXNet's ``mx.viz`` (``plot_network``, ``print_summary``) and more.

* :func:`plot_network` draws a ``graphviz.Digraph`` styled as MXNet's, and groups nodes
  into clusters by name prefix (``stage1_unit1_conv1`` sits in cluster ``stage1`` /
  ``unit1``); clusters can be collapsed into single nodes for very large graphs.
* :func:`print_summary` prints MXNet's layer table; :func:`summary` returns its rows.
* :func:`to_networkx` gives a ``networkx.DiGraph`` for graph algorithms.
* :func:`repr_svg` is the SVG a Symbol shows in Jupyter.
* :func:`dot_program` is the program that renders: the system Graphviz ``dot``, else the
  ``graphviz-pure`` program of ``pip install "symgraph[render]"``.

graphviz and networkx are imported inside the functions that need them, so the core
imports without them.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import sysconfig
import warnings

import numpy as np

from .graph.infer import infer_shapes, infer_types, shape_complete
from .base import ArgumentError, ArgumentTypeError
# mx.viz.diff (two graphs compared) and mx.viz.plot_memory (an executor's storage plan)
from .viz import diff, plot_memory  # noqa: F401

__all__ = ['plot_network', 'print_summary', 'summary', 'to_networkx', 'repr_svg',
           'clusters', 'dot_program', 'RENDER_HINT']

log = logging.getLogger(__name__)

#: MXNet's colour map (ColorBrewer Set3), indexed by operator family below
_COLORS = ('#8dd3c7', '#fb8072', '#ffffb3', '#bebada', '#80b1d3', '#fdb462', '#b3de69',
           '#fccde5')
_FAMILY = {}
for _k, _ops in ((1, 'Convolution Deconvolution FullyConnected Embedding'),
                 (2, 'Activation LeakyReLU relu sigmoid tanh softsign'),
                 (3, 'BatchNorm InstanceNorm LayerNorm L2Normalization LRN'),
                 (4, 'Pooling ROIPooling UpSampling'),
                 (5, 'Concat Flatten Reshape SliceChannel transpose expand_dims squeeze '
                     'stack SwapAxis'),
                 (6, 'Softmax SoftmaxOutput SoftmaxActivation softmax log_softmax '
                     'LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput '
                     'MakeLoss make_loss')):
    _FAMILY.update(dict.fromkeys(_ops.split(), _k))

#: Variable names MXNet's plot_network hides as parameters
_WEIGHT_SUFFIXES = ('_weight', '_bias', '_beta', '_gamma', '_moving_var', '_moving_mean',
                    '_running_var', '_running_mean')
#: operator arguments that hold trainable parameters
_PARAM_ARGS = frozenset(('weight', 'bias', 'gamma', 'beta', 'parameters'))


# ---------------------------------------------------------------------- graph facts
class _Facts:
    """Nodes in MXNet's order with what the visualisations need about them."""

    def __init__(self, symbol, shape=None, dtype=None, partial=False, check_names=True):
        # (the Symbol's graph is all this module reads; it never imports symbol/,
        # which offers these functions as methods)
        try:
            graph = symbol.graph(check_names=check_names)
        except (AttributeError, TypeError):
            raise ArgumentTypeError('symbol must be a Symbol, got %s' % type(symbol).__name__) \
                from None
        self.symbol, self.graph, self.order = symbol, graph, graph.order
        self.index = {id(n): k for k, n in enumerate(self.order)}
        self.aux_ids = {id(n) for n in graph.aux_states}
        self.param_ids = self._only_params()
        self.shapes = self._infer(shape, 'shape', partial) if shape is not None else {}
        self.dtypes = self._infer(dtype, 'type', partial) if dtype is not None else {}

    def _infer(self, given, kind, partial):
        # the symbol's own keyword checks (unknown names raise), then one inference pass
        # that never warns: MXNet's plot/summary raise ValueError instead
        known = self.symbol.input_values(kind, given, self.graph)
        arg_nodes, aux_nodes = self.graph.arguments, self.graph.aux_states
        values = (infer_shapes if kind == 'shape' else infer_types)(self.order, known)
        if not partial:
            ok = shape_complete if kind == 'shape' else (lambda t: t is not None)
            missing = [n.name for n in arg_nodes + aux_nodes
                       if not ok(values.get((self.index[id(n)], 0)))]
            if missing:
                raise ArgumentError('Input %s is incomplete: cannot infer %s; give them too'
                                    % (kind, ', '.join(missing)))
        return values

    def shape(self, node, i=0):
        s = self.shapes.get((self.index[id(node)], i))
        return tuple(s) if s is not None else None

    def dtype(self, node, i=0):
        t = self.dtypes.get((self.index[id(node)], i))
        return None if t is None else np.dtype(t)

    def arg_name(self, node, j):
        names = node.op.list_arguments() + node.op.list_auxiliary_states()
        return names[j] if j < len(names) else str(j)

    def param_inputs(self, node):
        """The trainable parameter Variables an operator reads (weights, biases...)."""
        if node.op is None:
            return []
        n_args = len(node.op.list_arguments())
        out = []
        for j, (src, _) in enumerate(node.inputs[:n_args]):
            if src.op is None and id(src) not in self.aux_ids and (
                    self.arg_name(node, j) in _PARAM_ARGS
                    or src.name.endswith(_WEIGHT_SUFFIXES[:4])):
                out.append(src)
        return out

    def is_hidden_weight(self, node):
        """A Variable drawn only when ``hide_weights=False``: a parameter or an aux state."""
        if node.op is not None:
            return False
        return node.name.endswith(_WEIGHT_SUFFIXES) or id(node) in self.aux_ids or \
            id(node) in self.param_ids

    def _only_params(self):
        """ids of Variables read only as parameters (never as data by some layer)."""
        params, data = set(), set()
        for n in self.order:
            if n.op is not None:
                mine = {id(v) for v in self.param_inputs(n)}
                params |= mine
                data.update(id(s) for s, _ in n.inputs if id(s) not in mine)
        return params - data


def _size(shape):
    return int(np.prod(shape)) if shape_complete(shape) else 0


def _xjoin(shape):
    return 'x'.join(str(d) for d in shape)


# ---------------------------------------------------------------------- summary
def summary(symbol, shape=None, count='mxnet'):
    """The rows of :func:`print_summary` as data.

    Parameters
    ----------
    symbol : Symbol
    shape : dict of str to tuple, optional
        input shapes; without them output shapes are blank and weight counts partial.
    count : {'mxnet', 'all'}
        ``'mxnet'`` counts parameters as MXNet 1.9.1's ``print_summary`` does: only
        Convolution, FullyConnected, BatchNorm (``2 x channels``) and Embedding, a
        FullyConnected layer as ``(input channels + 1) x num_hidden`` even when it
        flattens a 4-D input, and shared weights once per use. Where MXNet's own lookups
        go wrong, symgraph counts what is there: the shape of a multi-output layer
        (SliceChannel) and the input channels of a layer reading its second output (MXNet
        shows no shape and counts 0 channels), ``no_bias=1`` (MXNet recognises only
        ``True``), BatchNorm over ``axis=-1`` (MXNet counts axis 1). ``'all'`` counts every
        trainable parameter Variable (Deconvolution, PReLU, LayerNorm... included) from
        the inferred shapes, each Variable once.

    Returns
    -------
    rows : list of dict
        one per printed layer: ``name``, ``op`` (``'null'`` for the input),
        ``out_shape`` (shape without the batch axis, or ``()``), ``params`` (int) and
        ``previous`` (list of names of the layers it reads).
    total : int
        the total number of parameters.
    """
    if count not in ('mxnet', 'all'):
        raise ArgumentError("count must be 'mxnet' or 'all', got %r" % (count,))
    if shape is None and count == 'all':
        # no input shapes: still use what the graph knows (``__shape__`` attributes)
        facts = _Facts(symbol, {}, partial=True)
    else:
        facts = _Facts(symbol, shape)
    order = facts.order
    head, head_out = symbol.output_entries[0]
    # MXNet tests `input index in set(heads[0])`, i.e. {head node, its output index, 0}:
    # that is how the first node (the data Variable) shows up as a previous layer
    heads = {facts.index[id(head)], head_out, 0}
    rows, total, counted = [], 0, set()
    for i, node in enumerate(order):
        if node.op is None and i > 0:
            continue
        prev, pre_filter = [], 0
        for src, k in node.inputs:
            if src.op is not None or facts.index[id(src)] in heads:
                prev.append(src.name)
                s = facts.shape(src, k)
                if s is not None and len(s) > 1:
                    pre_filter += s[1]
        if count == 'mxnet':
            n_params = _mxnet_params(facts, node, pre_filter)
        else:
            fresh = [v for v in facts.param_inputs(node) if id(v) not in counted]
            counted.update(id(v) for v in fresh)
            n_params = sum(_size(facts.shape(v)) for v in fresh)
        total += n_params
        rows.append({'name': node.name, 'op': 'null' if node.op is None else node.op.name,
                     'out_shape': _summary_shape(facts, node), 'params': n_params,
                     'previous': prev})
    return rows, total


def _summary_shape(facts, node):
    """Output shape without the batch axis: the output named 'output', else the first."""
    if node.op is None:
        s = facts.shape(node)
    else:
        names = node.op.list_outputs()[:node.num_visible_outputs()]
        s = facts.shape(node, names.index('output') if 'output' in names else 0)
    return tuple(s[1:]) if shape_complete(s) else ()


def _mxnet_params(facts, node, pre_filter):
    """MXNet 1.9.1's per-layer count (``mx.viz.print_summary``)."""
    op = node.op
    if op is None:
        return 0
    if op.name == 'Convolution':
        # MXNet: in_channels (of the layers feeding it) * num_filter / num_group * kernel;
        # the same as the inferred weight size whenever the input feeds it
        weight = _size(facts.shape(node.inputs[1][0])) if pre_filter else 0
        return weight + (0 if op.no_bias else op.num_filter)
    if op.name == 'FullyConnected':
        # MXNet counts only dimension 1 of the input, even when the layer flattens more
        return (pre_filter + (0 if op.no_bias else 1)) * op.num_hidden
    if op.name == 'BatchNorm':
        return sum(_size(facts.shape(v)) for v in facts.param_inputs(node))
    if op.name == 'Embedding':
        return op.input_dim * op.output_dim
    return 0


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.),
                  count='mxnet'):
    """Print the layer table of a symbol: name and type, output shape, parameters, inputs.

    The layout and the totals are MXNet 1.9.1's.

    Parameters
    ----------
    symbol : Symbol
    shape : dict of str to tuple, optional
        input shapes, e.g. ``{'data': (1, 3, 224, 224)}``.
    line_length : int
        width of the table.
    positions : sequence of 4 numbers
        where each column ends: fractions of ``line_length`` if the last is <= 1,
        else absolute columns.
    count : {'mxnet', 'all'}
        how parameters are counted, see :func:`summary`.

    Examples
    --------
    >>> import symgraph as mx
    >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    >>> mx.viz.print_summary(fc, shape={'data': (2, 5)}, line_length=80)
    ... # doctest: +NORMALIZE_WHITESPACE
    ________________________________________________________________________________
    Layer (type)                       Output Shape    Param # Previous Layer
    ================================================================================
    data(null)                         5               0
    ________________________________________________________________________________
    fc(FullyConnected)                 3               18      data
    ================================================================================
    Total params: 18
    ________________________________________________________________________________
    """
    rows, total = summary(symbol, shape, count)
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def print_row(fields):
        # MXNet's layout: each field cut at its column end, then padded to it
        line = ''
        for field, end in zip(fields, positions):
            line = (line + str(field))[:end]
            line += ' ' * (end - len(line))
        print(line)
    print('_' * line_length)
    print_row(['Layer (type)', 'Output Shape', 'Param #', 'Previous Layer'])
    print('=' * line_length)
    for i, r in enumerate(rows):
        first = r['previous'][0] if r['previous'] else ''
        print_row(['%s(%s)' % (r['name'], r['op']), _xjoin(r['out_shape']), r['params'],
                   first])
        for p in r['previous'][1:]:
            print_row(['', '', '', p])
        print(('=' if i == len(rows) - 1 else '_') * line_length)
    print('Total params: %d' % total)
    print('_' * line_length)
    sys.stdout.flush()


# ---------------------------------------------------------------------- clusters
def _name_path(name):
    """Name tokens that define clusters: ``resnetv10_stage1_conv0_fwd`` ->
    ``('resnetv10', 'stage1', 'conv0')`` (Gluon's ``_fwd`` suffix dropped)."""
    toks = [t for t in name.split('_') if t]
    if len(toks) > 1 and toks[-1] == 'fwd':
        toks = toks[:-1]
    return tuple(toks)


def clusters(symbol, min_size=2):
    """Groups of operator nodes sharing a name prefix, as drawn by :func:`plot_network`.

    A prefix (whole ``_``-separated tokens) becomes a cluster when at least ``min_size``
    operators carry it, they are connected to each other, and they are fewer than those
    of the enclosing cluster (so a prefix shared by the whole graph, such as Gluon's
    ``resnetv10_``, makes none).

    Returns
    -------
    dict
        prefix tuple -> ``{'label': str, 'parent': prefix tuple or None, 'depth': int,
        'members': list of node names}``.

    >>> import symgraph as mx
    >>> x = mx.sym.var('data')
    >>> for n in ('stem', 's1_u1_a', 's1_u1_b', 's1_u2_a', 's1_u2_b'):
    ...     x = mx.sym.relu(x, name=n)
    >>> sorted('_'.join(p) for p in clusters(x))
    ['s1', 's1_u1', 's1_u2']
    """
    return _clusters([n for n in symbol.graph(check_names=False).order if n.op is not None],
                     min_size)


def _common_prefix(ops):
    """The name tokens every operator's name starts with (Gluon's ``resnetv10``)."""
    paths = [_name_path(n.name)[:-1] for n in ops]
    common = paths[0] if paths else ()
    for p in paths[1:]:
        k = 0
        while k < min(len(p), len(common)) and p[k] == common[k]:
            k += 1
        common = common[:k]
    return common


def _clusters(ops, min_size=2):
    members = {}
    for n in ops:
        path = _name_path(n.name)
        for k in range(1, len(path)):
            members.setdefault(path[:k], []).append(n)
    everyone = len(ops)
    common = _common_prefix(ops)
    formed = {}
    for prefix in sorted(members, key=len):
        group = members[prefix]
        parent = next((prefix[:k] for k in range(len(prefix) - 1, 0, -1)
                       if prefix[:k] in formed), None)
        parent_size = len(formed[parent]['members']) if parent else everyone
        if len(group) < min_size or len(group) >= parent_size or not _connected(group):
            continue
        base = parent if parent else common
        formed[prefix] = {'label': '_'.join(prefix[len(base):]), 'parent': parent,
                          'depth': formed[parent]['depth'] + 1 if parent else 1,
                          'members': [n.name for n in group]}
    return formed


def _connected(group):
    """Whether operator nodes form one weakly connected piece (edges between them)."""
    ids = {id(n): n for n in group}
    root = {k: k for k in ids}

    def find(k):
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k
    for n in group:
        for src, _ in n.inputs:
            if id(src) in ids:
                root[find(id(src))] = find(id(n))
    return len({find(k) for k in ids}) == 1


def _deepest(path, formed):
    for k in range(len(path), 0, -1):
        if path[:k] in formed:
            return path[:k]
    return None


# ---------------------------------------------------------------------- plot
def _label(node):
    """MXNet's node label: the operator and its essential parameters."""
    op, attrs = node.op, node.attrs
    nums = lambda key: 'x'.join(re.findall(r'\d+', attrs[key]))  # noqa: E731
    name = op.name
    if name in ('Convolution', 'Deconvolution'):
        return '%s\n%s/%s, %s' % (name, nums('kernel'),
                                  nums('stride') if 'stride' in attrs else '1',
                                  op.num_filter)
    if name == 'FullyConnected':
        return 'FullyConnected\n%s' % op.num_hidden
    if name in ('Activation', 'LeakyReLU'):
        return '%s\n%s' % (name, op.act_type)
    if name == 'Pooling':
        if op.global_pool:
            return 'Pooling\n%s, global' % op.pool_type
        return 'Pooling\n%s, %s/%s' % (op.pool_type,
                                       nums('kernel') if 'kernel' in attrs else '[]',
                                       nums('stride') if 'stride' in attrs else '1')
    if name == 'Embedding':
        return 'Embedding\n%sx%s' % (op.input_dim, op.output_dim)
    if name == 'Dropout':
        return 'Dropout\np=%g' % op.p
    if name == 'Custom':
        return attrs.get('op_type', 'Custom')
    return node.name


def _edge_label(facts, src, k, draw_shape, draw_type):
    label = ''
    if draw_shape:
        s = facts.shape(src, k)
        label = '?' if s is None else _xjoin(s[1:])
    if draw_type:
        t = facts.dtype(src, k)
        label += '(%s)' % ('?' if t is None else t.name)
    return label


#: the pip-installable dot-compatible program (a static build of a Graphviz port: svg, png,
#: jpeg, no pdf) that the ``render`` extra installs
BUNDLED_DOT = 'graphviz-pure'
#: what to install when no program renders
RENDER_HINT = ('pip install "symgraph[render]" (graphviz-pure: svg, png), or the system '
               'Graphviz (e.g. apt-get install graphviz)')


_POINTED = []     # the program this module pointed the graphviz package at, if any


def _graphviz_dot_command():
    try:
        from graphviz.backend import dot_command
    except ImportError:
        return None
    return dot_command


def dot_program():
    """The program that renders graphs: the system Graphviz ``dot`` when it is on PATH,
    else ``graphviz-pure`` (installed by ``pip install "symgraph[render]"``, found on PATH
    or beside this Python's scripts), else None.

    With ``graphviz-pure`` the ``graphviz`` package is pointed at it (its
    ``backend.dot_command.DOT_BINARY``, when still the default ``dot``), so that
    ``render()``, ``pipe()`` and ``view()`` of :func:`plot_network`'s Digraph, Jupyter's
    picture and ``python -m symgraph plot`` work without a system Graphviz; once a ``dot``
    is on PATH again it is given back to that.
    """
    import pathlib
    dot_command = _graphviz_dot_command()
    found = shutil.which('dot')
    if found:
        if dot_command is not None and _POINTED and dot_command.DOT_BINARY == _POINTED[-1]:
            dot_command.DOT_BINARY = pathlib.Path('dot')
        return found
    exe = BUNDLED_DOT + ('.exe' if sys.platform.startswith('win') else '')
    found = shutil.which(BUNDLED_DOT) or next(
        (p for p in (os.path.join(sysconfig.get_path('scripts'), exe),
                     os.path.join(os.path.dirname(sys.executable), exe))
         if os.path.isfile(p) and os.access(p, os.X_OK)), None)
    if found is None or dot_command is None:
        return found
    if str(dot_command.DOT_BINARY) == 'dot' or (_POINTED and
                                                 dot_command.DOT_BINARY == _POINTED[-1]):
        dot_command.DOT_BINARY = pathlib.Path(found)
        _POINTED[:] = [dot_command.DOT_BINARY]
    return found


def plot_network(symbol, title='plot', save_format='pdf', shape=None, dtype=None,
                 node_attrs={}, hide_weights=True, cluster=True, collapse=None):
    """Draw the graph of ``symbol`` as a ``graphviz.Digraph`` styled as MXNet's.

    Render it with ``.render()``, ``.pipe(format='svg')`` or ``.view()``: that needs the
    Graphviz ``dot`` program, or ``pip install "symgraph[render]"`` (see
    :func:`dot_program`; it writes svg and png, not pdf).

    Parameters
    ----------
    symbol : Symbol
    title : str
        the graph's name (and file name for ``render``).
    save_format : str
        default output format of ``render``: 'pdf', 'svg', 'png'...
    shape : dict of str to tuple, optional
        input shapes; edges are then labelled with the tensor shapes (batch axis left
        out). ``ValueError`` if they do not determine every shape.
    dtype : dict of str to dtype, optional
        input dtypes; edges then also show the dtype, e.g. ``(float32)``.
    node_attrs : dict
        Graphviz node attributes overriding the defaults (e.g. ``{'fixedsize': 'false'}``).
    hide_weights : bool
        hide parameter and auxiliary-state Variables (weights, biases, moving stats).
    cluster : bool
        group nodes into boxes by name prefix (see :func:`clusters`); graphs without
        shared prefixes are unaffected.
    collapse : int, True or iterable of str, optional
        draw clusters as single nodes: every cluster at this depth (``True``: 1, the
        outermost), or the clusters named by their full prefix (``'stage1_unit1'``).

    Returns
    -------
    graphviz.Digraph

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var('data'), name='fc1', num_hidden=128)
    >>> net = mx.sym.Activation(net, name='relu1', act_type='relu')
    >>> dot = mx.viz.plot_network(net, shape={'data': (100, 200)})
    >>> print(dot.source.count('->'))
    2
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise ImportError('Draw network requires graphviz library (pip install graphviz) '
                          'and the Graphviz dot program') from None
    dot_program()       # render() and pipe() use graphviz-pure when there is no dot
    # MXNet draws a graph whose Variables share names and warns (its test_viz.py checks
    # it); operator nodes may share names in symgraph without any ambiguity
    names = [n.name for n in symbol.graph(check_names=False).order if n.op is None]
    repeated = sorted({n for i, n in enumerate(names) if n in names[:i]})
    if repeated:
        warnings.warn('There are multiple variables with the same name in your graph, this '
                      'may result in cyclic graph. Repeated names: ' + ','.join(repeated),
                      RuntimeWarning, stacklevel=2)
    facts = _Facts(symbol, shape, dtype, check_names=not repeated)
    order = facts.order
    node_attr = {'shape': 'box', 'fixedsize': 'true', 'width': '1.3', 'height': '0.8034',
                 'style': 'filled'}
    node_attr.update(node_attrs)
    dot = Digraph(name=title, format=save_format)
    ids = _node_ids(order)
    shown = [n for n in order if not (hide_weights and facts.is_hidden_weight(n))]
    ops = [n for n in order if n.op is not None]
    formed = _clusters(ops) if cluster else {}
    collapsed = _collapsed(formed, collapse)
    # a node sits in the deepest cluster among its name's proper prefixes (weights shown
    # with hide_weights=False join their layer's cluster); a collapsed cluster's node
    # stands for everything inside it
    where = {id(n): _deepest(_name_path(n.name)[:-1], formed) for n in shown}
    rep = {}
    for n in shown:
        top = _collapsed_ancestor(where[id(n)], formed, collapsed)
        rep[id(n)] = _rep_id(top) if top else ids[id(n)]

    bodies = {p: [] for p in formed}        # cluster -> [(graphviz id, label, attrs)]
    bodies[None] = []
    for p in collapsed:
        c = formed[p]
        attrs = dict(node_attr, shape='box3d', fixedsize='false', fillcolor='#d9d9d9',
                     tooltip='\n'.join(c['members']))
        bodies[c['parent']].append(
            (_rep_id(p), '%s\n%d operators' % (c['label'], len(c['members'])), attrs))
    common = _common_prefix(ops) if cluster else ()
    for n in shown:
        if rep[id(n)] == ids[id(n)]:
            label, attrs = _node_style(n, facts, node_attr, node_attrs,
                                       where[id(n)] or common)
            bodies[where[id(n)]].append((ids[id(n)], label, attrs))
    _emit(dot, None, formed, collapsed, bodies)

    # MXNet's edges run from a layer to its input with dir=back: inputs at the bottom
    seen = set()
    for n in ops:
        if id(n) not in rep:
            continue
        inputs = n.inputs[:1] if n.op.name == '_contrib_BilinearResize2D' else n.inputs
        for src, k in inputs:
            key = (rep[id(n)], rep.get(id(src)), id(src), k)
            if key[1] is None or key[0] == key[1] or key in seen:
                continue
            seen.add(key)
            dot.edge(key[0], key[1], dir='back', arrowtail='open',
                     label=_edge_label(facts, src, k, shape is not None, dtype is not None))
    return dot


def _node_style(n, facts, node_attr, user_attrs, strip):
    """Label and Graphviz attributes of one drawn node."""
    attr = dict(node_attr)
    if n.op is None:
        attr['shape'] = 'oval'
        attr['fillcolor'] = _COLORS[0]
        label = n.name
    else:
        attr['fillcolor'] = _COLORS[_FAMILY.get(n.op.name, 7)]
        label = _label(n)
    path = _name_path(n.name)
    if label == n.name and strip and path[:len(strip)] == strip:
        # inside a cluster the cluster's prefix is said by its box: keep the rest
        label = '_'.join(path[len(strip):]) or n.name
    if 'fixedsize' not in user_attrs and max(map(len, label.split('\n'))) > 11:
        attr['fixedsize'] = 'false'     # let long names widen the box, not overflow it
    attr['tooltip'] = n.name if n.op is None else '%s (%s)' % (n.name, n.op.name)
    return label, attr


def _rep_id(prefix):
    return 'group#' + '_'.join(prefix)


def _node_ids(order):
    """Graphviz node ids: the node names (as MXNet), made unique and colon-free."""
    ids, used = {}, set()
    for k, n in enumerate(order):
        name = n.name
        if ':' in name or name in used or name.startswith('group#'):
            name = 'node%d' % k
        used.add(name)
        ids[id(n)] = name
    return ids


def _collapsed(formed, collapse):
    if collapse is None or collapse is False:
        return set()
    if collapse is True:
        collapse = 1
    if isinstance(collapse, int):
        return {p for p, c in formed.items() if c['depth'] == collapse}
    wanted = {collapse} if isinstance(collapse, str) else set(collapse)
    picked = {p for p in formed if '_'.join(p) in wanted}
    unknown = wanted - {'_'.join(p) for p in picked}
    if unknown:
        raise ArgumentError('collapse: no cluster named %s; clusters are %s'
                            % (sorted(unknown), sorted('_'.join(p) for p in formed)))
    return picked


def _collapsed_ancestor(c, formed, collapsed):
    """The outermost collapsed cluster containing cluster ``c`` (or None)."""
    chain = []
    while c is not None:
        chain.append(c)
        c = formed[c]['parent']
    for p in reversed(chain):
        if p in collapsed:
            return p
    return None


def _emit(dot, prefix, formed, collapsed, bodies):
    for node_id, label, attr in bodies[prefix]:
        dot.node(node_id, label=label, **attr)
    for child, c in formed.items():
        if c['parent'] != prefix or child in collapsed:
            continue
        with dot.subgraph(name='cluster_' + '_'.join(child)) as sub:
            sub.attr(label=c['label'], style='rounded,dashed', color='#7f7f7f',
                     fontcolor='#404040', labeljust='l')
            _emit(sub, child, formed, collapsed, bodies)


# ---------------------------------------------------------------------- networkx
def to_networkx(symbol, shape=None, dtype=None):
    """The graph as a ``networkx.DiGraph`` in data-flow direction (input -> consumer).

    Nodes are keyed by node name (``name#k`` for a repeated name) with attributes
    ``name``, ``op`` (``'null'`` for Variables), ``kind`` (``'input'``, ``'param'``,
    ``'aux'`` or ``'op'``), ``params`` (the operator's parameter values), ``attrs``
    (string attributes as in JSON), ``location``, and with ``shape``/``dtype`` given
    ``shapes``/``dtypes`` (one per visible output) and ``num_params`` (size of the
    parameters an operator reads). Edges carry ``output`` (index of the source output),
    ``inputs`` (argument names it feeds) and ``shape``/``dtype`` when known.

    >>> import symgraph as mx
    >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    >>> g = mx.viz.to_networkx(fc, shape={'data': (2, 5)})
    >>> g.nodes['fc']['shapes'], g.edges['fc_weight', 'fc']['inputs']
    ([(2, 3)], ['weight'])
    """
    import networkx as nx
    facts = _Facts(symbol, shape, dtype, partial=True)
    g = nx.DiGraph(name=symbol.name or 'group')
    keys, used = {}, {}
    for n in facts.order:
        used[n.name] = used.get(n.name, -1) + 1
        keys[id(n)] = n.name if used[n.name] == 0 else '%s#%d' % (n.name, used[n.name])
    params_of = set()
    for n in facts.order:
        params_of.update(id(v) for v in facts.param_inputs(n))
    for n in facts.order:
        if n.op is None:
            kind = 'aux' if id(n) in facts.aux_ids else (
                'param' if id(n) in params_of else 'input')
            values = {}
        else:
            kind, values = 'op', dict(n.op._values)
        data = {'name': n.name, 'op': 'null' if n.op is None else n.op.name, 'kind': kind,
                'params': values, 'attrs': dict(n.attrs), 'location': n.location}
        n_out = n.num_visible_outputs()
        if shape is not None:
            data['shapes'] = [facts.shape(n, i) for i in range(n_out)]
            if n.op is not None:
                data['num_params'] = sum(_size(facts.shape(v)) for v in facts.param_inputs(n))
        if dtype is not None:
            data['dtypes'] = [facts.dtype(n, i) for i in range(n_out)]
        g.add_node(keys[id(n)], **data)
    for n in facts.order:
        for j, (src, k) in enumerate(n.inputs):
            u, v = keys[id(src)], keys[id(n)]
            if g.has_edge(u, v):
                g.edges[u, v]['inputs'].append(facts.arg_name(n, j))
                continue
            data = {'output': k, 'inputs': [facts.arg_name(n, j)]}
            if shape is not None:
                data['shape'] = facts.shape(src, k)
            if dtype is not None:
                data['dtype'] = facts.dtype(src, k)
            g.add_edge(u, v, **data)
    return g


# ---------------------------------------------------------------------- Jupyter
#: above this many operators the Jupyter picture collapses the outermost clusters
REPR_COLLAPSE_OPS = 400


def repr_svg(symbol):
    """The SVG a Symbol shows in Jupyter, or None (Jupyter then shows the text repr)
    when graphviz or the ``dot`` program is missing."""
    try:
        import graphviz
    except ImportError:
        return None
    n_ops = sum(1 for n in symbol.graph(check_names=False).order if n.op is not None)
    collapse = 1 if n_ops > REPR_COLLAPSE_OPS else None
    try:
        dot = plot_network(symbol, title=symbol.name or 'group', collapse=collapse)
        return dot.pipe(format='svg').decode('utf-8')
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError, OSError) as e:
        log.debug('no SVG for %r: %s', symbol, e)
        return None
