"""Command line: inspect symbol JSON files (including those written by MXNet).

::

    python -m symgraph summary model-symbol.json --shape data=1,3,224,224
    python -m symgraph plot model-symbol.json --shape data=1,3,224,224 -o graph.svg
    python -m symgraph memory model-symbol.json --shape data=1,3,224,224 --train -o mem.svg
    python -m symgraph diff a-symbol.json b-symbol.json --params a.params b.params -o d.svg
    python -m symgraph onnx-check model-symbol.json model-0000.params --shape data=1,3,224,224

``plot`` writes SVG, PNG or PDF (chosen by the output's extension or ``--format``) with
the Graphviz ``dot`` program, or the DOT source itself for ``.gv``/``.dot``. ``memory``
prints an executor's storage plan (``mx.viz.plot_memory``) and draws it with ``-o x.svg``;
``diff`` prints what changed between two graphs (``mx.viz.diff``; exit status 0 when only
names differ, 2 otherwise, as ``diff`` does) and draws it with ``-o x.svg``. ``onnx-check``
exports to ONNX and checks the file with ``onnx.checker`` and ONNX Runtime against
symgraph's forward (``--per-node``: every node's output; ``symgraph/onnx/onnx_check.py``).
"""
from __future__ import annotations

import argparse
import os
import sys

_FORMATS = ('svg', 'png', 'pdf', 'gv', 'dot')


class CommandError(Exception):
    """A problem the command reports in one line (exit status 1)."""


def _parse_shape(text):
    """``'data=1,3,224,224'`` (or ``data=(1,3,224,224)``) -> ``('data', (1, 3, 224, 224))``."""
    name, sep, dims = text.partition('=')
    dims = dims.strip().strip('()[]')
    try:
        shape = tuple(int(d) for d in dims.replace('x', ',').split(',') if d.strip())
    except ValueError:
        shape = None
    if not sep or not name.strip() or not shape:
        raise argparse.ArgumentTypeError(
            'expected NAME=D1,D2,... (e.g. data=1,3,224,224), got %r' % text)
    return name.strip(), shape


def _parser():
    ap = argparse.ArgumentParser(prog='python -m symgraph',
                                 description='Inspect MXNet/symgraph symbol JSON files.')
    sub = ap.add_subparsers(dest='command', required=True)

    def common(p):
        p.add_argument('symbol', help='a symbol JSON file (e.g. model-symbol.json)')
        p.add_argument('--shape', action='append', type=_parse_shape, default=[],
                       metavar='NAME=D1,D2,...',
                       help='shape of an input; repeat for several inputs')

    s = sub.add_parser('summary', help="print the layer table (MXNet's print_summary)")
    common(s)
    s.add_argument('--line-length', type=int, default=120)
    s.add_argument('--count', choices=('mxnet', 'all'), default='mxnet',
                   help="'mxnet': MXNet 1.9.1's totals; 'all': every trainable parameter")

    p = sub.add_parser('plot', help='draw the graph with Graphviz')
    common(p)
    p.add_argument('-o', '--output', help='output file (default: <symbol name>.svg)')
    p.add_argument('--format', choices=_FORMATS,
                   help='output format (default: from the extension of --output)')
    p.add_argument('--title', default=None, help='graph title')
    p.add_argument('--show-weights', action='store_true',
                   help='draw weight, bias and auxiliary-state variables')
    p.add_argument('--no-clusters', action='store_true',
                   help='do not group nodes into clusters by name prefix')
    p.add_argument('--collapse', type=int, default=None, metavar='DEPTH',
                   help='draw every cluster at this depth (1: outermost) as one node')

    m = sub.add_parser('memory', help="the storage plan over the step (mx.viz.plot_memory)")
    common(m)
    m.add_argument('--train', action='store_true',
                   help='bind for training (gradients of every argument but those given '
                        "by --shape and the labels, '*label'): forward then backward steps")
    m.add_argument('-o', '--output', help='write the drawing (.svg) or the report (other)')
    m.add_argument('--top', type=int, default=10, help='list this many largest buffers')

    d = sub.add_parser('diff', help='what changed between two graphs (mx.viz.diff)')
    d.add_argument('symbol', help="graph A's symbol JSON file")
    d.add_argument('symbol_b', help="graph B's symbol JSON file")
    d.add_argument('--params', nargs=2, metavar=('A.params', 'B.params'),
                   help='compare the parameters too (shapes, max abs diff)')
    d.add_argument('--rtol', type=float, default=0.0,
                   help="list a parameter whose max abs diff exceeds RTOL x A's largest "
                        'magnitude (default 0: any difference)')
    d.add_argument('--no-renames', action='store_true',
                   help='do not list the nodes that differ in name alone')
    d.add_argument('-o', '--output', help='write the drawing (.svg)')
    from .onnx.onnx_check import add_parser as onnx_check_parser
    onnx_check_parser(sub, _parse_shape)
    return ap


def _memory(sym, shapes, args):
    from .visualization import plot_memory
    if not shapes:
        raise CommandError('memory needs the input shapes: --shape data=1,3,224,224')
    # (as Module binds: no gradient for the data and the labels)
    req = {n: ('write' if args.train and n not in shapes and not n.endswith('label')
               else 'null') for n in sym.list_arguments()}
    exe = sym.simple_bind(None, grad_req=req, **shapes)
    mp = plot_memory(exe, is_train=args.train)
    print(mp.text(top=args.top))
    if args.output:
        mp.save(args.output, title=os.path.basename(args.symbol))
        print('wrote %s' % args.output)


def _diff(sym_a, args):
    from . import symbol as sym_mod
    from .visualization import diff
    sym_b = sym_mod.load(args.symbol_b)
    params = [None, None]
    if args.params:
        from .ndarray.serialization import load_arrays
        for i, fname in enumerate(args.params):
            if not os.path.exists(fname):
                raise CommandError('no such parameter file: %s' % fname)
            got = load_arrays(fname)
            if not isinstance(got, dict):
                raise CommandError('%s holds arrays without names; a checkpoint\'s .params '
                                   'file names them' % fname)
            params[i] = got
    result = diff(sym_a, sym_b, params[0], params[1], rtol=args.rtol)
    print(result.text(renames=not args.no_renames))
    if args.output:
        if not args.output.lower().endswith('.svg'):
            raise CommandError('diff draws SVG only: give -o NAME.svg')
        result.save_svg(args.output, title='%s -> %s' % (os.path.basename(args.symbol),
                                                         os.path.basename(args.symbol_b)))
        print('wrote %s' % args.output)
    return 0 if result.same else 2


def _plot(sym, shapes, args):
    from .visualization import plot_network
    out = args.output
    if out is None:
        stem = os.path.basename(args.symbol)
        stem = stem[:-len('.json')] if stem.endswith('.json') else stem
        out = stem + '.' + (args.format or 'svg')
    fmt = args.format or os.path.splitext(out)[1].lstrip('.').lower()
    if fmt not in _FORMATS:
        raise CommandError('cannot tell the format of %r; use --format with one of %s'
                           % (out, ', '.join(_FORMATS)))
    title = args.title or os.path.splitext(os.path.basename(out))[0]
    dot = plot_network(sym, title=title, shape=shapes or None,
                       hide_weights=not args.show_weights, cluster=not args.no_clusters,
                       collapse=args.collapse)
    if fmt in ('gv', 'dot'):
        data = dot.source.encode('utf-8')
    else:
        import graphviz
        from .visualization import BUNDLED_DOT, RENDER_HINT, dot_program
        program = dot_program()
        if fmt == 'pdf' and program and os.path.basename(program).startswith(BUNDLED_DOT):
            raise CommandError('pdf output needs the system Graphviz dot program (%s, '
                               'found instead, writes svg and png); write .svg or .png'
                               % BUNDLED_DOT)
        try:
            data = dot.pipe(format=fmt)
        except graphviz.ExecutableNotFound:
            raise CommandError('the Graphviz "dot" program is needed for %s output: %s; '
                               'write .gv to get the DOT source instead'
                               % (fmt, RENDER_HINT)) from None
    from .base import atomic_write
    with atomic_write(out, 'wb') as f:
        f.write(data)
    print('wrote %s' % out)


def main(argv=None):
    args = _parser().parse_args(argv)
    from . import symbol as sym_mod
    from .base import MXNetError
    try:
        if args.command == 'onnx-check':
            from .onnx.onnx_check import main as onnx_check
            return onnx_check(args)
        sym = sym_mod.load(args.symbol)
        shapes = dict(getattr(args, 'shape', None) or ())
        if args.command == 'diff':
            return _diff(sym, args)
        if args.command == 'memory':
            _memory(sym, shapes, args)
        elif args.command == 'summary':
            from .visualization import print_summary
            print_summary(sym, shape=shapes or None, line_length=args.line_length,
                          count=args.count)
        else:
            _plot(sym, shapes, args)
    except (OSError, MXNetError, ValueError, CommandError) as e:
        print('error: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
