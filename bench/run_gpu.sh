#!/usr/bin/env bash
# Everything that needs a GPU (see bench/RESULTS.md), in steps:
#   tests      every test marked gpu: the operator suite on mx.gpu(0) against the CPU,
#              NumPy-vs-CuPy op bodies, SyncBatchNorm on logical devices, the kernel tests
#              on CuPy, custom ops, multi-GPU tests (two or more GPUs), a bench smoke run;
#   sanitizer  compute-sanitizer memcheck, racecheck and synccheck over the kernel tests
#              (CuPy's memory pool off, so out-of-bounds accesses hit real allocation ends);
#   bench      bench/bench_gpu.py (conv / BatchNorm vs cuDNN, NMS vs torchvision, ring
#              all-reduce), ending with the table of issue 5's targets; run with
#              SYMGRAPH_CUDNN=0, so "ours" is symgraph's own kernels;
#   cudnn      the cuDNN backend (issue 34; written without a GPU, first run here): which
#              library loaded (or why none), tests/backend/test_cudnn.py -m gpu (cuDNN vs
#              our kernels: conv fwd/bwd, BatchNorm, pooling, softmax, activation), the
#              operator suite tests/gpu/test_gpu_suite.py once with SYMGRAPH_CUDNN=1 and
#              once with 0 (every OpCase on both paths), and bench_gpu.py --cudnn (cuDNN vs
#              ours vs PyTorch). Run it FIRST on a new GPU machine: the tests step uses
#              cuDNN whenever it loads; if cudnn fails, run the rest with SYMGRAPH_CUDNN=0.
# Usage: bench/run_gpu.sh [--quick] [cudnn] [tests] [sanitizer | memcheck racecheck synccheck]
#        [bench]
# (no step named: all). With pytest-xdist installed the GPU tests run in $XDIST processes
# (default 8): a fresh machine compiles every CuPy elementwise kernel the suite meets.
# Results go to $RESULTS (default bench/results_gpu). Where $OUT is set (the device tool),
# results.md and a tarball of the whole folder are copied there.
# On a machine without network but with CuPy, install the checkout first, e.g.
#   python3 -m pip install -q --no-deps --no-build-isolation -e .
# (graphviz, the Python package, is needed only for rendering and is imported lazily).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
RESULTS=${RESULTS:-bench/results_gpu}
QUICK=""
STEPS=()
for arg in "$@"; do
    case "$arg" in
        --quick) QUICK="--quick" ;;
        tests|bench|cudnn|memcheck|racecheck|synccheck) STEPS+=("$arg") ;;
        sanitizer) STEPS+=(memcheck racecheck synccheck) ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done
[ ${#STEPS[@]} = 0 ] && STEPS=(cudnn tests memcheck racecheck synccheck bench)
mkdir -p "$RESULTS"
status=0

step() { echo; echo "=== $* ==="; }
wants() { [[ " ${STEPS[*]} " == *" $1 "* ]]; }

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
    echo "no CUDA GPU visible to CuPy (or symgraph is not installed): nothing to run" >&2
    exit 2
fi

PARALLEL=()
if "$PY" -c "import xdist" 2>/dev/null && [ "${XDIST:-8}" -gt 1 ]; then
    PARALLEL=(-n "${XDIST:-8}" -p no:benchmark)   # pytest-benchmark objects to xdist
fi

if wants cudnn; then
    step "cuDNN backend"
    "$PY" -c "
import logging; logging.basicConfig(level=logging.INFO)
from symgraph.backend import cudnn
be = cudnn.backend()
print('cudnn', 'loaded %s from %s' % ('.'.join(map(str, be.version)), be.path) if be
      else 'NOT loaded: %s' % cudnn.reason())
" 2>&1 | tee "$RESULTS/cudnn_env.txt"
    "$PY" -m pytest -q -rs -p no:cacheprovider -m gpu tests/backend/test_cudnn.py \
        --junitxml="$RESULTS/cudnn_tests.xml" 2>&1 | tee "$RESULTS/cudnn_tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    for on in 1 0; do
        SYMGRAPH_CUDNN=$on "$PY" -m pytest -q -p no:cacheprovider "${PARALLEL[@]}" -m gpu \
            tests/gpu/test_gpu_suite.py 2>&1 | tee "$RESULTS/cudnn_suite_$on.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
    "$PY" bench/bench_gpu.py --cudnn --out "$RESULTS" $QUICK 2>&1 \
        | tee "$RESULTS/bench_cudnn.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if wants tests; then
    step "GPU tests"
    "$PY" -m pytest -q -p no:cacheprovider "${PARALLEL[@]}" -m gpu tests \
        --junitxml="$RESULTS/gpu_tests.xml" 2>&1 | tee "$RESULTS/gpu_tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer \
            2>/dev/null | head -1)
for tool in memcheck racecheck synccheck; do
    if wants "$tool"; then
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
    fi
done

if wants bench; then
    step "benchmarks"
    SYMGRAPH_CUDNN=0 "$PY" bench/bench_gpu.py --out "$RESULTS" $QUICK 2>&1 \
        | tee "$RESULTS/bench.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ -n "${OUT:-}" ] && [ -d "${OUT}" ]; then
    # the device tool brings back at most 8 files: the report and one tarball
    [ -f "$RESULTS/results.md" ] && cp "$RESULTS/results.md" "$OUT/"
    [ -f "$RESULTS/results_cudnn.md" ] && cp "$RESULTS/results_cudnn.md" "$OUT/"
    tar czf "$OUT/results_gpu_$(date -u +%H%M%S).tgz" -C "$(dirname "$RESULTS")" \
        "$(basename "$RESULTS")"
fi
step "done (status $status, steps: ${STEPS[*]}): paste $RESULTS/results.md and the" \
     "test/sanitizer summaries into bench/RESULTS.md"
exit $status
