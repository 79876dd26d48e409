"""The special-operator converters as a whole (symgraph/onnx/_convert_{misc,detection,
rnn,control}.py): every operator they claim is registered and covered by a test here or
in tests/onnx/test_export_special_*.py; exports with a symbolic batch axis run at another
batch size; the oldest opset (13) and opset 16/21 give the same results."""
import ast
import glob
import os

import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import check, export, forward, run_onnx

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

HERE = os.path.dirname(__file__)
PACKAGE = os.path.join(HERE, '..', '..', 'symgraph', 'onnx')
MODULES = ('_convert_misc', '_convert_detection', '_convert_roi', '_convert_rnn',
           '_convert_control')

#: operator name -> the mx.sym spelling the tests use for it
SPELLING = {'_contrib_AdaptiveAvgPooling2D': 'AdaptiveAvgPooling2D',
            '_contrib_BilinearResize2D': 'BilinearResize2D',
            '_contrib_interleaved_matmul_selfatt_qk': 'interleaved_matmul_selfatt_qk',
            '_contrib_interleaved_matmul_selfatt_valatt': 'interleaved_matmul_selfatt_valatt',
            '_contrib_interleaved_matmul_encdec_qk': 'interleaved_matmul_encdec_qk',
            '_contrib_interleaved_matmul_encdec_valatt': 'interleaved_matmul_encdec_valatt',
            '_contrib_div_sqrt_dim': 'div_sqrt_dim', '_contrib_arange_like': 'arange_like',
            '_linalg_gemm2': 'gemm2', '_contrib_box_nms': 'box_nms', '_contrib_nms': '.nms(',
            '_contrib_MultiBoxPrior': 'MultiBoxPrior',
            '_contrib_MultiBoxDetection': 'MultiBoxDetection',
            '_contrib_ROIAlign': 'ROIAlign', '_contrib_Proposal': 'Proposal(',
            '_contrib_MultiProposal': 'MultiProposal', 'RNN': 'RNN(',
            '_foreach': 'foreach', '_while_loop': 'while_loop', '_cond': '.cond(',
            'CTCLoss': 'CTCLoss', '_contrib_box_iou': 'box_iou',
            '_contrib_box_decode': 'box_decode', 'SpatialTransformer': 'SpatialTransformer',
            '_contrib_DeformableConvolution': 'DeformableConvolution',
            '_contrib_ModulatedDeformableConvolution': 'ModulatedDeformableConvolution',
            '_contrib_PSROIPooling': 'PSROIPooling', '_contrib_RROIAlign': 'RROIAlign',
            'Correlation': 'Correlation',
            '_contrib_DeformablePSROIPooling': 'DeformablePSROIPooling',
            '_contrib_box_encode': 'box_encode',
            '_contrib_bipartite_matching': 'bipartite_matching'}


def _read(path):
    with open(path) as f:
        return f.read()


def _claimed():
    """The operator names the modules register (read from their source)."""
    names = {}
    for mod in MODULES:
        tree = ast.parse(_read(os.path.join(PACKAGE, mod + '.py')))
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and getattr(n.func, 'id', None) in ('converter', 'claim'):
                for a in n.args:
                    if isinstance(a, ast.Constant):
                        names[a.value] = mod
    return names


def test_every_claimed_operator_is_registered_and_tested():
    from symgraph.onnx._registry import CONVERTERS
    from symgraph.onnx.export import get_operator_support
    supported = set(get_operator_support())
    tests = ''.join(_read(p) for p in glob.glob(os.path.join(HERE, 'test_export_special*.py')))
    claimed = _claimed()
    assert len(claimed) >= 35
    for name, mod in claimed.items():
        assert name in supported
        assert CONVERTERS[name].__module__ == 'symgraph.onnx.' + mod, name
        spelled = SPELLING.get(name, name)
        assert spelled in tests, 'no test spells %s (%s)' % (name, spelled)


# --------------------------------------------------------------------- dynamic batch
def _dynamic(sym, make_inputs, params=None):
    """Export with the batch symbolic at batch 2, run at batch 3."""
    model = export(sym, make_inputs(2), params, dynamic=True)
    inputs = make_inputs(3)
    ref = forward(sym, inputs, params)
    got = run_onnx(model, inputs)
    for r, o in zip(ref, got):
        assert r.shape == o.shape
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5)


def test_dynamic_batch_box_nms_and_sorts():
    rng = np.random.RandomState(0)
    x = mx.sym.var('x')
    sym = mx.sym.Group([mx.sym.contrib.box_nms(x, id_index=0, topk=6),
                        mx.sym.topk(x, axis=1, k=3, ret_typ='both')])

    def make(b):
        d = rng.uniform(0, 5, (b, 12, 6)).astype(np.float32)
        d[..., 0] = rng.randint(0, 3, (b, 12))
        d[..., 4:] += d[..., 2:4]
        return {'x': d}
    _dynamic(sym, make)


def test_dynamic_batch_sequence_resize_rnn():
    rng = np.random.RandomState(1)
    x, ln, img = mx.sym.var('x'), mx.sym.var('len'), mx.sym.var('img')
    p, h0 = mx.sym.var('p'), mx.sym.var('h0')
    rnn = mx.sym.RNN(x, p, h0, mode='gru', state_size=4, num_layers=1, state_outputs=True)
    sym = mx.sym.Group([mx.sym.SequenceMask(x, ln, use_sequence_length=True),
                        mx.sym.SequenceLast(x, ln, use_sequence_length=True),
                        mx.sym.SequenceReverse(x, ln, use_sequence_length=True),
                        mx.sym.contrib.BilinearResize2D(img, height=5, width=3),
                        mx.sym.contrib.AdaptiveAvgPooling2D(img, output_size=(2, 3)),
                        rnn[0], rnn[1]])
    params = {'p': (0.3 * rng.standard_normal(3 * 4 * (3 + 4 + 2))).astype(np.float32)}

    def make(b):
        return {'x': rng.standard_normal((6, b, 3)).astype(np.float32),
                'len': rng.randint(0, 7, b).astype(np.float32),
                'img': rng.standard_normal((b, 2, 7, 6)).astype(np.float32),
                'h0': rng.standard_normal((1, b, 4)).astype(np.float32)}
    _dynamic(sym, make, params)


def test_dynamic_batch_detection_heads():
    rng = np.random.RandomState(3)
    cls, loc, anchor, img, rois = (mx.sym.var(n) for n in ('cls', 'loc', 'anchor', 'img',
                                                           'rois'))
    sym = mx.sym.Group([
        mx.sym.contrib.MultiBoxDetection(mx.sym.softmax(cls, axis=1), loc, anchor,
                                         nms_threshold=0.4),
        mx.sym.contrib.ROIAlign(img, rois, pooled_size=(2, 2), spatial_scale=0.5),
        mx.sym.ROIPooling(img, rois, pooled_size=(2, 3), spatial_scale=0.5)])
    anchors = rng.uniform(0, 0.7, (1, 16, 2))
    anchors = np.concatenate([anchors, anchors + rng.uniform(0.1, 0.3, (1, 16, 2))], axis=-1)

    def make(b):
        return {'cls': rng.standard_normal((b, 3, 16)).astype(np.float32),
                'loc': (0.3 * rng.standard_normal((b, 64))).astype(np.float32),
                'anchor': anchors.astype(np.float32),
                'img': rng.standard_normal((b, 2, 6, 8)).astype(np.float32),
                'rois': np.array([[0, 1, 1, 9, 7], [1, 0, 2, 13, 4], [b - 1, 3, 3, 5, 5]],
                                 np.float32)}
    _dynamic(sym, make)


def test_dynamic_batch_multi_proposal():
    rng = np.random.RandomState(5)
    cls, bbox, info = (mx.sym.var(n) for n in ('cls', 'bbox', 'info'))
    sym = mx.sym.contrib.MultiProposal(cls, bbox, info, feature_stride=8, scales=(2, 4),
                                       ratios=(0.5, 1, 2), rpn_pre_nms_top_n=50,
                                       rpn_post_nms_top_n=12, output_score=True)

    def make(b):
        return {'cls': rng.uniform(0, 1, (b, 12, 4, 5)).astype(np.float32),
                'bbox': (0.2 * rng.standard_normal((b, 24, 4, 5))).astype(np.float32),
                'info': np.tile(np.array([[32, 40, 1.0]], np.float32), (b, 1))}
    _dynamic(sym, make)


# ------------------------------------------------------------------------ opsets
@pytest.mark.parametrize('opset', [13, 16, 21])
def test_opsets(opset):
    """The converters' opset-dependent forms (Reduce* axes, RoiAlign's transformation
    mode, GridSample from 16) at the oldest and at later opsets."""
    rng = np.random.RandomState(2)
    x, rois, img, grid = (mx.sym.var(n) for n in ('x', 'rois', 'img', 'grid'))
    outs = [mx.sym.contrib.ROIAlign(img, rois, pooled_size=(2, 2), spatial_scale=0.5),
            mx.sym.contrib.box_nms(x, topk=5), mx.sym.sort(x, axis=1)]
    inputs = {'x': rng.uniform(0, 4, (2, 10, 6)).astype(np.float32),
              'rois': np.array([[0, 1, 1, 6, 7], [1, 0, 2, 9, 4]], np.float32),
              'img': rng.standard_normal((2, 3, 6, 8)).astype(np.float32)}
    if opset >= 16:
        outs.append(mx.sym.BilinearSampler(img, grid))
        inputs['grid'] = rng.uniform(-1.1, 1.1, (2, 2, 3, 4)).astype(np.float32)
    check(mx.sym.Group(outs), inputs, opset=opset)


def test_aligned_roi_align_before_opset_16():
    """RoiAlign has no half-pixel mode before opset 16: aligned=True takes the Loop form."""
    rng = np.random.RandomState(4)
    img, rois = mx.sym.var('img'), mx.sym.var('rois')
    y = mx.sym.contrib.ROIAlign(img, rois, pooled_size=(2, 3), spatial_scale=0.5,
                                aligned=True)
    check(y, {'img': rng.standard_normal((2, 2, 6, 7)).astype(np.float32),
              'rois': np.array([[0, 1, 1, 9, 7], [1, 0.5, 2, 12, 4]], np.float32)}, opset=15)
