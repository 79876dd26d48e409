"""JSON round trip through MXNet 1.9.1 of every operator issue 15 added, with MXNet's values.

    python tests/golden/make_ops15.py --write-ours                         # symgraph's venv
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_ops15.py --mxnet

The first builds, with symgraph, one graph per OpCase row of each operator in ``OPS`` (the
row's operator on variables named after its arguments, node name ``node``) plus the
sampling cases of ``SAMPLING`` (large enough to compare distributions), and writes
``data/ops15/ours.json`` (symgraph's JSON of each graph, the inputs' names and dtypes, which
arguments get gradients, training mode) and ``data/ops15/inputs.npz`` (``<case>/in:<name>``
the inputs, ``<case>/head:<i>`` the head gradients).

The second loads each of symgraph's JSON files with ``mx.sym.load_json`` in MXNet 1.9.1
(its native CPU operators), binds the inputs, runs forward and backward and writes
``data/ops15/mxnet.json`` (MXNet's own ``tojson()`` of the loaded graph, its argument/output
names, ``infer_shape``/``infer_type`` results, or the error of the step that failed) and
``data/ops15/mxnet.npz`` (``<case>/out:<i>``, ``<case>/grad:<name>``).

tests/ops/test_issue15_coverage.py checks that symgraph still writes the same JSON, that
symgraph's forward and gradients equal MXNet's (sampling operators: by distribution), and
that MXNet's JSON loads in symgraph as the same graph with the same values.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, 'data', 'ops15')

#: the operators issue 15 lists, by family, as the issue names them (aliases included)
OPS = {
    'control flow': ['_foreach', '_while_loop', '_cond'],
    'detection and vision': [
        '_contrib_DeformableConvolution', '_contrib_ModulatedDeformableConvolution',
        '_contrib_PSROIPooling', '_contrib_DeformablePSROIPooling', '_contrib_RROIAlign',
        '_contrib_box_encode', '_contrib_box_decode', '_contrib_BatchNormWithReLU', 'im2col',
        'col2im', '_image_adjust_lighting', '_image_crop', '_image_flip_left_right',
        '_image_flip_top_bottom', '_image_normalize', '_image_random_brightness',
        '_image_random_color_jitter', '_image_random_contrast',
        '_image_random_flip_left_right', '_image_random_flip_top_bottom', '_image_random_hue',
        '_image_random_lighting', '_image_random_saturation', '_image_resize',
        '_image_to_tensor'],
    'attention and linear algebra': [
        '_contrib_interleaved_matmul_selfatt_qk', '_contrib_interleaved_matmul_selfatt_valatt',
        '_contrib_interleaved_matmul_encdec_qk', '_contrib_interleaved_matmul_encdec_valatt',
        '_linalg_gelqf', 'linalg_gelqf', '_linalg_syevd', '_square_sum',
        '_contrib_count_sketch', '_contrib_fft', '_contrib_ifft', '_contrib_quadratic',
        '_contrib_allclose', '_contrib_index_array', '_contrib_boolean_mask',
        '_contrib_hawkesll', '_contrib_gradientmultiplier', '_contrib_round_ste',
        '_contrib_sign_ste', '_contrib_calibrate_entropy'],
    'indexing and shape': [
        '_split_v2', '_ravel_multi_index', 'ravel_multi_index', '_unravel_index',
        'unravel_index', '_scatter_set_nd', '_histogram', '_zeros_without_dtype',
        'cast_storage'],
    'mixed precision and multi-tensor': [
        'amp_cast', 'amp_multicast', 'multi_all_finite', 'multi_sum_sq', 'multi_lars',
        'reset_arrays', 'multi_sgd_update', 'multi_sgd_mom_update', 'multi_mp_sgd_update',
        'multi_mp_sgd_mom_update', 'preloaded_multi_sgd_update',
        'preloaded_multi_sgd_mom_update', 'preloaded_multi_mp_sgd_update',
        'preloaded_multi_mp_sgd_mom_update', '_multi_adamw_update', '_multi_mp_adamw_update',
        '_multi_lamb_update', '_multi_mp_lamb_update', 'lamb_update_phase1',
        'lamb_update_phase2', 'mp_lamb_update_phase1', 'mp_lamb_update_phase2',
        '_contrib_group_adagrad_update'],
    'random': [
        '_sample_uniform', '_sample_normal', '_sample_gamma', 'sample_gamma',
        '_sample_exponential', 'sample_exponential', '_sample_poisson', 'sample_poisson',
        '_sample_negative_binomial', 'sample_negative_binomial',
        '_sample_generalized_negative_binomial', 'sample_generalized_negative_binomial',
        '_sample_multinomial', 'sample_multinomial', '_sample_unique_zipfian',
        '_random_uniform_like', '_random_normal_like', '_random_gamma_like',
        '_random_exponential_like', '_random_poisson_like', '_random_negative_binomial_like',
        '_random_generalized_negative_binomial_like',
        '_random_pdf_uniform', 'random_pdf_uniform', '_random_pdf_normal', 'random_pdf_normal',
        '_random_pdf_gamma', 'random_pdf_gamma', '_random_pdf_exponential',
        'random_pdf_exponential', '_random_pdf_poisson', 'random_pdf_poisson',
        '_random_pdf_negative_binomial', 'random_pdf_negative_binomial',
        '_random_pdf_generalized_negative_binomial',
        'random_pdf_generalized_negative_binomial', '_random_pdf_dirichlet',
        'random_pdf_dirichlet'],
}

#: operators whose round trip is not in this file, and where it is instead (or why none)
ELSEWHERE = {
    '_foreach': 'subgraphs: tests/golden/make_control_flow.py (ours_control_flow/, verified '
                'by MXNet; MXNet-written JSON in data/control_flow.json)',
    '_while_loop': 'subgraphs: tests/golden/make_control_flow.py (as _foreach)',
    '_cond': 'subgraphs: tests/golden/make_control_flow.py (as _foreach)',
    'reset_arrays': 'no outputs: MXNet 1.9.1 crashes on mx.sym.reset_arrays (imperative '
                    'golden data in make_amp_multi.py)',
    '_contrib_boolean_mask': "the output length depends on the values: MXNet 1.9.1's graph "
                             'executor cannot bind it (dynamic shape)',
}

#: sampling cases: (operator, attrs, {input: array}) -- samples compared by distribution
_R = np.random.RandomState(15)
SAMPLING = {
    'sample_uniform': ('_sample_uniform', {'shape': (800,)},
                       {'low': np.array([0.0, -2.0]), 'high': np.array([1.0, 3.0])}),
    'sample_normal': ('_sample_normal', {'shape': (800,)},
                      {'mu': np.array([0.0, 2.0]), 'sigma': np.array([1.0, 0.5])}),
    'sample_gamma': ('_sample_gamma', {'shape': (800,)},
                     {'alpha': np.array([0.5, 3.0]), 'beta': np.array([1.0, 2.0])}),
    'sample_exponential': ('_sample_exponential', {'shape': (800,)},
                           {'lam': np.array([0.5, 4.0])}),
    'sample_poisson': ('_sample_poisson', {'shape': (800,)}, {'lam': np.array([1.5, 20.0])}),
    'sample_negative_binomial': ('_sample_negative_binomial', {'shape': (800,)},
                                 {'k': np.array([3.0, 10.0]), 'p': np.array([0.3, 0.8])}),
    'sample_generalized_negative_binomial': (
        '_sample_generalized_negative_binomial', {'shape': (800,)},
        {'mu': np.array([2.0, 6.0]), 'alpha': np.array([0.5, 0.1])}),
    'sample_multinomial': ('_sample_multinomial', {'shape': (800,)},
                           {'data': np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])}),
    'sample_unique_zipfian': ('_sample_unique_zipfian', {'range_max': 200,
                                                         'shape': (400, 8)}, {}),
    'random_uniform_like': ('_random_uniform_like', {'low': -1.0, 'high': 2.0},
                            {'data': np.zeros(1600)}),
    'random_normal_like': ('_random_normal_like', {'loc': 1.0, 'scale': 2.0},
                           {'data': np.zeros(1600)}),
    'random_gamma_like': ('_random_gamma_like', {'alpha': 2.0, 'beta': 0.5},
                          {'data': np.zeros(1600)}),
    'random_exponential_like': ('_random_exponential_like', {'lam': 3.0},
                                {'data': np.zeros(1600)}),
    'random_poisson_like': ('_random_poisson_like', {'lam': 4.0}, {'data': np.zeros(1600)}),
    'random_negative_binomial_like': ('_random_negative_binomial_like', {'k': 5, 'p': 0.4},
                                      {'data': np.zeros(1600)}),
    'random_generalized_negative_binomial_like': (
        '_random_generalized_negative_binomial_like', {'mu': 3.0, 'alpha': 0.3},
        {'data': np.zeros(1600)}),
}


#: Python functions the issue names beside the operators (MXNet registers no such operator)
FUNCTIONS = {'split_v2': '_split_v2', 'contrib.foreach': '_foreach',
             'contrib.while_loop': '_while_loop', 'contrib.cond': '_cond'}


#: arguments MXNet 1.9.1 differentiates, where symgraph gives more gradients (hawkesll: MXNet
#: leaves state's gradient at zero and ignores out_state's head gradient, so that head is 0;
#: README, differences from MXNet)
MXNET_GRADS = {'_contrib_hawkesll': ('lda', 'alpha', 'beta')}
ZERO_HEADS = {'_contrib_hawkesll': (1,)}


#: cases beside the OpCase rows (another mixed-precision phase 1: t=2, beta1, rescale_grad)
_E = np.random.RandomState(16)
EXTRA = {
    'mp_lamb_update_phase1_f16': (
        'mp_lamb_update_phase1', {'t': 2, 'wd': 0.1, 'beta1': 0.8, 'rescale_grad': 0.5},
        {'weight': _E.uniform(-1, 1, (3, 4)).astype('float16'),
         'grad': _E.uniform(-1, 1, (3, 4)).astype('float16'),
         'mean': _E.uniform(-1, 1, (3, 4)).astype('float32'),
         'var': _E.uniform(0, 1, (3, 4)).astype('float32'),
         'weight32': _E.uniform(-1, 1, (3, 4)).astype('float32')}),
}


def issue_ops():
    return [n for names in OPS.values() for n in names]


# ---------------------------------------------------------------------------
# symgraph side


def _opcase_rows():
    """{canonical name: [OpCase]} of every tests/ops module."""
    import glob
    import importlib
    from symgraph.opdef import get_op
    ops_dir = os.path.join(HERE, '..', 'ops')
    for p in (ops_dir, HERE):
        if p not in sys.path:
            sys.path.insert(0, p)
    from harness import ALL_CASES
    for path in sorted(glob.glob(os.path.join(ops_dir, 'test_*.py'))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name not in ('test_registry', 'test_issue15_coverage'):
            importlib.import_module(name)
    rows = {}
    for c in ALL_CASES:
        rows.setdefault(get_op(c.op).name, []).append(c)
    return rows


def _dtype_of(case):
    return case.dtypes[0]


def build_cases(mx):
    """[(case id, operator, symbol, {input: array}, [grad names], is_train, kind)]."""
    from symgraph.opdef import get_op
    rows = _opcase_rows()
    out = []
    seen = set()
    sampled = {op for op, _, _ in SAMPLING.values()}
    for name in issue_ops():
        canon = get_op(name).name
        if canon in seen or name in ELSEWHERE or canon in sampled:
            continue
        seen.add(canon)
        for k, case in enumerate(rows.get(canon, [])):
            op = case.make_op()
            args = op.list_arguments()
            names = args + op.list_auxiliary_states()
            inputs = case.make_inputs(_dtype_of(case))
            variables = {n: mx.sym.var(n) for n in names}
            with mx.name.NameManager():
                sym = getattr(mx.sym, case.op)(name='node', **variables, **case.attrs)
            grads = []
            if not op.no_grad:
                if case.grad == 'all':
                    grads = [args[i] for i in range(len(args)) if inputs[i].dtype.kind == 'f']
                else:
                    grads = [args[i] for i in case.grad]
            if canon in MXNET_GRADS:
                grads = [g for g in grads if g in MXNET_GRADS[canon]]
            kind = 'either_flip' if canon.startswith('_image_random_flip') else \
                'random' if case.seed is not None else 'exact'
            out.append(('%s#%d' % (canon, k), canon, sym, dict(zip(names, inputs)), grads,
                        case.is_train, kind))
    for cid, (op, attrs, ins) in EXTRA.items():
        variables = {n: mx.sym.var(n) for n in ins}
        with mx.name.NameManager():
            sym = getattr(mx.sym, op)(name='node', **variables, **attrs)
        out.append((cid, op, sym, ins, [], False, 'exact'))
    for cid, (op, attrs, ins) in SAMPLING.items():
        variables = {n: mx.sym.var(n) for n in ins}
        with mx.name.NameManager():
            sym = getattr(mx.sym, op)(name='node', **variables, **attrs)
        out.append((cid, op, sym, {k: v.astype('float32') for k, v in ins.items()}, [],
                    False, 'distribution'))
    return out


def write_ours(mx):
    os.makedirs(DIR, exist_ok=True)
    meta, arrays = {}, {}
    rng = np.random.RandomState(3)
    for cid, op, sym, ins, grads, train, kind in build_cases(mx):
        for k, v in ins.items():
            arrays['%s/in:%s' % (cid, k)] = v
        heads = []
        if grads:
            ex = sym.bind(mx.cpu(), {k: mx.nd.array(v, dtype=v.dtype) for k, v in ins.items()
                                     if k in sym.list_arguments()},
                          aux_states={k: mx.nd.array(v, dtype=v.dtype) for k, v in ins.items()
                                      if k in sym.list_auxiliary_states()}, grad_req='null')
            outs = ex.forward(is_train=train)
            for i, o in enumerate(outs):
                h = rng.uniform(-1, 1, o.shape).astype(o.dtype)
                if i in ZERO_HEADS.get(op, ()):
                    h[...] = 0
                arrays['%s/head:%d' % (cid, i)] = h
                heads.append(i)
        meta[cid] = {'op': op, 'json': sym.tojson(), 'inputs': sorted(ins),
                     'arguments': sym.list_arguments(), 'aux': sym.list_auxiliary_states(),
                     'grads': grads, 'train': bool(train), 'kind': kind,
                     'heads': len(heads)}
    with open(os.path.join(DIR, 'ours.json'), 'w') as f:
        json.dump(meta, f, indent=0, sort_keys=True)
    np.savez_compressed(os.path.join(DIR, 'inputs.npz'), **arrays)
    return meta


# ---------------------------------------------------------------------------
# MXNet side


def _imperative(mx, op, rec, ins):
    """MXNet's value of an operator its graph executor cannot run (see IMPERATIVE)."""
    attrs = [n for n in json.loads(rec['json'])['nodes'] if n['op'] != 'null'][0]
    attrs = attrs.get('attrs', {})
    arrays = {k: mx.nd.array(v, dtype=v.dtype) for k, v in ins.items()}
    if op == '_scatter_set_nd':        # MXNet's only use: out= its lhs
        lhs = arrays['lhs']
        mx.nd._internal._scatter_set_nd(lhs, arrays['rhs'], arrays['indices'], out=lhs,
                                        **attrs)
        return [lhs]
    if op == '_square_sum':            # implemented for row_sparse data only
        return [mx.nd._internal._square_sum(arrays['data'].tostype('row_sparse'), **attrs)]
    if op == '_zeros_without_dtype':    # the graph cannot decide its dtype
        return [mx.nd._internal._zeros_without_dtype(**attrs)]
    raise AssertionError(op)


#: operators MXNet 1.9.1's graph executor cannot run on the CPU; their forward is taken from
#: the imperative call, as MXNet's own code uses them
IMPERATIVE = {
    '_scatter_set_nd': 'MXNet checks that its output is its lhs array (out=lhs in '
                       'mx.nd); a graph output never is ("inputs[0].dptr_ == '
                       'outputs[0].dptr_" fails)',
    '_square_sum': 'MXNet implements it for row_sparse data only (dense: "Operator not '
                   'implemented"); its value is taken on the same data as row_sparse',
    '_zeros_without_dtype': 'dtype -1: the graph executor cannot decide its output type '
                            '("InferType pass cannot decide dtypes")',
}


def _mxnet_one(mx, cid, rec, z):
    """MXNet's record of one case and its arrays; each failing step is recorded."""
    res, arrays = {}, {}
    sym = mx.sym.load_json(rec['json'])
    res['json'] = sym.tojson()
    res['arguments'] = sym.list_arguments()
    res['aux'] = sym.list_auxiliary_states()
    res['outputs'] = sym.list_outputs()
    ins = {k: z['%s/in:%s' % (cid, k)] for k in rec['inputs']}
    errors = {}

    def attempt(step, fn):
        try:
            return fn()
        except Exception as exc:        # recorded: the test knows which steps MXNet refuses
            msg = [m for m in str(exc).strip().splitlines() if m.strip()]
            errors[step] = '%s: %s' % (type(exc).__name__, (msg[:1] + msg[-1:])[-1][:300])
            return None

    def shapes():
        a, o, x = sym.infer_shape_partial(**{k: v.shape for k, v in ins.items()})
        return [[list(s) for s in part] for part in (a, o, x)]

    def types():
        if not ins:
            return None
        a, o, x = sym.infer_type(**{k: v.dtype for k, v in ins.items()})
        return [[np.dtype(t).name for t in part] for part in (a, o, x)]

    res['infer_shape'] = attempt('infer_shape', shapes)
    res['infer_type'] = attempt('infer_type', types)
    args = {k: mx.nd.array(ins[k], dtype=ins[k].dtype) for k in res['arguments']}
    aux = {k: mx.nd.array(ins[k], dtype=ins[k].dtype) for k in res['aux']}

    def forward(with_grads):
        mx.random.seed(0)
        grads = {k: mx.nd.zeros(args[k].shape, dtype=args[k].dtype)
                 for k in (rec['grads'] if with_grads else [])}
        req = {k: ('write' if k in grads else 'null') for k in args}
        ex = sym.bind(mx.cpu(), {k: v.copy() for k, v in args.items()},
                      args_grad=grads or None, grad_req=req,
                      aux_states={k: v.copy() for k, v in aux.items()})
        outs = [o.asnumpy() for o in ex.forward(is_train=rec['train'] or with_grads)]
        return ex, outs, grads

    got = attempt('forward', lambda: forward(bool(rec['grads'])))
    if got is None and rec['grads']:
        errors['backward'] = errors.pop('forward')
        got = attempt('forward', lambda: forward(False))
    if got is None and rec['op'] in IMPERATIVE:
        outs = attempt('imperative', lambda: [o.asnumpy() for o in
                                              _imperative(mx, rec['op'], rec, ins)])
        if outs is not None:
            res['imperative'] = True
            got = None, outs, {}
    if got is not None:
        ex, outs, grads = got
        for i, o in enumerate(outs):
            arrays['%s/out:%d' % (cid, i)] = o
        if grads:
            heads = [mx.nd.array(z['%s/head:%d' % (cid, i)]) for i in range(rec['heads'])]
            got = attempt('backward', lambda: (ex.backward(heads), {
                k: g.asnumpy() for k, g in grads.items()})[1])
            for k, g in (got or {}).items():
                arrays['%s/grad:%s' % (cid, k)] = g
    res['errors'] = errors
    return res, arrays


#: operators MXNet 1.9.1 runs only through oneDNN (no FCompute: its native CPU build
#: segfaults): their cases run with MXNET_MKLDNN_ENABLED=1
ONEDNN_ONLY = ('_contrib_BatchNormWithReLU',)
TMP = os.path.join(DIR, 'tmp')


def run_child(mx, first, onednn):
    """Cases from index ``first`` on (those of the oneDNN group when ``onednn``), each
    written to TMP as it finishes; 'STEP <case> <step>' lines tell the parent where a crash
    happened."""
    with open(os.path.join(DIR, 'ours.json')) as f:
        ours = json.load(f)
    z = np.load(os.path.join(DIR, 'inputs.npz'))
    for cid in sorted(ours)[first:]:
        if (ours[cid]['op'] in ONEDNN_ONLY) != onednn:
            continue
        print('STEP %s run' % cid, flush=True)
        res, arrs = _mxnet_one(mx, cid, ours[cid], z)
        if onednn:
            res['onednn'] = True
        np.savez(os.path.join(TMP, cid + '.npz'), **arrs)
        with open(os.path.join(TMP, cid + '.json'), 'w') as f:
            json.dump(res, f)
        print('%-60s %s' % (cid, res['errors'] or 'ok'), flush=True)


def run_mxnet():
    """Every case in a child process; a case that kills MXNet is recorded as a crash."""
    import shutil
    import subprocess
    with open(os.path.join(DIR, 'ours.json')) as f:
        cids = sorted(json.load(f))
    os.makedirs(TMP, exist_ok=True)
    for onednn in (False, True):
        first = 0
        while first < len(cids):
            env = dict(os.environ, MXNET_MKLDNN_ENABLED='1' if onednn else '0',
                       MXNET_STORAGE_FALLBACK_LOG_VERBOSE='0')
            p = subprocess.run([sys.executable, os.path.abspath(__file__), '--mxnet-child',
                                str(first), str(int(onednn))], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            print(p.stdout, end='')
            if p.returncode == 0:
                break
            steps = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith('STEP ')]
            crashed = steps[-1]
            tail = [ln for ln in p.stdout.splitlines() if ln.strip()][-3:]
            with open(os.path.join(TMP, crashed + '.json'), 'w') as f:
                json.dump({'errors': {'forward': 'crash: ' + ' / '.join(tail[1:])}}, f)
            np.savez(os.path.join(TMP, crashed + '.npz'))
            print('%-60s CRASH %s' % (crashed, tail))
            first = cids.index(crashed) + 1
    version = subprocess.run([sys.executable, '-c', 'import mxnet; print(mxnet.__version__)'],
                             stdout=subprocess.PIPE, text=True, check=True).stdout.split()[-1]
    meta, arrays = {'mxnet_version': version}, {}
    for cid in cids:
        with open(os.path.join(TMP, cid + '.json')) as f:
            meta[cid] = json.load(f)
        with np.load(os.path.join(TMP, cid + '.npz')) as z:
            arrays.update((k, z[k]) for k in z.files)
    shutil.rmtree(TMP)
    with open(os.path.join(DIR, 'mxnet.json'), 'w') as f:
        json.dump(meta, f, indent=0, sort_keys=True)
    np.savez_compressed(os.path.join(DIR, 'mxnet.npz'), **arrays)
if __name__ == '__main__':
    if '--write-ours' in sys.argv:
        sys.path.insert(0, os.path.join(HERE, '..', '..'))
        import symgraph
        print('wrote %d cases to %s' % (len(write_ours(symgraph)), DIR))
    elif '--mxnet-child' in sys.argv:
        import mxnet
        i = sys.argv.index('--mxnet-child')
        run_child(mxnet, int(sys.argv[i + 1]), sys.argv[i + 2] == '1')
    elif '--mxnet' in sys.argv:
        run_mxnet()
    else:
        sys.exit(__doc__)
