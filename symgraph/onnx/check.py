"""Proof that an exported ONNX model computes what the symgraph graph computes.

:func:`verify` runs ``onnx.checker`` on the model, runs ONNX Runtime on seeded inputs and
compares every output with symgraph's own forward (``is_train=False``); with
``per_node=True`` it also exposes the output of every symgraph node as a graph output of
the ONNX model and names the first node, in topological order, whose ONNX value differs.
``python -m symgraph onnx-check`` and ``export_model(..., verify=True)`` both use it.

A node's ONNX value is found by the name the exporter gives its outputs (``names``: a
function of the node and the output index, :meth:`ExportGraph.outputs` in
``export.py``); outputs the exporter did not write under that name (hidden outputs,
operators folded into their neighbours) are left out of the per-node table.

``onnx`` and ``onnxruntime`` are imported only when a check runs.
"""
from __future__ import annotations

import numpy as np

from .. import ndarray as nd
from ..context import cpu

#: default relative tolerance; the absolute one scales with each output's magnitude
RTOL = 1e-4
ATOL_SCALE = 1e-4


class OnnxMismatchError(ValueError):
    """An exported ONNX model that fails ``onnx.checker`` or computes other values than
    the symgraph graph (the message holds the comparison table)."""


class CheckRow:
    """One compared tensor: its name, shapes, differences and verdict."""

    __slots__ = ('name', 'node', 'shape', 'ref_shape', 'max_abs', 'max_rel', 'ok', 'note')

    def __init__(self, name, node, shape, ref_shape, max_abs, max_rel, ok, note=''):
        self.name, self.node, self.shape, self.ref_shape = name, node, shape, ref_shape
        self.max_abs, self.max_rel, self.ok, self.note = max_abs, max_rel, ok, note


class CheckReport:
    """What :func:`verify` found: ``outputs`` (a row per graph output), ``nodes`` (a row
    per intermediate compared, with ``per_node``), ``first_bad`` (the first differing
    node's row, or None) and ``ok``."""

    def __init__(self, outputs, nodes, checker_error=None):
        self.outputs = outputs
        self.nodes = nodes
        self.checker_error = checker_error
        self.first_bad = next((r for r in nodes if not r.ok), None)
        self.ok = checker_error is None and all(r.ok for r in outputs) and \
            self.first_bad is None

    def table(self, rows=None):
        """The rows as a text table (output, shape, max abs diff, max rel diff, ok; the
        per-node rows start with the symgraph node)."""
        with_node = rows is not None
        rows = self.outputs if rows is None else rows
        head = ('output', 'shape', 'max abs diff', 'max rel diff', 'ok')
        body = [(r.name, 'x'.join(str(d) for d in r.shape) or '()',
                 '%.3g' % r.max_abs, '%.3g' % r.max_rel,
                 ('yes' if r.ok else 'NO') + (' (%s)' % r.note if r.note else ''))
                for r in rows]
        if with_node:
            head = ('node',) + head
            body = [(r.node,) + b for r, b in zip(rows, body)]
        n = len(head)
        widths = [max(len(str(x[k])) for x in [head] + body) for k in range(n)]
        lines = ['  '.join(str(x[k]).ljust(widths[k]) for k in range(n)).rstrip()
                 for x in [head] + body]
        lines.insert(1, '  '.join('-' * w for w in widths))
        return '\n'.join(lines)

    def raise_if_mismatch(self):
        """Raise :class:`OnnxMismatchError` with :meth:`summary` unless ``ok``."""
        if not self.ok:
            raise OnnxMismatchError('the ONNX model does not compute what the symgraph '
                                    'graph computes:\n' + self.summary())

    def summary(self):
        """The tables and the verdict, as printed by ``onnx-check``."""
        parts = []
        if self.checker_error:
            parts.append('onnx.checker: FAILED: %s' % self.checker_error)
        else:
            parts.append('onnx.checker: ok')
        parts.append(self.table())
        if self.nodes:
            parts.append('per node (%d intermediate values compared):' % len(self.nodes))
            parts.append(self.table(self.nodes))
            if self.first_bad is None:
                parts.append('every node agrees')
            else:
                parts.append('first node that differs: %s (ONNX tensor %r)'
                             % (self.first_bad.node, self.first_bad.name))
        parts.append('OK' if self.ok else 'MISMATCH')
        return '\n'.join(parts)


def seeded_inputs(shapes, dtypes=None, seed=0):
    """Input arrays for a check: uniform in [-1, 1) for floats, integers in [0, 4)."""
    rng = np.random.RandomState(seed)
    out = {}
    for name, shape in shapes.items():
        dtype = np.dtype((dtypes or {}).get(name, np.float32))
        if np.issubdtype(dtype, np.floating):
            out[name] = rng.uniform(-1, 1, shape).astype(dtype)
        elif dtype == np.bool_:
            out[name] = rng.randint(0, 2, shape).astype(dtype)
        else:
            out[name] = rng.randint(0, 4, shape).astype(dtype)
    return out


def compare(name, got, ref, rtol=RTOL, atol=None, node=''):
    """A :class:`CheckRow` for ONNX's ``got`` against symgraph's ``ref``."""
    got, ref = np.asarray(got), np.asarray(ref)
    note = ''
    if got.shape != ref.shape:
        if got.size != ref.size:
            return CheckRow(name, node, got.shape, ref.shape, np.inf, np.inf, False,
                            'symgraph shape %s' % (ref.shape,))
        note = 'symgraph shape %s' % (ref.shape,)
        got = got.reshape(ref.shape)
    if got.size == 0:
        return CheckRow(name, node, got.shape, ref.shape, 0.0, 0.0, True, note)
    g64, r64 = got.astype(np.float64), ref.astype(np.float64)
    finite = np.isfinite(r64) & np.isfinite(g64)
    diff = np.abs(np.where(finite, g64, 0.0) - np.where(finite, r64, 0.0))
    same_nonfinite = np.all((g64 == r64) | finite | (np.isnan(g64) & np.isnan(r64)))
    max_abs = float(diff[finite].max()) if finite.any() else 0.0
    scale = float(np.abs(r64[finite]).max()) if finite.any() else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else np.inf)
    if atol is None:
        atol = ATOL_SCALE * max(scale, 1e-2)
    if not np.issubdtype(ref.dtype, np.floating):
        ok = max_abs == 0
    else:
        ok = bool(same_nonfinite and np.all(diff[finite] <= atol + rtol * np.abs(r64[finite])))
    return CheckRow(name, node, got.shape, ref.shape, max_abs, max_rel, ok, note)


def _symgraph_forward(sym, params, inputs):
    """Every output of ``sym`` for ``inputs`` (is_train=False) as NumPy arrays."""
    shapes = {k: v.shape for k, v in inputs.items()}
    types = {k: v.dtype for k, v in inputs.items()}
    for k, v in params.items():
        shapes.setdefault(k, v.shape)
        types.setdefault(k, v.dtype)
    args = set(sym.list_arguments())
    aux = set(sym.list_auxiliary_states())
    shapes = {k: s for k, s in shapes.items() if k in args or k in aux}
    types = {k: t for k, t in types.items() if k in args or k in aux}
    exe = sym.simple_bind(cpu(), grad_req='null', type_dict=types, **shapes)
    for k, v in list(params.items()) + list(inputs.items()):
        if k in exe.arg_dict:
            exe.arg_dict[k][:] = nd.array(v, dtype=exe.arg_dict[k].dtype)
        elif k in exe.aux_dict:
            exe.aux_dict[k][:] = nd.array(v, dtype=exe.aux_dict[k].dtype)
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _run_onnxruntime(model_bytes, feeds, optimize=True):
    try:
        import onnxruntime as ort
    except ImportError:
        raise ImportError('checking an ONNX model needs onnxruntime: pip install '
                          '"symgraph[onnx]" (or pip install onnxruntime)') from None
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model_bytes, opts, providers=['CPUExecutionProvider'])
        names = [o.name for o in sess.get_outputs()]
        wanted = {i.name for i in sess.get_inputs()}
        return names, sess.run(None, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as e:      # noqa: BLE001 - onnxruntime's own exception types
        raise OnnxMismatchError('ONNX Runtime cannot run the model: %s'
                                % str(e).strip().splitlines()[0]) from None


def _checker(model):
    import onnx
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        return str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
    return None


def _param_arrays(params):
    out = {}
    for k, v in (params or {}).items():
        if k.startswith(('arg:', 'aux:')):
            k = k[4:]
        out[k] = v.asnumpy() if isinstance(v, nd.NDArray) else np.asarray(v)
    return out


def verify(model, sym, params, shapes, dtypes=None, inputs=None, rtol=RTOL, atol=None,
           per_node=False, names=None, seed=0):
    """Check an exported ONNX model against symgraph's forward of ``sym``.

    Parameters
    ----------
    model : onnx.ModelProto or str
        The exported model (or its file).
    sym : Symbol
        The graph it was exported from.
    params : dict of str to NDArray or ndarray
        Its parameters (``arg:``/``aux:`` prefixes allowed).
    shapes : dict of str to tuple
        The shapes of the data inputs (those the ONNX model takes).
    dtypes : dict of str to dtype, optional
        Their dtypes (float32 by default).
    inputs : dict of str to ndarray, optional
        The input values; seeded random ones (``seed``) by default.
    rtol, atol : float
        Tolerances of ``|onnx - symgraph| <= atol + rtol * |symgraph|``; by default
        ``atol`` is ``1e-4`` times the output's largest magnitude.
    per_node : bool
        Also compare every node's outputs and find the first that differs; needs
        ``names(node, i)``, the ONNX tensor name the export gave output ``i`` of ``node``.

    Returns
    -------
    CheckReport
    """
    import onnx
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load_model(model)
    params = _param_arrays(params)
    inputs = dict(inputs) if inputs is not None else seeded_inputs(shapes, dtypes, seed)
    checker_error = _checker(model)
    ref = _symgraph_forward(sym, params, inputs)
    out_names, got = _run_onnxruntime(model.SerializeToString(), inputs)
    rows = [compare(n, g, r, rtol, atol) for n, g, r in zip(out_names, got, ref)]
    if len(got) != len(ref):
        rows.append(CheckRow('(count)', '', (len(got),), (len(ref),), np.inf, np.inf, False,
                             'ONNX has %d outputs, symgraph %d' % (len(got), len(ref))))
    node_rows = []
    if per_node:
        if names is None:
            raise ValueError('verify(per_node=True) needs names(node, i): the ONNX tensor '
                             'names the export gave the nodes\' outputs')
        node_rows = _per_node(model, sym, params, inputs, names, rtol, atol)
    return CheckReport(rows, node_rows, checker_error)


def _per_node(model, sym, params, inputs, names, rtol, atol):
    """Rows for every node output that the ONNX model computes under its export name."""
    import onnx
    from onnx import helper
    produced = {o for n in model.graph.node for o in n.output}
    present = {o.name for o in model.graph.output}
    internals = sym.get_internals()
    entries = [e for e in internals.output_entries]
    wanted = []                         # (index in internals, ONNX name, node description)
    seen = set()
    for k, (node, i) in enumerate(entries):
        if node.op is None:
            continue
        try:
            name = names(node, i)
        except (KeyError, IndexError):
            continue
        if name in produced and name not in seen:
            seen.add(name)
            wanted.append((k, name, '%s (%s)' % (node.name, node.op.name)))
    ref = _symgraph_forward(internals, params, inputs)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for _, name, _ in wanted:
        if name not in present:
            probe.graph.output.append(helper.make_tensor_value_info(
                name, onnx.TensorProto.UNDEFINED, None))
    # ONNX Runtime wants the element types of graph outputs: ONNX's own inference's, or
    # where it has none, the dtype of symgraph's value
    known = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
        known = {v.name: v.type.tensor_type.elem_type for v in inferred.value_info}
    except Exception:       # noqa: BLE001 - fall back on symgraph's dtypes
        pass
    for out in probe.graph.output:
        if out.type.tensor_type.elem_type == onnx.TensorProto.UNDEFINED:
            k = next(k for k, n, _ in wanted if n == out.name)
            out.type.tensor_type.elem_type = known.get(out.name) or \
                helper.np_dtype_to_tensor_dtype(ref[k].dtype)
    out_names, got = _run_onnxruntime(probe.SerializeToString(), inputs, optimize=False)
    values = dict(zip(out_names, got))
    return [compare(name, values[name], ref[k], rtol, atol, node=desc)
            for k, name, desc in wanted]
