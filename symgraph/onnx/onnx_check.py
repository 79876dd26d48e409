"""``python -m symgraph onnx-check``: export a checkpoint to ONNX and prove the file right.

::

    python -m symgraph onnx-check model-symbol.json model-0000.params \\
        --shape data=1,3,224,224 [-o model.onnx] [--opset N] [--per-node] [--rtol R --atol A]

exports with :func:`~symgraph.onnx.export.export_onnx_model`, then runs
:func:`~symgraph.onnx.check.verify` (``onnx.checker``, ONNX Runtime against symgraph's
forward on seeded inputs) and prints its tables. With ``--per-node`` every node's output,
as the export named it (:meth:`~symgraph.onnx.export.ExportGraph.outputs`), is compared
too and the first node that differs is named. (Apart from ``check.py`` because the export
itself calls ``check.verify`` for ``export_model(..., verify=True)``.)
"""
from __future__ import annotations

import numpy as np

from ..ndarray import load as _nd_load
from ..symbol import load as _sym_load
from . import check
from .export import ExportGraph, export_onnx_model


def export_names(sym, params, opset):
    """``names(node, i)``: the ONNX tensor name the export gives output ``i`` of ``node``
    (the export names every node's outputs once, in topological order, before
    converting)."""
    order = sym.graph().order
    g = ExportGraph(order, {}, {}, params, opset, False)
    return lambda node, i: g.outputs(node)[i]


def run(symbol_file, params_file, shapes, output=None, opset=None, per_node=False,
        rtol=check.RTOL, atol=None, seed=0, dtypes=None):
    """Export, check and return ``(CheckReport, onnx file or None)``."""
    import onnx
    sym = _sym_load(symbol_file) if isinstance(symbol_file, str) else symbol_file
    if params_file is None:
        params = {}
    elif isinstance(params_file, str):
        params = _nd_load(params_file)
    else:
        params = dict(params_file)
    params = check._param_arrays(params)
    data = [n for n in sym.list_inputs() if n not in params]
    missing = [n for n in data if n not in shapes]
    unknown = [n for n in shapes if n not in data]
    if unknown:
        raise ValueError('--shape names %s, which %s' % (
            ', '.join(unknown), 'are not inputs of the graph (its data inputs: %s)'
            % ', '.join(data)))
    # loss labels are left out of the export (their inference forward ignores them)
    in_names = [n for n in data if n in shapes]
    if missing and not all(n.endswith('label') for n in missing):
        raise ValueError('give --shape for every data input: missing %s'
                         % ', '.join(missing))
    types = [np.dtype((dtypes or {}).get(n, np.float32)) for n in in_names]
    model = export_onnx_model(sym, params, [shapes[n] for n in in_names], types,
                              opset_version=opset)
    if output:
        onnx.save_model(model, output)
    opset_used = max(o.version for o in model.opset_import if o.domain in ('', 'ai.onnx'))
    names = export_names(sym, params, opset_used) if per_node else None
    report = check.verify(model, sym, params, {n: shapes[n] for n in in_names},
                          dict(zip(in_names, types)), rtol=rtol, atol=atol,
                          per_node=per_node, names=names, seed=seed)
    return report, output


# --------------------------------------------------------------------- the command line
def add_parser(subparsers, parse_shape):
    """The ``onnx-check`` subcommand of ``python -m symgraph`` (``parse_shape``: the
    command line's ``NAME=D1,D2,...`` reader)."""
    p = subparsers.add_parser(
        'onnx-check', help='export to ONNX, run onnx.checker and ONNX Runtime, compare '
                           "every output with symgraph's forward")
    p.add_argument('symbol', help='a symbol JSON file (e.g. model-symbol.json)')
    p.add_argument('params', help='its parameters (e.g. model-0000.params)')
    p.add_argument('--shape', action='append', type=parse_shape, default=[],
                   metavar='NAME=D1,D2,...', help='shape of a data input; repeat for several')
    p.add_argument('-o', '--output', help='also write the ONNX model to this file')
    p.add_argument('--opset', type=int, default=None,
                   help='ONNX opset (default: the newest the installed onnx knows)')
    p.add_argument('--per-node', action='store_true',
                   help="compare every node's output too and name the first that differs")
    p.add_argument('--rtol', type=float, default=check.RTOL,
                   help='relative tolerance (default %(default)s)')
    p.add_argument('--atol', type=float, default=None,
                   help="absolute tolerance (default: 1e-4 x each output's largest "
                        'magnitude)')
    p.add_argument('--seed', type=int, default=0, help='seed of the random inputs')
    return p


def main(args):
    """Run ``onnx-check`` for parsed ``args``; the exit status (0: every value agrees,
    1: a mismatch or a checker failure)."""
    import sys
    if not args.shape:
        print('error: onnx-check needs the input shapes: --shape data=1,3,224,224',
              file=sys.stderr)
        return 1
    report, out = run(args.symbol, args.params, dict(args.shape), output=args.output,
                      opset=args.opset, per_node=args.per_node, rtol=args.rtol,
                      atol=args.atol, seed=args.seed)
    print(report.summary())
    if out:
        print('wrote %s' % out)
    return 0 if report.ok else 1
