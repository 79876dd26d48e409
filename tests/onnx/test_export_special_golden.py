"""The MXNet 1.9.1 golden cases (tests/golden/data/compute.json and compute/*.npz, made by
tests/golden/make_graphs.py) of every operator the special converters handle: the graph
as MXNet wrote it, exported, and ONNX Runtime's outputs on MXNet's inputs against
MXNet's outputs (the case's tolerances; NMS, sorts and indices exactly where the case
says so)."""
import ast
import json
import os

import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import export, run_onnx

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
GOLDEN = os.path.join(ROOT, 'tests', 'golden', 'data')
MODULES = ('_convert_misc', '_convert_detection', '_convert_roi', '_convert_rnn',
           '_convert_control')
#: operators with no converter that appear beside the special ones (training only)
TRAINING_ONLY = {'_contrib_MultiBoxTarget'}


def _special_ops():
    names = set()
    for mod in MODULES:
        with open(os.path.join(ROOT, 'symgraph', 'onnx', mod + '.py')) as f:
            tree = ast.parse(f.read())
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and getattr(n.func, 'id', None) in ('converter', 'claim'):
                names.update(a.value for a in n.args if isinstance(a, ast.Constant))
    return names


def _cases():
    with open(os.path.join(GOLDEN, 'compute.json')) as f:
        meta = json.load(f)
    special = _special_ops()
    out = {}
    for name, case in sorted(meta.items()):
        ops = {n['op'] for n in json.loads(case['json'])['nodes']} - {'null'}
        if ops & special and not ops & TRAINING_ONLY:
            out[name] = case
    return out


CASES = _cases()


def _ops(case):
    return {n['op'] for n in json.loads(case['json'])['nodes']}


def test_the_cases_cover_the_detection_and_sequence_operators():
    ops = set().union(*(_ops(c) for c in CASES.values()))
    for op in ('_contrib_box_nms', '_contrib_MultiBoxDetection', '_contrib_Proposal',
               '_contrib_MultiProposal', 'ROIPooling', '_contrib_ROIAlign', 'topk',
               'SequenceReverse', '_contrib_BilinearResize2D', 'erfinv'):
        assert op in ops, op
    assert len(CASES) > 100


#: the operators that need a newer opset than 13 (GridSample 16, DeformConv 19)
NEWER = {'BilinearSampler': 16, 'SpatialTransformer': 16,
         '_contrib_DeformableConvolution': 19, '_contrib_ModulatedDeformableConvolution': 19}


@pytest.mark.parametrize('opset', [13, None])
@pytest.mark.parametrize('name', sorted(CASES))
def test_mxnet_golden_case(name, opset):
    """At the oldest opset the converters write (13) and at the newest (None)."""
    case = CASES[name]
    need = max([NEWER.get(op, 13) for op in _ops(case)])
    if opset is not None and opset < need:
        from symgraph.onnx import ExportError
        data = np.load(os.path.join(GOLDEN, 'compute', name + '.npz'))
        args = {k[4:]: data[k] for k in data if k.startswith('arg:')}
        with pytest.raises(ExportError, match='opset %d' % need):
            export(mx.sym.load_json(case['json']), args, opset=opset)
        return
    data = np.load(os.path.join(GOLDEN, 'compute', name + '.npz'))
    sym = mx.sym.load_json(case['json'])
    args = {k[4:]: data[k] for k in data if k.startswith('arg:')}
    aux = {k[4:]: data[k] for k in data if k.startswith('aux:')}
    if 'CTCLoss' in _ops(case):
        from symgraph.onnx import ExportError
        with pytest.raises(ExportError, match='CTCLoss is not expressible'):
            export(sym, args, aux or None, opset=opset)
        return
    got = run_onnx(export(sym, args, aux or None, opset=opset), args)
    for k, o in enumerate(got):
        key = 'p0:out:%d' % k
        if key not in data or k in case['ignore_outputs']:
            continue
        ref = data[key]
        assert o.shape == ref.shape and o.dtype == ref.dtype, (k, o.dtype, ref.dtype)
        scale = max(1.0, float(np.nanmax(np.abs(ref)))) if ref.size else 1.0
        np.testing.assert_allclose(o.astype(np.float64), ref.astype(np.float64),
                                   rtol=case['rtol'], atol=case['atol'] * scale,
                                   err_msg='output %d' % k)
