"""MXNet's symbol JSON format: writing, and reading files from MXNet 1.x (and 0.x)."""
from __future__ import annotations

import json

from . import opdef
from .attribute import PLAIN_KEYS
from .base import MXNetError
from .graph import Node, topo_order

__all__ = ['to_json', 'from_json', 'MXNET_VERSION']

MXNET_VERSION = 10901


class SymbolFormatError(MXNetError, ValueError):
    """A symbol JSON file that is corrupt, truncated or not a symbol."""


def to_json(sym):
    order = topo_order([n for n, _ in sym._outputs])
    index = {id(n): k for k, n in enumerate(order)}
    nodes, arg_nodes, row_ptr = [], [], [0]
    for k, n in enumerate(order):
        d = {'op': 'null' if n.op is None else n.op.name, 'name': n.name}
        if n.attrs:
            d['attrs'] = dict(n.attrs)
        d['inputs'] = [[index[id(src)], i, 0] for src, i in n.inputs]
        nodes.append(d)
        if n.op is None:
            arg_nodes.append(k)
        row_ptr.append(row_ptr[-1] + n.num_outputs())
    doc = {'nodes': nodes, 'arg_nodes': arg_nodes, 'node_row_ptr': row_ptr,
           'heads': [[index[id(n)], i, 0] for n, i in sym._outputs],
           'attrs': {'mxnet_version': ['int', MXNET_VERSION]}}
    return json.dumps(doc, indent=2)


def _fail(source, msg):
    raise SymbolFormatError('%s: %s' % (source, msg))


def _split_attrs(cls, attrs, where):
    """Operator parameters and other (string) attributes of a node read from JSON."""
    params = {}
    free = getattr(cls, 'free_params', False)
    for k, v in attrs.items():
        if k in cls._params or (free and not (k.startswith('__') and k.endswith('__'))
                                and k not in PLAIN_KEYS):
            params[k] = v
        elif (k.startswith('__') and k.endswith('__')) or k in PLAIN_KEYS:
            continue
        else:
            raise MXNetError('%s: unknown parameter %r of operator %s; valid parameters '
                             'are %s' % (where, k, cls.name, sorted(cls._params)))
    return params


def from_json(text, source='<json>'):
    """Build a Symbol from MXNet JSON text; corrupt input gives SymbolFormatError."""
    from .symbol import Symbol
    try:
        doc = json.loads(text)
    except (ValueError, TypeError) as e:
        _fail(source, 'not valid JSON (truncated or corrupt?): %s' % e)
    if not isinstance(doc, dict) or not isinstance(doc.get('nodes'), list) \
            or not isinstance(doc.get('heads'), list):
        _fail(source, 'not an MXNet symbol file: expected an object with "nodes" and '
                      '"heads" lists')
    built = []
    for k, d in enumerate(doc['nodes']):
        where = '%s: node %d' % (source, k)
        if not isinstance(d, dict) or 'op' not in d or 'name' not in d:
            _fail(source, 'node %d is malformed: %r' % (k, d))
        attrs = {}
        for key in ('attr', 'param', 'attrs'):       # 0.x used "param"/"attr"
            a = d.get(key) or {}
            if not isinstance(a, dict):
                _fail(source, 'node %d (%s): %r must be an object' % (k, d['name'], key))
            attrs.update({str(x): str(y) for x, y in a.items()})
        inputs = []
        for e in d.get('inputs', []):
            if (not isinstance(e, list) or len(e) < 2 or not isinstance(e[0], int)
                    or not 0 <= e[0] < k):
                _fail(source, 'node %d (%s) has a bad input entry %r (inputs must refer to '
                              'earlier nodes)' % (k, d['name'], e))
            src = built[e[0]]
            if not 0 <= e[1] < src.num_outputs():
                _fail(source, 'node %d (%s) reads output %d of %r, which has %d outputs'
                      % (k, d['name'], e[1], src.name, src.num_outputs()))
            inputs.append((src, e[1]))
        loc = '%s:node %d' % (source, k)
        if d['op'] == 'null':
            built.append(Node(None, d['name'], attrs, (), loc))
            continue
        try:
            cls = opdef.get_op(d['op'])
        except MXNetError:
            _fail(source, 'node %d (%s) uses operator %r, which is not registered'
                  % (k, d['name'], d['op']))
        params = _split_attrs(cls, attrs, "%s (%r)" % (where, d['name']))
        try:
            op = cls(**params)
        except MXNetError as e:
            raise MXNetError('%s (%r): %s' % (where, d['name'], e)) from None
        if len(inputs) != op.input_count():
            _fail(source, 'node %d (%s, operator %s) has %d inputs but the operator takes '
                  '%d: %s' % (k, d['name'], op.name, len(inputs), op.input_count(),
                              op.list_arguments() + op.list_auxiliary_states()))
        built.append(Node(op, d['name'], attrs, inputs, loc))
    heads = []
    for h in doc['heads']:
        if not isinstance(h, list) or len(h) < 2 or not isinstance(h[0], int) \
                or not 0 <= h[0] < len(built):
            _fail(source, 'bad head entry %r' % (h,))
        if not 0 <= h[1] < built[h[0]].num_outputs():
            _fail(source, 'head %r reads a missing output' % (h,))
        heads.append((built[h[0]], h[1]))
    if not heads:
        _fail(source, 'the symbol has no outputs ("heads" is empty)')
    return Symbol(heads)
