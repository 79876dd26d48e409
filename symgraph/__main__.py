"""Command line: inspect symbol JSON files (including those written by MXNet).

::

    python -m symgraph summary model-symbol.json --shape data=1,3,224,224
    python -m symgraph plot model-symbol.json --shape data=1,3,224,224 -o graph.svg

``plot`` writes SVG, PNG or PDF (chosen by the output's extension or ``--format``) with
the Graphviz ``dot`` program, or the DOT source itself for ``.gv``/``.dot``.
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
    return ap


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
        sym = sym_mod.load(args.symbol)
        shapes = dict(args.shape)
        if args.command == 'summary':
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
