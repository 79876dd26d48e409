"""Shared check of the special-operator export tests: symgraph's forward of a graph
against ONNX Runtime's run of its export (imported by tests/onnx/test_export_*.py)."""
import numpy as np
import pytest

import symgraph as mx


def _tolerance(ref, rtol):
    finite = np.abs(ref[np.isfinite(ref)]) if ref.size else np.zeros(0)
    scale = float(finite.max()) if finite.size else 1.0
    return rtol, 1e-5 * max(1.0, scale)


def forward(sym, inputs, params=None):
    """symgraph's outputs (NumPy) of ``sym`` on ``inputs`` and ``params``."""
    params = params or {}
    arrays = {k: mx.nd.array(v, dtype=v.dtype) for k, v in {**inputs, **params}.items()}
    aux_names = set(sym.list_auxiliary_states())
    args = {k: v for k, v in arrays.items() if k not in aux_names}
    aux = {k: v for k, v in arrays.items() if k in aux_names}
    exe = sym.bind(mx.cpu(), args, aux_states=aux or None, grad_req='null')
    exe.forward(is_train=False)
    return [o.asnumpy() for o in exe.outputs]


def export(sym, inputs, params=None, opset=None, dynamic=False):
    """The ONNX model of ``sym`` for the shapes and dtypes of ``inputs`` (checked)."""
    onnx = pytest.importorskip('onnx')
    from symgraph.onnx.export import export_onnx_model
    params = params or {}
    names = [n for n in sym.list_inputs() if n not in params]
    model = export_onnx_model(sym, params, [inputs[n].shape for n in names],
                              [inputs[n].dtype for n in names], opset_version=opset,
                              dynamic=dynamic)
    onnx.checker.check_model(model, full_check=True)
    return model


def run_onnx(model, inputs):
    ort = pytest.importorskip('onnxruntime')
    sess = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
    return sess.run(None, feed)


def check(sym, inputs, params=None, opset=None, rtol=1e-4, exact=False, dynamic=False,
          outputs=None):
    """Export ``sym``, run it in ONNX Runtime and compare every output with symgraph's
    forward (``exact``: bit for bit, dtype included). Returns (reference, got)."""
    pytest.importorskip('onnxruntime')
    ref = forward(sym, inputs, params)
    got = run_onnx(export(sym, inputs, params, opset, dynamic), inputs)
    assert len(got) == len(ref)
    for k, (r, o) in enumerate(zip(ref, got)):
        if outputs is not None and k not in outputs:
            continue
        assert o.shape == r.shape, 'output %d: shape %s, expected %s' % (k, o.shape, r.shape)
        assert o.dtype == r.dtype, 'output %d: dtype %s, expected %s' % (k, o.dtype, r.dtype)
        if exact:
            np.testing.assert_array_equal(o, r, err_msg='output %d' % k)
        else:
            rt, at = _tolerance(r, rtol)
            np.testing.assert_allclose(o, r, rtol=rt, atol=at, err_msg='output %d' % k)
    return ref, got
