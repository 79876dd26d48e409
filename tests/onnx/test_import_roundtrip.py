"""Every operator case of the export tests (tests/onnx/test_export_ops.py and
test_export_tensor.py) exported, imported back by mx.onnx.import_model and run here:
the same outputs as the graph it came from (so import covers what export emits)."""
import numpy as np
import pytest

import symgraph as mx

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

import test_export_ops  # noqa: E402  (tests/onnx/, beside this file)
import test_export_tensor  # noqa: E402
from onnx_special_check import export, forward  # noqa: E402

CASES = [c for mod in (test_export_ops, test_export_tensor) for c in mod.CASES]


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_export_then_import(case):
    sym, inputs = case[1], case[2]
    params = case[3] if len(case) > 3 else {}
    ref = forward(sym, inputs, params)
    model = export(sym, inputs, params)
    sym2, args, aux = mx.onnx.import_model(model)
    # an input whose shape alone matters (zeros_like, shape_array, ..._like) is folded
    # away: the imported graph no longer reads it
    arrays = dict(args, **{k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()
                           if k in sym2.list_arguments()})
    exe = sym2.bind(mx.cpu(), arrays, aux_states=aux, grad_req='null')
    got = [o.asnumpy() for o in exe.forward(is_train=False)]
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        finite = np.abs(r[np.isfinite(r)]) if r.size else np.zeros(0)
        scale = max(float(finite.max()) if finite.size else 1.0, 1.0)
        np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=1e-4,
                                   atol=1e-5 * scale, equal_nan=True)
