#!/usr/bin/env bash
# The whole check, as CI runs it: ruff lint, ruff format, mypy --strict, the unit tests in a venv
# without the flink and kafka extras, then every other test (each test runs once).
#
#   bash scripts/test.sh [extra pytest arguments]    # (they go to the last step only)
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

# A full disk fails the services and hundreds of tests at set-up, each with its own message: say it
# once, first (a CI run failed so when uv's cache had filled the disk).
free_kb="$(df -Pk . | awk 'NR == 2 {print $4}')"
if [[ -n "$free_kb" ]] && ((free_kb < 4 * 1024 * 1024)); then
    echo "test.sh: WARNING: only $((free_kb / 1024)) MiB free on $(df -P . | awk 'NR == 2 {print $6}'); the suite needs about 4 GiB" \
        "(PostgreSQL, SeaweedFS, Kafka, Flink, test tables; 'uv cache prune' frees uv's unused cache)" >&2
fi

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
# The core library as `pip install 'mixed-iceberg[dev,pandas]'` gets it, without the flink and kafka
# extras: a second venv, $CORE_VENV (git-ignored), built with the main venv's uv. Its stamp holds a
# hash of pyproject.toml, requirements/overrides.txt and uv's version, so it is rebuilt only when
# one changes (under a minute with uv's cache warm; a rerun skips it). There pyflink and confluent_kafka
# must not be importable (the dev extra must not pull them in), `import mixed_iceberg` must work,
# and the unit tests run: the few that need an extra skip themselves (pytest.importorskip, or
# tests/support/extras.py), and tests/unit/core/test_optional_extras.py fails if any module but
# the listed backends needs pyflink or confluent_kafka at import time.
CORE_VENV="${CORE_VENV:-.venv-core}"
CORE_PY="$CORE_VENV/bin/python"
core_venv() {
    local stamp="$CORE_VENV/.installed" want
    want="$(cat pyproject.toml requirements/overrides.txt | sha256sum | cut -d' ' -f1) $("$VENV/bin/uv" --version)"
    [[ -f "$stamp" && "$(<"$stamp")" == "$want" ]] && return 0
    rm -rf "$CORE_VENV"
    "$VENV/bin/uv" venv -q --python "$PY" "$CORE_VENV" &&
        "$VENV/bin/uv" pip install -q --python "$CORE_PY" --compile-bytecode -e '.[dev,pandas]' \
            --override requirements/overrides.txt &&
        echo "$want" >"$stamp"
}
core_without_extras() {
    core_venv || return 1
    "$CORE_PY" - <<'PY' || return 1
import importlib.util, sys
present = [name for name in ("pyflink", "confluent_kafka") if importlib.util.find_spec(name) is not None]
if present:
    sys.exit(f"test.sh: {', '.join(present)} installed in the core venv: an extra or the dev extra pulls it in")
import mixed_iceberg
PY
    "$CORE_PY" -m pytest -q -p no:cacheprovider -m "not integration" --record-passed="$PASSED_IN_CORE" tests/unit
}

# Each test runs once: what passed in the core venv is deselected in the full run below
# (tests/support/run_once.py); what it skipped (an extra missing) or failed runs there again.
# If the core step failed, the full run takes everything.
PASSED_IN_CORE="$(mktemp -t mixed-iceberg-core-passed.XXXXXX)"
trap 'rm -f "$PASSED_IN_CORE"; "$PY" -m tests.support.services reap || true' EXIT
step "core without extras" core_without_extras
once=("--skip-passed=$PASSED_IN_CORE")
[[ " ${failed[*]} " == *" core without extras "* ]] && once=()
step "pytest" "$PY" -m pytest -q -p no:cacheprovider --durations=25 "${once[@]}" "$@"

if ((${#failed[@]})); then
    echo "test.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "test.sh: all checks passed"
