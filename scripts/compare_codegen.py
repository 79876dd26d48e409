"""Dump what the executor generates for the benchmark networks, to compare two trees.

For bench/bench_cnn.py's ResNet-14, MLP, LeNet and 400-node chain (bound as the benchmark
binds them, with gradients, and the ResNet also without, for inference) this runs three
times a training forward and backward and an inference forward (noting a hash of the
outputs and gradients each time: the values bit for bit), then writes every generated
source (``<symgraph-plan-N-...>``, the counter N replaced by its order of appearance) and
each plan's storage decisions (buffered entries, their modes, offsets, sizes, layouts,
in-place pairs, lent scratch) to one text file. Run it once per tree and diff the files:

    PYTHONPATH=<old tree> python scripts/compare_codegen.py --out old.txt
    PYTHONPATH=<new tree> python scripts/compare_codegen.py --out new.txt
    diff old.txt new.txt

An old tree made with ``git archive <commit> | tar -x -C <dir>`` needs its ``ops`` and
``cuda`` reachable as ``symgraph.ops``/``symgraph.cuda`` (``ln -s ../ops <dir>/symgraph/ops``,
likewise cuda), since the editable install maps them only for /work/main's tree.
"""
import argparse
import hashlib
import importlib.util
import linecache
import os
import re
import sys


def _bench(root):
    spec = importlib.util.spec_from_file_location(
        '_bench_cnn', os.path.join(root, 'bench', 'bench_cnn.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _storage_lines(name, plan):
    st = plan.storage()
    out = ['== storage %s: arena %d bytes, %d slots' % (name, st.arena, len(st.keys))]
    for k, key in enumerate(st.keys):
        out.append('  %r mode=%s off=%d nbytes=%d shape=%s dtype=%s layout=%s'
                   % (key, st.mode.get(key), st.offset[k], st.nbytes[k], st.shapes[k],
                      st.dtypes[k], st.layouts[k]))
    out.append('  node_mode %s' % sorted(
        (plan.index[i], m) for i, m in st.node_mode.items()))
    out.append('  lend %s' % sorted(st.lend_slot.items()))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', required=True)
    args = ap.parse_args(argv)
    import symgraph as mx
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bench = _bench(root)
    bench.mx = mx
    lines = ['symgraph from %s' % os.path.dirname(mx.__file__)]
    nets = [('mlp', bench.mlp(), (64, 784), 'write'),
            ('lenet', bench.lenet(), (64, 1, 28, 28), 'write'),
            ('resnet', bench.resnet(), (32, 3, 32, 32), 'write'),
            ('resnet_infer', bench.resnet(), (64, 3, 32, 32), 'null'),
            ('chain', bench.chain(), (16, 16), 'write')]
    before = set(k for k in linecache.cache if k.startswith('<symgraph-plan-'))
    keep = []
    for name, net, shape, req in nets:
        exe = bench.bind(net, shape, grad_req=req)
        keep.append(exe)
        for step in range(3):       # (the second and third replay the CPU backend's calls)
            exe.forward(is_train=True)
            if req != 'null':
                exe.backward()
            exe.forward(is_train=False)
            arrays = [o.asnumpy() for o in exe.outputs] + [
                g.asnumpy() for g in exe.grad_dict.values() if g is not None]
            lines.append('== values %s step %d: %s' % (name, step, hashlib.sha1(
                b''.join(a.tobytes() for a in arrays)).hexdigest()))
        lines += _storage_lines(name, exe._plan)
        inf = exe._passes.plan()
        if inf is not None:
            lines += _storage_lines(name + ' inference', inf)
        # the other variants the executor may ask for (monitors, unbuffered, ready hooks)
        plan = exe._plan
        for is_train in (False, True):
            for monitor in (0, 2):
                for buffered in (False, True):
                    plan.forward_fn(is_train, monitor, buffered=buffered)
        if req != 'null':
            for monitor in (0, 2):
                for buffered in (False, True):
                    for ready in (False, True):
                        plan.backward_fn(monitor, buffered, ready)
    made = sorted((k for k in linecache.cache if k.startswith('<symgraph-plan-')
                   and k not in before), key=lambda k: int(re.search(r'-(\d+)-', k).group(1)))
    for j, fname in enumerate(made):
        kind = fname.rsplit('-', 1)[1]
        lines.append('== source %d %s' % (j, kind))
        lines += [s.rstrip('\n') for s in linecache.cache[fname][2]]
    with open(args.out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('%d generated sources, %d plans written to %s'
          % (len(made), sum(1 for s in lines if s.startswith('== storage')), args.out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
