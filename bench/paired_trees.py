"""Paired before/after timing of two checkouts of symgraph: runs ``bench/bench_cnn.py`` of
an old and a new tree in turn (old, new, old, new, ...), each run in its own process, and
prints for every workload the per-pair ratios new/old and their median. A slow phase of a
shared machine then falls on both trees alike, which a single run of each cannot promise.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/paired_trees.py \\
        --old /path/to/old-checkout --new . --pairs 4 \\
        --only resnet_train,resnet_infer,resnet_bind,chain,mlp_train,resnet_memory

Each tree runs its own ``bench/bench_cnn.py`` with its own package (the script puts its
tree first on ``sys.path``). ``symgraph.ops``/``symgraph.cuda`` map to the top-level
``ops/``/``cuda/`` folders through the install; an old checkout made with ``git worktree``
needs the links ``symgraph/ops -> ../ops`` and ``symgraph/cuda -> ../cuda`` so that it
loads its own operators (this script checks that it does).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROW = re.compile(r'^(?P<label>\S.*?)\s{2,}(?P<value>[0-9.]+) (?P<unit>ms|us/node|MiB|s)\b')


def run_tree(tree, only, passes, rounds=1):
    """One run of ``tree``'s bench_cnn: {label: (value, unit)} and the load average."""
    cmd = [sys.executable, os.path.join(tree, 'bench', 'bench_cnn.py'), '--only', only,
           '--passes', str(passes), '--rounds', str(rounds), '--no-onednn-off']
    out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=True).stdout
    rows, inside = {}, False
    for line in out.splitlines():
        if line.startswith('workload'):
            inside = True
            continue
        if line.startswith('check values'):
            break
        m = ROW.match(line) if inside else None
        if m:
            rows[m.group('label')] = (float(m.group('value')), m.group('unit'))
    return rows


def check_tree(tree):
    """Refuse a tree whose ``symgraph.ops`` would come from elsewhere."""
    probe = ('import sys; sys.path.insert(0, %r); import symgraph, symgraph.ops as o; '
             'print(o.__file__)' % tree)
    where = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True,
                           check=True, cwd=tree).stdout.strip()
    if not os.path.realpath(where).startswith(os.path.realpath(tree)):
        raise SystemExit('%s loads its operators from %s: link symgraph/ops -> ../ops and '
                         'symgraph/cuda -> ../cuda in it' % (tree, where))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--old', required=True, help='the checkout before the change')
    ap.add_argument('--new', default='.', help='the checkout after it (default: .)')
    ap.add_argument('--pairs', type=int, default=4)
    ap.add_argument('--passes', type=int, default=3, help="bench_cnn's --passes per run")
    ap.add_argument('--rounds', type=int, default=1, help="bench_cnn's --rounds per pass")
    ap.add_argument('--only', default='resnet_train,resnet_infer,resnet_bind,chain,mlp_train')
    args = ap.parse_args(argv)
    trees = {'old': os.path.abspath(args.old), 'new': os.path.abspath(args.new)}
    for tree in trees.values():
        check_tree(tree)
    ratios, values = {}, {'old': {}, 'new': {}}
    for i in range(args.pairs):
        order = ('old', 'new') if i % 2 == 0 else ('new', 'old')
        got = {which: run_tree(trees[which], args.only, args.passes, args.rounds) for which in order}
        for label, (v_new, unit) in got['new'].items():
            if label in got['old']:
                v_old = got['old'][label][0]
                ratios.setdefault(label, []).append(v_new / v_old)
                values['old'].setdefault(label, []).append(v_old)
                values['new'].setdefault(label, []).append(v_new)
        print('pair %d of %d done (load average %.1f)' % (i + 1, args.pairs,
                                                         os.getloadavg()[0]), flush=True)
    print('%-48s %10s %10s %8s  %s' % ('workload', 'old best', 'new best', 'median',
                                       'ratios new/old per pair'))
    for label, rs in ratios.items():
        print('%-48s %10.3f %10.3f %8.3f  %s' % (
            label, min(values['old'][label]), min(values['new'][label]),
            statistics.median(rs), ' '.join('%.3f' % r for r in rs)))


if __name__ == '__main__':
    main()
