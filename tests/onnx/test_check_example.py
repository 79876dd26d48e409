"""examples/onnx_to_pytorch.py: an MXNet-written checkpoint through ONNX (checked by ONNX
Runtime) into PyTorch via onnx2torch, run as a user runs it."""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'examples',
                       'onnx_to_pytorch.py')


def _run(tmp_path, *args):
    proc = subprocess.run([sys.executable, EXAMPLE, '-o', str(tmp_path / 'm.onnx')] +
                          list(args), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _diff(out, which):
    m = re.search(r'^%s max abs diff: (\S+)$' % which, out, re.M)
    assert m, out
    return float(m.group(1))


def test_onnx_half(tmp_path):
    out = _run(tmp_path)
    assert 'checked by onnx.checker and ONNX Runtime' in out
    assert os.path.getsize(tmp_path / 'm.onnx') > 1000
    which = 'pytorch' if 'PyTorch module' in out else 'onnxruntime'
    assert _diff(out, which) < 1e-5


def test_pytorch_half(tmp_path):
    pytest.importorskip('torch')
    pytest.importorskip('onnx2torch')
    out = _run(tmp_path)
    assert _diff(out, 'pytorch') < 1e-5
