"""bench/bench_gpu.py runs end to end (tiny sizes): a GPU session should not lose device
minutes to a broken benchmark script. In CI this runs on the strict CuPy stand-in."""
import os
import sys

import pytest

from symgraph import cuda

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda.available(), reason='needs CuPy and a CUDA GPU')]

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'bench')


def test_bench_gpu_smoke(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import bench_gpu
    results = bench_gpu.main(['--smoke', '--out', str(tmp_path)])
    assert {'conv', 'batchnorm', 'nms', 'allreduce'} <= set(results)
    assert all(r['ours_ms'] > 0 for r in results['conv'] + results['batchnorm'])
    assert results['nms']['kept'] > 0
    report = (tmp_path / 'results.md').read_text()
    assert '## Targets (issue 5)' in report and (tmp_path / 'results.json').exists()
    assert len(bench_gpu.targets(results)) == 4
    sys.modules.pop('bench_gpu', None)
