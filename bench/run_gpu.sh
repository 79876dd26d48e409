#!/usr/bin/env bash
# Everything that needs a GPU, in one command (see bench/RESULTS.md):
#   1. the GPU test suite: every operator case on mx.gpu(0) against the CPU, NumPy-vs-CuPy
#      op bodies, SyncBatchNorm on logical devices, and the CUDA kernel tests on CuPy;
#   2. compute-sanitizer memcheck, racecheck and synccheck over the kernel tests
#      (CuPy's memory pool off, so out-of-bounds accesses hit real allocation ends);
#   3. bench/bench_gpu.py (conv / BatchNorm vs cuDNN, NMS vs torchvision, ring all-reduce).
# Results go to $RESULTS (default bench/results_gpu; also copied under $OUT when set, as the
# device tool collects that folder). Needs CuPy installed (pip install -e '.[cuda12]');
# PyTorch + torchvision are optional (their comparison columns stay empty without them).
# Usage: bench/run_gpu.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
RESULTS=${RESULTS:-bench/results_gpu}
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"
mkdir -p "$RESULTS"
status=0

step() { echo; echo "=== $* ==="; }

step "environment"
{
    date -u +%Y-%m-%dT%H:%MZ
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    "$PY" -c "import symgraph.cuda as c; cp = c.import_cupy(); print('cupy', cp.__version__, \
'devices', cp.cuda.runtime.getDeviceCount())" 2>&1
    "$PY" -c "import torch, torchvision; print('torch', torch.__version__, \
'torchvision', torchvision.__version__)" 2>&1 | tail -1
} | tee "$RESULTS/environment.txt"
if ! "$PY" -c "import sys, symgraph.cuda as c; sys.exit(0 if c.available() else 1)"; then
    echo "no CUDA GPU visible to CuPy: nothing to run" >&2
    exit 2
fi

step "GPU test suite"
"$PY" -m pytest -q -p no:cacheprovider -m gpu tests \
    --junitxml="$RESULTS/gpu_tests.xml" 2>&1 | tee "$RESULTS/gpu_tests.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer \
            2>/dev/null | head -1)
for tool in memcheck racecheck synccheck; do
    step "compute-sanitizer $tool (kernel tests)"
    if [ -z "$SANITIZER" ]; then
        echo "compute-sanitizer not found (CUDA toolkit missing): $tool not run" \
            | tee "$RESULTS/sanitizer_$tool.log"
        status=1
        continue
    fi
    "$SANITIZER" --tool "$tool" --error-exitcode 3 --target-processes all \
        "$PY" -c "
import sys
import symgraph.cuda as c
c.import_cupy().cuda.set_allocator(None)   # no pool: each array is its own allocation
import pytest
sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-m', 'gpu', 'tests/cuda']))
" 2>&1 | tee "$RESULTS/sanitizer_$tool.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
done

step "benchmarks"
"$PY" bench/bench_gpu.py --out "$RESULTS" $QUICK 2>&1 | tee "$RESULTS/bench.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

if [ -n "${OUT:-}" ] && [ -d "${OUT}" ]; then
    cp -r "$RESULTS" "$OUT/"
fi
step "done (status $status): paste $RESULTS/results.md and the test/sanitizer summaries " \
     "into bench/RESULTS.md"
exit $status
