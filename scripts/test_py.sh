#!/usr/bin/env bash
# The Python package's tests: builds the `referee` wheel with maturin and installs it into a
# virtualenv at ~/.cache/referee/py-venv (created once, then reused), with pytest, pyarrow, pandas,
# ray[data], numpy and pydantic from PyPI, and runs `pytest python/tests`. The tests compare every
# adapter with the CLI (`target/debug/referee`, built here) on the same rows, and start a local
# Ray cluster. Then the live trainer tests (scripts/test_live.sh): each trainer's own tests in
# its own venv with the same wheel.
#
# Usage: scripts/test_py.sh [pytest args for python/tests]
#   REFEREE_PY_PROFILE=release  build the wheel optimised (default: cargo's dev profile, which
#                               shares the workspace's debug build and is much quicker cold).
#   REFEREE_PY_VENV=DIR         another virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${REFEREE_PY_VENV:-$HOME/.cache/referee/py-venv}
# maturin's build hook runs `maturin` from PATH.
export PATH="$VENV/bin:$PATH"
PYTHON=${PYTHON:-python3}
# Bump when the list of test dependencies changes, so an old venv gets them.
STAMP="$VENV/.referee-test-deps-2"
if [ ! -f "$STAMP" ]; then
    echo "== python venv $VENV (test dependencies from PyPI)"
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "maturin>=1.7,<2" "pytest>=7" pyarrow pandas "ray[data]>=2.9" numpy==2.4.6 pydantic==2.14.4
    touch "$STAMP"
fi

echo "== cargo build -p referee-cli (the CLI the adapters are compared with)"
cargo build -q -p referee-cli
export REFEREE_BIN="${REFEREE_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/referee}"

echo "== maturin build (profile ${REFEREE_PY_PROFILE:-dev})"
wheels=${CARGO_TARGET_DIR:-$PWD/target}/py-wheels
rm -rf "$wheels"
"$VENV/bin/maturin" build -q --profile "${REFEREE_PY_PROFILE:-dev}" -o "$wheels"
REFEREE_WHEEL=$(ls "$wheels"/referee-*.whl)
export REFEREE_WHEEL
"$VENV/bin/pip" install -q --no-deps --force-reinstall "$REFEREE_WHEEL"

echo "== pytest python/tests"
status=0
# From the tests' directory's parent's parent: the installed package is imported, not the
# source tree (python/ is not on sys.path).
"$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests "$@" || status=1

# The adapters inside the real trainers, each in its own cached venv (scripts/test_live.sh).
echo "== live trainer tests (scripts/test_live.sh)"
scripts/test_live.sh || status=1
exit "$status"
