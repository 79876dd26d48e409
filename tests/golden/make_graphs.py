"""Make the golden reference data with the real MXNet 1.9.1 (never imported by the tests).

Run with the MXNet venv (Python 3.8, numpy < 1.24)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_graphs.py
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_graphs.py --verify-ours DIR

The first form regenerates everything under ``tests/golden/data/`` (deterministic: every
case seeds its own ``RandomState`` from a CRC of its name).  ``MXNET_MKLDNN_ENABLED=0`` is
forced because two of MXNet's oneDNN kernels are wrong (see MXNET_SEMANTICS.md).

Data written:

* ``names.json`` -- per builder of ``graphs.NAME_CASES``: ``tojson()``, names, attributes,
  internals, children, or the error MXNet raised.
* ``infer.json`` -- per ``graphs.INFER_CASES``: the result, warnings, or the error.
* ``compute.json`` + ``compute/<case>.npz`` -- per ``graphs.COMPUTE_CASES``: JSON, names,
  ``infer_shape`` result, and arrays ``arg:<name>``, ``aux_init:<name>`` (aux after
  ``simple_bind``), ``aux:<name>`` (aux set by the case), ``head:<i>``, and per phase ``k``
  ``p<k>:out:<i>``, ``p<k>:grad:<name>``, ``p<k>:aux:<name>``.
* ``summary.json`` -- ``mx.viz.print_summary`` text and total parameter counts.
* ``gluon_export/`` -- a Gluon HybridBlock exported by MXNet, with ``expected.npz``.

``--verify-ours DIR`` checks files written by symgraph: for every ``DIR/<p>-symbol.json``
it loads the symbol with MXNet, the parameters from ``DIR/<p>-<epoch>.params`` when there
is one (keys ``arg:``/``aux:``), and ``DIR/<p>-io.npz`` holding ``in:<name>`` (every other
argument), ``out:<i>`` (symgraph's outputs of ``forward(is_train=False)``) and optionally
``head:<i>`` and ``grad:<name>`` (then the forward is a training one followed by
``backward(head grads)``).  It prints one line per file and exits 1 on any mismatch.
"""
import argparse
import contextlib
import glob
import io
import json
import os
import re
import sys
import warnings
import zipfile
import zlib

os.environ['MXNET_MKLDNN_ENABLED'] = '0'
os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')
os.environ.setdefault('MXNET_ENGINE_TYPE', 'NaiveEngine')

import numpy as np  # noqa: E402
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import graphs  # noqa: E402

DATA = os.path.join(HERE, 'data')


def _jsonable(obj):
    """Tuples to lists, dtypes to names, recursively."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_jsonable(o) for o in obj]
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.integer):
        return int(obj)
    try:
        return np.dtype(obj).name
    except TypeError:
        return repr(obj)


def _error(exc):
    # drop MXNet's log timestamps ("[05:46:23] ") so that reruns give identical files
    message = re.sub(r'\[\d\d:\d\d:\d\d\] ', '', str(exc))
    return {'type': type(exc).__name__, 'mxnet_error': isinstance(exc, mx.base.MXNetError),
            'message': message[-1500:]}


@contextlib.contextmanager
def _record_warnings(into):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        yield
    into.extend({'category': w.category.__name__, 'message': str(w.message)}
                for w in caught)


def _write_json(name, obj):
    with open(os.path.join(DATA, name), 'w') as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write('\n')


# ---------------------------------------------------------------------------


def gen_names():
    out = {}
    for name, fn in graphs.NAME_CASES.items():
        rec = {'warnings': []}
        try:
            with _record_warnings(rec['warnings']):
                sym = graphs.fresh_build(mx, fn)
        except Exception as exc:  # recorded: the test expects the same failure
            rec['error'] = _error(exc)
            out[name] = rec
            continue
        children = sym.get_children()
        rec.update({
            'json': sym.tojson(),
            'arguments': sym.list_arguments(),
            'outputs': sym.list_outputs(),
            'aux': sym.list_auxiliary_states(),
            'inputs': sym.list_inputs(),
            'attr_dict': sym.attr_dict(),
            'list_attr': sym.list_attr(),
            'internals': sym.get_internals().list_outputs(),
            'children': None if children is None else children.list_outputs(),
            'name': sym.name if len(sym.list_outputs()) == 1 else None,
        })
        out[name] = rec
    _write_json('names.json', out)
    return len(out)


def gen_infer():
    out = {}
    for name, fn in graphs.INFER_CASES.items():
        rec = {'warnings': []}
        try:
            with _record_warnings(rec['warnings']):
                res = graphs.fresh_build(mx, fn)
            rec['result'] = _jsonable(res)
        except Exception as exc:
            rec['error'] = _error(exc)
        out[name] = rec
    _write_json('infer.json', out)
    return len(out)


def _seed(name):
    return zlib.crc32(name.encode('utf-8')) & 0x7fffffff


def run_compute_case(c):
    """Run one :class:`graphs.Case` in MXNet; return (metadata, arrays)."""
    rng = np.random.RandomState(_seed(c.name))
    sym = graphs.fresh_build(mx, c.build)
    args, outs, auxs = (sym.list_arguments(), sym.list_outputs(),
                        sym.list_auxiliary_states())
    arg_sh, out_sh, aux_sh = sym.infer_shape(**c.shapes)
    kw = dict(c.shapes)
    if c.type_dict:
        kw['type_dict'] = c.type_dict
    exe = sym.simple_bind(mx.cpu(), grad_req=c.grad_req, **kw)
    arrays = {}
    for n in auxs:
        arrays['aux_init:' + n] = exe.aux_dict[n].asnumpy()
    for n in args:
        a = c.inputs.get(n, graphs.normal())(rng, exe.arg_dict[n].shape)
        exe.arg_dict[n][:] = a
        arrays['arg:' + n] = exe.arg_dict[n].asnumpy()
    for n in auxs:
        if n in c.inputs:
            exe.aux_dict[n][:] = c.inputs[n](rng, exe.aux_dict[n].shape)
            arrays['aux:' + n] = exe.aux_dict[n].asnumpy()
    heads = []
    if c.heads == 'all':
        for i, o in enumerate(exe.outputs):
            g = rng.standard_normal(o.shape).astype(o.dtype)
            arrays['head:%d' % i] = g
            heads.append(mx.nd.array(g, dtype=o.dtype))
    for k, phase in enumerate(c.phases):
        if phase == 'train':
            for _ in range(c.steps):
                exe.forward(is_train=True)
                exe.backward(out_grads=heads if heads else None)
        else:
            exe.forward(is_train=(phase == 'fwd'))
        for i, o in enumerate(exe.outputs):
            if i not in c.ignore_outputs:
                arrays['p%d:out:%d' % (k, i)] = o.asnumpy()
        if phase == 'train':
            for n, g in exe.grad_dict.items():
                if g is not None:
                    arrays['p%d:grad:%s' % (k, n)] = g.asnumpy()
        for n in auxs:
            arrays['p%d:aux:%s' % (k, n)] = exe.aux_dict[n].asnumpy()
    meta = {
        'json': sym.tojson(), 'arguments': args, 'outputs': outs, 'aux': auxs,
        'infer_shape': _jsonable([arg_sh, out_sh, aux_sh]),
        'shapes': _jsonable(c.shapes), 'grad_req': c.grad_req, 'phases': list(c.phases),
        'steps': c.steps, 'heads': c.heads, 'rtol': c.rtol, 'atol': c.atol,
        'note': c.note, 'custom': c.custom, 'type_dict': c.type_dict,
        'ignore_outputs': list(c.ignore_outputs),
        'grad_none': sorted(n for n, g in exe.grad_dict.items() if g is None),
        'out_dtypes': [np.dtype(o.dtype).name for o in exe.outputs],
    }
    return meta, arrays


def _savez(path, arrays):
    """``np.savez_compressed`` with fixed zip timestamps: identical bytes on every run."""
    with zipfile.ZipFile(path, 'w', compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(key + '.npy', date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]),
                                      allow_pickle=False)
            zf.writestr(info, buf.getvalue())


def gen_compute_some(prefix):
    """Regenerate only the compute cases whose names start with ``prefix``, merging them
    into compute.json (under a lock: several generators may run at once)."""
    import fcntl
    os.makedirs(os.path.join(DATA, 'compute'), exist_ok=True)
    graphs.register_custom_ops(mx)
    cases = [c for c in graphs.COMPUTE_CASES if c.name.startswith(prefix)]
    results = {}
    for c in cases:
        results[c.name], arrays = run_compute_case(c)
        _savez(os.path.join(DATA, 'compute', c.name + '.npz'), arrays)
    with open(os.path.join(DATA, '.compute.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = os.path.join(DATA, 'compute.json')
        with open(path) as f:
            meta = json.load(f)
        meta.update(results)
        _write_json('compute.json', meta)
    return len(results)


def gen_compute():
    os.makedirs(os.path.join(DATA, 'compute'), exist_ok=True)
    for old in glob.glob(os.path.join(DATA, 'compute', '*.npz')):
        os.remove(old)
    graphs.register_custom_ops(mx)
    meta = {}
    for c in graphs.COMPUTE_CASES:
        meta[c.name], arrays = run_compute_case(c)
        _savez(os.path.join(DATA, 'compute', c.name + '.npz'), arrays)
    _write_json('compute.json', meta)
    return len(meta)


def gen_summary():
    out = {}
    for name, (fn, shape) in graphs.SUMMARY_CASES.items():
        sym = graphs.fresh_build(mx, fn)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            mx.viz.print_summary(sym, shape=shape)
        text = buf.getvalue()
        totals = [int(line.split(':')[1]) for line in text.splitlines()
                  if line.startswith('Total params:')]
        out[name] = {'text': text, 'shape': _jsonable(shape), 'total_params': totals[0],
                     'json': sym.tojson()}
    _write_json('summary.json', out)
    return len(out)


# ---------------------------------------------------------------------------
# Gluon export: a thin ResNet written by MXNet's own HybridBlock.export


def _gluon_net():
    from mxnet.gluon import nn

    class Residual(nn.HybridBlock):
        def __init__(self, channels, strides, **kwargs):
            super(Residual, self).__init__(**kwargs)
            self.body = nn.HybridSequential()
            self.body.add(nn.Conv2D(channels, 3, strides, 1, use_bias=False),
                          nn.BatchNorm(), nn.Activation('relu'),
                          nn.Conv2D(channels, 3, 1, 1, use_bias=False), nn.BatchNorm())
            self.down = None
            if strides != 1:
                self.down = nn.HybridSequential()
                self.down.add(nn.Conv2D(channels, 1, strides, use_bias=False),
                              nn.BatchNorm())

        def hybrid_forward(self, F, x):
            res = self.body(x)
            if self.down is not None:
                x = self.down(x)
            return F.Activation(res + x, act_type='relu')

    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, 1, 1, use_bias=False), nn.BatchNorm(), nn.Activation('relu'),
            Residual(8, 1), Residual(16, 2), Residual(24, 2),
            nn.GlobalAvgPool2D(), nn.Dropout(0.3), nn.Dense(10))
    return net


def gen_gluon():
    out_dir = os.path.join(DATA, 'gluon_export')
    os.makedirs(out_dir, exist_ok=True)
    mx.random.seed(7)
    np.random.seed(7)
    net = _gluon_net()
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net.hybridize()
    x = np.random.RandomState(11).standard_normal((2, 3, 17, 15)).astype(np.float32)
    net(mx.nd.array(x))
    # non-trivial running statistics so that a wrong aux mapping shows
    rng = np.random.RandomState(12)
    for pname, p in sorted(net.collect_params().items()):
        if pname.endswith('running_mean'):
            p.set_data(mx.nd.array(rng.standard_normal(p.shape) * 0.1))
        elif pname.endswith('running_var'):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif pname.endswith('gamma'):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif pname.endswith('beta'):
            p.set_data(mx.nd.array(rng.standard_normal(p.shape) * 0.1))
    y = net(mx.nd.array(x)).asnumpy()
    prefix = os.path.join(out_dir, 'model')
    net.export(prefix, epoch=0)
    _savez(os.path.join(out_dir, 'expected.npz'), {'data': x, 'output': y})
    sym = mx.sym.load(prefix + '-symbol.json')
    meta = {'arguments': sym.list_arguments(), 'outputs': sym.list_outputs(),
            'aux': sym.list_auxiliary_states(),
            'infer_shape': _jsonable(sym.infer_shape(data=x.shape)),
            'params_keys': sorted(mx.nd.load(prefix + '-0000.params'))}
    _write_json(os.path.join('gluon_export', 'meta.json'), meta)
    return 1


# ---------------------------------------------------------------------------


def verify_ours(directory):
    """Load symgraph-written checkpoints with MXNet and compare their outputs."""
    failures = 0
    files = sorted(glob.glob(os.path.join(directory, '*-symbol.json')))
    if not files:
        print('no *-symbol.json in %s' % directory)
        return 1
    for path in files:
        prefix = path[:-len('-symbol.json')]
        tag = os.path.basename(prefix)
        try:
            ok, msg = _verify_one(prefix)
        except Exception as exc:
            ok, msg = False, '%s: %s' % (type(exc).__name__, str(exc).splitlines()[-1:])
        failures += not ok
        print('%-4s %s: %s' % ('OK' if ok else 'FAIL', tag, msg))
    print('%d file(s), %d failure(s)' % (len(files), failures))
    return 1 if failures else 0


def _verify_one(prefix):
    sym = mx.sym.load(prefix + '-symbol.json')
    params = {}
    param_files = sorted(glob.glob(prefix + '-[0-9]*.params'))
    if param_files:
        params = mx.nd.load(param_files[-1])
    io_path = prefix + '-io.npz'
    if not os.path.exists(io_path):
        return True, 'loaded (%d args, %d params; no -io.npz to compare)' % (
            len(sym.list_arguments()), len(params))
    data = dict(np.load(io_path))
    values = {}
    for k, v in params.items():
        values[k.split(':', 1)[1]] = v.asnumpy()
    for k, v in data.items():
        if k.startswith('in:'):
            values[k[3:]] = v
    shapes = {n: values[n].shape for n in sym.list_arguments() if n in values}
    types = {n: values[n].dtype for n in sym.list_arguments() if n in values}
    train = any(k.startswith('grad:') for k in data)
    exe = sym.simple_bind(mx.cpu(), grad_req='write' if train else 'null',
                          type_dict=types, **shapes)
    for n, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        if n not in values:
            raise KeyError('no value for %s' % n)
        arr[:] = values[n]
    exe.forward(is_train=train)
    if train:
        heads = [mx.nd.array(data['head:%d' % i]) for i in range(len(exe.outputs))
                 if 'head:%d' % i in data]
        exe.backward(out_grads=heads or None)
    worst = 0.0
    for k, want in sorted(data.items()):
        if k.startswith('out:'):
            got = exe.outputs[int(k[4:])].asnumpy()
        elif k.startswith('grad:'):
            got = exe.grad_dict[k[5:]].asnumpy()
        else:
            continue
        if got.shape != want.shape:
            return False, '%s shape %s != %s' % (k, got.shape, want.shape)
        err = float(np.max(np.abs(got - want) / (1e-4 + 1e-4 * np.abs(want)), initial=0))
        worst = max(worst, err)
        if err > 1.0:
            return False, '%s max abs err %.3g' % (k, float(np.max(np.abs(got - want))))
    return True, 'matches (worst error / tolerance %.3g)' % worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--verify-ours', metavar='DIR',
                    help='check symgraph-written *-symbol.json/.params with MXNet')
    ap.add_argument('--only', choices=['names', 'infer', 'compute', 'summary', 'gluon'],
                    action='append', help='regenerate only these parts')
    ap.add_argument('--compute-cases', metavar='PREFIX',
                    help='regenerate only the compute cases named PREFIX..., merged in')
    opts = ap.parse_args(argv)
    if opts.verify_ours:
        return verify_ours(opts.verify_ours)
    if opts.compute_cases:
        print('compute  %d case(s)' % gen_compute_some(opts.compute_cases))
        return 0
    os.makedirs(DATA, exist_ok=True)
    parts = [('names', gen_names), ('infer', gen_infer), ('compute', gen_compute),
             ('summary', gen_summary), ('gluon', gen_gluon)]
    for key, fn in parts:
        if opts.only and key not in opts.only:
            continue
        print('%-8s %d case(s)' % (key, fn()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
