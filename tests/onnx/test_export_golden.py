"""Every graph of the MXNet-made golden compute cases (tests/golden/data/compute.json:
MXNet's JSON, inputs and states) exported to ONNX: each one either exports and runs in
ONNX Runtime to symgraph's inference forward, or is refused with the export error, by an
operator of a known list of operators that have no ONNX form here."""
import json
import os
import re
import warnings

import numpy as np
import pytest

import symgraph as mx

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

from symgraph.onnx import ExportError  # noqa: E402
from symgraph.onnx.export import export_onnx_model  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data')
with open(os.path.join(DATA, 'compute.json')) as _f:
    CASES = json.load(_f)

#: operators of the golden graphs with no converter: linear algebra (factorizations,
#: triangular solves), gamma functions, image augmenters, im2col/col2im, optimizer
#: updates, CTCLoss, MultiBoxTarget, histograms (a converter added: take its name off)
NO_FORM = {
    'CTCLoss', '_contrib_MultiBoxTarget', '_contrib_calibrate_entropy', '_histogram',
    '_image_adjust_lighting', '_image_random_brightness', '_image_random_contrast',
    '_image_random_hue', '_image_random_lighting', '_image_random_saturation',
    '_image_resize', '_linalg_det', '_linalg_extracttrian', '_linalg_gelqf',
    '_linalg_inverse', '_linalg_maketrian', '_linalg_potrf', '_linalg_potri',
    '_linalg_slogdet', '_linalg_sumlogdiag', '_linalg_syevd', '_linalg_syrk', '_linalg_trmm',
    '_linalg_trsm', '_random_pdf_exponential', '_random_pdf_gamma', '_random_pdf_normal',
    'col2im', 'gamma', 'gammaln', 'im2col', 'sgd_update', 'signsgd_update'}
#: cases ONNX Runtime cannot run (a kernel it lacks) or known wrong elsewhere
SKIP = {'legacy_conv_v1_f64': 'ONNX Runtime has no float64 Conv kernel'}
XFAIL = {}


def _case(name):
    v = CASES[name]
    z = np.load(os.path.join(DATA, 'compute', name + '.npz'))
    args = {k[4:]: z[k] for k in z.files if k.startswith('arg:')}
    aux = {}
    for k in z.files:
        if k.startswith('aux:'):
            init = 'aux_init:' + k[4:]
            aux[k[4:]] = z[init] if init in z.files else z[k]
    return v, mx.sym.load_json(v['json']), args, aux


def _export(sym, args, aux):
    names = [n for n in sym.list_inputs() if n not in aux]
    if any(n not in args for n in names):
        return None, names
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')         # custom-domain warnings: asserted elsewhere
        model = export_onnx_model(sym, aux, [args[n].shape for n in names],
                                  [args[n].dtype for n in names])
    return model, names


NAMES = sorted(n for n, v in CASES.items() if not v.get('custom'))


def test_every_refusal_is_an_operator_without_onnx_form():
    refused = set()
    for name in NAMES:
        _, sym, args, aux = _case(name)
        try:
            _export(sym, args, aux)
        except ExportError as e:
            refused.add(re.search(r'operator (\S+),', str(e)).group(1))
    assert refused <= NO_FORM, 'converter missing for %s' % sorted(refused - NO_FORM)


def _params():
    out = []
    for n in NAMES:
        marks = []
        if n in SKIP:
            marks.append(pytest.mark.skip(reason=SKIP[n]))
        if n in XFAIL:
            marks.append(pytest.mark.xfail(reason=XFAIL[n], strict=True))
        out.append(pytest.param(n, marks=marks))
    return out


@pytest.mark.slow
@pytest.mark.parametrize('name', _params())
def test_golden_graph_exports_and_runs_like_symgraph(name):
    v, sym, args, aux = _case(name)
    try:
        model, names = _export(sym, args, aux)
    except ExportError as e:
        assert re.search(r'operator (\S+),', str(e)).group(1) in NO_FORM
        return
    if model is None:
        pytest.skip('the case gives no value for %s' % names)
    onnx.checker.check_model(model)
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(args[k], dtype=args[k].dtype) for k in names},
                   aux_states={k: mx.nd.array(a, dtype=a.dtype) for k, a in aux.items()}
                   or None, grad_req='null')
    exe.forward(is_train=False)
    sess = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    got = sess.run(None, {i.name: args[i.name] for i in sess.get_inputs()})
    for k, (r, o) in enumerate(zip((o.asnumpy() for o in exe.outputs), got)):
        if k in v.get('ignore_outputs', []):
            continue
        assert o.shape == r.shape and o.dtype == r.dtype, (k, o.shape, o.dtype, r.shape,
                                                           r.dtype)
        finite = np.abs(r[np.isfinite(r)]) if r.dtype.kind == 'f' else np.abs(r)
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        rtol, atol = (1e-3, 1e-3 * scale) if r.dtype == np.float16 else (1e-4, 1e-5 * scale)
        np.testing.assert_allclose(o, r, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg='output %d' % k)
