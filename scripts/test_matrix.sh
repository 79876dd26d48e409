#!/usr/bin/env bash
# The suite over the supported Python x NumPy matrix, each cell in a fresh venv (not run by CI,
# which has 2 cores and 90 minutes: a full matrix takes about an hour there).
# Usage: scripts/test_matrix.sh [PYTHONS...]   e.g. scripts/test_matrix.sh python3.10 python3.13
# Pythons default to python3.10 ... python3.13 found on PATH or under pyenv. For each Python the
# suite runs with the newest NumPy 2.x pip picks and with NumPy 1.26 where a wheel exists.
# Extra pytest arguments go in $PYTEST_ARGS. Prints one table row per cell; exits non-zero if
# any cell failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYS=("$@")
if [ ${#PYS[@]} = 0 ]; then
    for v in 3.10 3.11 3.12 3.13; do
        p=$(command -v "python$v" || ls -d "$(pyenv root 2>/dev/null)"/versions/$v.*/bin/python$v \
            2>/dev/null | tail -1)
        [ -n "$p" ] && PYS+=("$p")
    done
fi
WORK=$(mktemp -d)
ROWS=()
FAILED=0
for py in "${PYS[@]}"; do
    pyv=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') || continue
    for numpy_spec in "numpy>=2" "numpy>=1.26,<2"; do
        venv="$WORK/py$pyv-$(echo "$numpy_spec" | tr -c 'A-Za-z0-9.' _)"
        if ! { "$py" -m venv "$venv" \
               && "$venv/bin/python" -m pip install -q --disable-pip-version-check \
                  --only-binary=numpy "$numpy_spec" -e "$ROOT[test]"; } >"$venv.install.log" 2>&1; then
            ROWS+=("$(printf '%-8s %-16s %s' "$pyv" "$numpy_spec" 'no wheel / install failed')")
            continue
        fi
        npv=$("$venv/bin/python" -c 'import numpy; print(numpy.__version__)')
        start=$SECONDS
        "$venv/bin/python" -m pytest -q -p no:cacheprovider tests ${PYTEST_ARGS:-} \
            >"$venv.log" 2>&1
        rc=$?
        [ $rc = 0 ] || FAILED=1
        line=$(grep -E '(passed|failed|errors?|skipped).* in [0-9.]+s' "$venv.log" | tail -1 \
               | tr -d '=' | sed 's/^ *//; s/ *$//')
        ROWS+=("$(printf '%-8s %-16s %-4s %s (%ds) log: %s' "$pyv" "$npv" \
            "$([ $rc = 0 ] && echo ok || echo FAIL)" "$line" $((SECONDS - start)) "$venv.log")")
    done
done
printf '%-8s %-16s %s\n' Python NumPy result
for r in "${ROWS[@]}"; do echo "$r"; done
exit $FAILED
