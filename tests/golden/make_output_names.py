"""MXNet 1.9.1's output names (``FListOutputNames``) and output counts (hidden outputs
included, as ``node_row_ptr`` counts them in a saved symbol) of every registered operator,
each built as one node named ``op`` with minimal valid parameters. Python 3.8 compatible::

    python tests/golden/make_output_names.py            # $MXNET_PYTHON or this python

runs itself under the interpreter ``$MXNET_PYTHON`` (which must import MXNet 1.9.1) when
the current one cannot import ``mxnet``, and writes ``data/output_names.json``:
``{op name: {"attrs": {...}, "inputs": [names] or "*N", "outputs": [...], "count": n}}``.
Operators that MXNet cannot create from a symbol (imperative-only ones) are listed under
``"skipped"`` with MXNet's message. Read by ``tests/symbol/test_output_names.py``.

The operator is composed, never run, so input shapes do not matter; parameters that have
no default get the first value of :data:`VALUES` that MXNet's parameter parser accepts.
"""
import ctypes
import json
import os
import subprocess
import sys

try:
    import mxnet as mx
except ImportError:
    mx = None

#: per parameter name, values tried in order for a required parameter
VALUES = {
    'shape': [(2, 2)], 'kernel': [(1, 1)], 'num_filter': [2], 'num_hidden': [2],
    'num_outputs': [2], 'act_type': ['relu'], 'axis': [0], 'axes': [(0,)], 'k': [1],
    'depth': [2], 'state_size': [2], 'num_layers': [1], 'mode': ['lstm'],
    'input_dim': [4], 'output_dim': [2], 'op_type': ['__no_such_custom_op__'],
    'target_shape': [(2, 2)], 'pooled_size': [(1, 1)], 'spatial_scale': [1.0],
    'begin': [(0,)], 'end': [(1,)], 'indices': [(1,)], 'sizes': [(1.0,)],
    'ratios': [(1.0,)], 'scales': [(1.0,)], 'transform_type': ['affine'],
    'sampler_type': ['bilinear'], 'output_size': [(1, 1)], 'reps': [(1,)],
    'dtype': ['float32'], 'ord': [2], 'scalar': [1.0], 'num_group': [1],
    'num_args': [2], 'ndim': [2], 'inputs': [], 'lhs_axes': [(0,)], 'rhs_axes': [(0,)],
}
#: operators whose composition (or tojson) with these minimal parameters crashes MXNet itself
CRASH = {'reset_arrays', '_sg_mkldnn_fully_connected', '_contrib_dgl_csr_neighbor_non_uniform_sample', '_NDArray', '_Native', '_CachedOp', '_CachedOpThreadSafe', '_CustomFunction'}
#: parameters that are optional in the registry but without which the operator fails
EXTRA = {'Pooling': {'kernel': (2, 2)}, 'Pooling_v1': {'kernel': (2, 2)},
         '_contrib_quantized_pooling': {'kernel': (2, 2)},
         '_contrib_quantized_rnn': {'mode': 'lstm'}, '_cond': {'num_args': 3},
         'multi_all_finite': {'num_arrays': 2},
         # values symgraph checks when the node is made (MXNet only when it runs)
         '_random_randint': {'low': 0, 'high': 2}, 'random_randint': {'low': 0, 'high': 2},
         '_ravel_multi_index': {'shape': (2, 2)}, 'ravel_multi_index': {'shape': (2, 2)},
         '_unravel_index': {'shape': (2, 2)}, 'unravel_index': {'shape': (2, 2)},
         '_image_resize': {'size': (2, 2)}, '_image_adjust_lighting': {'alpha': (1, 1, 1)},
         '_sample_unique_zipfian': {'shape': (1, 2), 'range_max': 4}, '_set_value': {'src': 1.0},
         'cast_storage': {'stype': 'default'}}
#: per parameter type (MXNet's type text before ', required'), values tried in order
BY_TYPE = [('Shape', [(1,), (1, 1)]), ('tuple', [(1,)]), ('int', [1, 2]),
           ('long', [1]), ('float', [1.0]), ('double', [1.0]), ('boolean', [False]),
           ('string', ['float32', 'relu', 'x'])]


def _op_info(name):
    from mxnet.base import _LIB, c_str, check_call, mx_uint, py_str
    handle = ctypes.c_void_p()
    check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(handle)))
    real, desc, kv, rt = (ctypes.c_char_p() for _ in range(4))
    num = mx_uint()
    names, types, descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
    check_call(_LIB.MXSymbolGetAtomicSymbolInfo(
        handle, ctypes.byref(real), ctypes.byref(desc), ctypes.byref(num),
        ctypes.byref(names), ctypes.byref(types), ctypes.byref(descs), ctypes.byref(kv),
        ctypes.byref(rt)))
    args = [(py_str(names[i]), py_str(types[i])) for i in range(num.value)]
    return handle.value, args, py_str(kv.value) if kv.value else ''


def _candidates(pname, ptype):
    if ptype.startswith('{'):
        # a choice: "{'a', 'b'},required"; the usual value first where it is one
        choices = [c.strip(" '") for c in ptype.split('}')[0].strip('{').split(',')]
        return [v for v in VALUES.get(pname, []) if v in choices] + choices
    out = list(VALUES.get(pname, []))
    for key, vals in BY_TYPE:
        if ptype.startswith(key) or ptype.startswith('Shape' if key == 'tuple' else key):
            out += vals
    return out or [1]


def _message(err):
    """The line of an MXNet error that says what is wrong (not its C++ stack)."""
    lines = [ln.strip() for ln in str(err).split('\n') if ln.strip()]
    best = [ln for ln in lines if 'Error' in ln or 'Check failed' in ln or 'rgument' in ln]
    return (best or lines or [''])[0][:200]


def _build(name):
    """(symbol, attrs, inputs) of a one-node graph of operator ``name``."""
    from mxnet._ctypes.symbol import _symbol_creator
    handle, args, key_var = _op_info(name)
    inputs = [a for a, t in args if t.startswith('NDArray-or-Symbol') or t == 'Symbol'
              or t.startswith('Symbol')]
    varargs = any(t.endswith('[]') for a, t in args if a in inputs)
    required = [(a, t.rsplit(',', 1)[0].strip()) for a, t in args
                if a not in inputs and t.endswith('required')]
    attrs = dict(EXTRA.get(name, {}))
    if varargs and key_var and key_var not in attrs:
        attrs[key_var] = 2
    chosen = {}
    last = None
    for _ in range(64):
        for a, t in required:
            if a not in chosen:
                chosen[a] = 0
        params = {a: _candidates(a, t)[chosen[a]] for a, t in required}
        params.update(attrs)
        keys = [k for k in params]
        vals = [str(params[k]) for k in keys]
        try:
            if varargs:
                sym = _symbol_creator(handle, [mx.sym.var('arg0'), mx.sym.var('arg1')], {},
                                      keys, vals, 'op', False)
                ins = '*2'
            else:
                # no inputs given: MXNet creates the Variables the parameters call for
                # (op_data, op_weight; no op_bias with no_bias), as mx.sym.<op>() does
                try:
                    sym = _symbol_creator(handle, [], {}, keys, vals, 'op', False)
                except mx.base.MXNetError as e:
                    if 'Not enough argument' not in str(e):
                        raise
                    # operators that update their inputs in place want them given
                    sym = _symbol_creator(handle, [], {a: mx.sym.var(a) for a in inputs},
                                          keys, vals, 'op', False)
                ins = sym.list_arguments() + sym.list_auxiliary_states()
            return sym, {k: str(params[k]) for k in keys}, ins
        except mx.base.MXNetError as e:
            last = _message(e)
            # move on to the next candidate of the first parameter the message names
            for a, t in required:
                if a in last and chosen[a] + 1 < len(_candidates(a, t)):
                    chosen[a] += 1
                    break
            else:
                for a, t in required:
                    if chosen[a] + 1 < len(_candidates(a, t)):
                        chosen[a] += 1
                        break
                else:
                    raise
    raise mx.base.MXNetError(last)


def main():
    from mxnet.base import _LIB, check_call, mx_uint, py_str
    size = mx_uint()
    plist = ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    names = sorted(py_str(plist[i]) for i in range(size.value))
    table, skipped = {}, {}
    for name in names:
        if name.startswith('_backward') or name.startswith('_np') or name.startswith('_npi') \
                or name.startswith('_npx'):
            continue
        if name in CRASH:
            skipped[name] = 'not composed: crashes MXNet 1.9.1 (segmentation fault)'
            continue
        try:
            sym, attrs, ins = _build(name)
            rows = json.loads(sym.tojson())['node_row_ptr']
            table[name] = {'attrs': attrs, 'inputs': ins, 'outputs': sym.list_outputs(),
                           'count': rows[-1] - rows[-2]}
        except Exception as e:  # noqa: BLE001 -- recorded, not hidden
            skipped[name] = _message(e)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                        'output_names.json')
    with open(path, 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'ops': table, 'skipped': skipped}, f,
                  indent=0, sort_keys=True)
    print('wrote %s: %d operators, %d skipped' % (path, len(table), len(skipped)))


if __name__ == '__main__':
    if mx is None:
        py = os.environ.get('MXNET_PYTHON')
        if not py:
            sys.exit('make_output_names.py: mxnet is not importable here; set MXNET_PYTHON '
                     'to a Python with MXNet 1.9.1')
        sys.exit(subprocess.call([py] + sys.argv))
    main()
