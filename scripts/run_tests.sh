#!/usr/bin/env bash
# Install symgraph with what the test suite needs, then run the whole suite in phases.
# Used by the README and by CI (.ci/run). Works on a fresh Debian machine with Python >= 3.10.
# Every phase runs even when an earlier one fails; one summary line per phase is printed at the
# end, and the script exits non-zero if any phase failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# Graphviz's `dot` renders the visualisation tests' SVG/PNG/PDF files.
if ! command -v dot >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz \
            >/dev/null; } || echo "warning: graphviz did not install; rendering tests will be skipped" >&2
    else
        echo "warning: graphviz 'dot' is missing; rendering tests will be skipped" >&2
    fi
fi

# The package (editable, so tests see this checkout), pytest, and CuPy's NVRTC so that
# every CUDA kernel is compiled in CI exactly as CuPy compiles it on a GPU.
"$PY" -m pip install -q --disable-pip-version-check -e '.[test]' || exit 1
"$PY" -m pip install -q --disable-pip-version-check cupy-cuda12x nvidia-cuda-nvrtc-cu12 \
    || echo "warning: CuPy/NVRTC could not be installed; kernel compile tests will be skipped" >&2

LOGDIR=$(mktemp -d)
SUMMARY=()
FAILED=0

# phase NAME COMMAND...: run one pytest phase, keep its closing line and time
phase() {
    local name=$1; shift
    local log="$LOGDIR/$(echo "$name" | tr -c 'A-Za-z0-9' _).log"
    local start=$SECONDS
    echo "--- $name"
    "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local line
    line=$(grep -E '(passed|failed|errors?|skipped|deselected|no tests ran).* in [0-9.]+s' \
           "$log" | tail -1 | tr -d '=' | sed 's/^ *//; s/ *$//')
    [ -n "$line" ] || line="no pytest summary (exit $rc)"
    [ "$rc" = 0 ] || FAILED=1
    SUMMARY+=("$(printf '%-44s %-6s %s (%ds)' "$name" "$([ "$rc" = 0 ] && echo ok || echo FAIL)" \
        "$line" $((SECONDS - start)))")
}

NP=$("$PY" -c 'import numpy; print(numpy.__version__)')
# The first phase leaves the GPU tests to the next one, so that its skips are real ones (a
# oneDNN that failed to load fails tests/backend/test_loaded.py here, loudly).
phase "suite, NumPy $NP" "$PY" -m pytest -q -p no:cacheprovider -m "not gpu" tests "$@"
# The GPU tests (-m gpu) again, on the strict CPU stand-in for CuPy with four devices
# (tests/cuda/strict_cupy.py): device scopes, copies, kernels' arguments, multi-GPU paths.
phase "GPU tests on the strict CuPy stand-in, NumPy $NP" \
    env SYMGRAPH_STRICT_CUPY=4 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests "$@"
# oneDNN picks other kernels, with other float32 rounding, on AVX-512 and AMX machines than
# on AVX2 ones: on those, the oneDNN-sensitive tests run again with oneDNN held to AVX2, so
# that a test that holds on one kind of machine only fails in CI. (Below AVX2 oneDNN's
# sigmoid loses accuracy in its tail, 4e-6 relative below 1e-31, which the tests refuse:
# AVX2 is the floor they hold to, and an AVX2 machine has no other ISA to try.)
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    phase "oneDNN-sensitive tests, ONEDNN_MAX_CPU_ISA=AVX2" \
        env ONEDNN_MAX_CPU_ISA=AVX2 "$PY" -m pytest -q -p no:cacheprovider -m "not gpu" \
        tests/backend tests/ops/test_conv_onednn.py tests/ops/test_nn_onednn.py \
        tests/ops/test_norm_layers_onednn.py tests/ops/test_norm_onednn.py \
        tests/ops/test_pooling_onednn.py tests/ops/test_softmax_onednn.py \
        tests/graph/test_passes.py tests/golden/test_ours.py \
        tests/golden/test_ours_control_flow.py tests/module/test_module_golden.py "$@"
fi

# symgraph supports NumPy 1.26 as well as 2.x: run the suite again in a venv with NumPy 1.26
# (set SYMGRAPH_SKIP_NUMPY1=1 to skip; skipped with a warning where no such NumPy installs).
case "$(echo "${SYMGRAPH_SKIP_NUMPY1:-0}" | tr '[:upper:]' '[:lower:]' | tr -d ' ')" in
    1|on|true|yes) SKIP_NUMPY1=1 ;;
    ''|0|off|false|no|none) SKIP_NUMPY1=0 ;;
    *) echo "SYMGRAPH_SKIP_NUMPY1 must be 0 or 1 (also off/false/no/none; on/true/yes)," \
            "got '$SYMGRAPH_SKIP_NUMPY1'" >&2; exit 2 ;;
esac
if [ "$SKIP_NUMPY1" != 1 ]; then
    venv="$(mktemp -d)/numpy1"
    if "$PY" -m venv "$venv" \
        && "$venv/bin/python" -m pip install -q --disable-pip-version-check \
            --only-binary=numpy "numpy>=1.26,<2" -e '.[test]'; then
        NP1=$("$venv/bin/python" -c 'import numpy; print(numpy.__version__)')
        # the slow tests (whole model-zoo networks, the fine-tuning example) ran in the
        # first phase; nothing in them depends on NumPy's major version
        phase "suite, NumPy $NP1" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
            -m "not gpu and not slow" tests "$@"
        phase "GPU tests on the strict CuPy stand-in, NumPy $NP1" \
            env SYMGRAPH_STRICT_CUPY=4 "$venv/bin/python" -m pytest -q -p no:cacheprovider \
            -m gpu tests "$@"
    else
        echo "warning: no NumPy 1.26 for this Python; the NumPy 1.x run was skipped" >&2
        SUMMARY+=("$(printf '%-44s %-6s %s' "suite, NumPy 1.26" skip "no NumPy 1.26 wheel")")
    fi
fi

echo
echo "=== summary ($("$PY" -c 'import sys; print("Python %d.%d.%d" % sys.version_info[:3])'))"
for s in "${SUMMARY[@]}"; do echo "$s"; done
exit $FAILED
