#!/usr/bin/env bash
# The whole check, as CI runs it: ruff lint, ruff format, mypy --strict, then every test.
#
#   bash scripts/test.sh [extra pytest arguments]
#
# Every step runs even when an earlier one fails, so one report shows everything; the exit
# status is non-zero if any step failed. The test session starts PostgreSQL and SeaweedFS
# itself (tests/conftest.py) and stops them at the end; the trap below also stops them if
# pytest dies without tearing down.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
[[ -x "$PY" ]] || {
    echo "test.sh: no $PY; run 'make install' first" >&2
    exit 1
}

# Stop services that a test session started but could not stop (crash, timeout, Ctrl-C);
# services started by hand, or leased by another live session, are left alone.
trap '"$PY" -m tests.support.services reap || true' EXIT

failed=()
step() {
    local name="$1"
    shift
    local t0=$SECONDS
    echo "==> $name: $*"
    if "$@"; then
        echo "==> $name: ok ($((SECONDS - t0)) s)"
    else
        echo "==> $name: FAILED ($((SECONDS - t0)) s)"
        failed+=("$name")
    fi
}

paths=()
for p in mixed_iceberg tests bench scripts jobs; do
    [[ -e "$p" ]] && paths+=("$p")
done

step "ruff check" "$VENV/bin/ruff" check "${paths[@]}"
step "ruff format" "$VENV/bin/ruff" format --check "${paths[@]}"
step "mypy" "$VENV/bin/mypy"
step "pytest" "$PY" -m pytest -q -p no:cacheprovider --durations=15 "$@"

if ((${#failed[@]})); then
    echo "test.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "test.sh: all checks passed"
