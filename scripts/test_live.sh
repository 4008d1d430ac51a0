#!/usr/bin/env bash
# The live trainer tests: each folder python/live/NAME/ runs with pytest inside that trainer's
# own virtualenv (scripts/trainer_venv.sh: the real packages from PyPI, pinned), with the
# referee wheel installed in it. Nothing in these tests stands in for the trainer's own code.
#
# Usage: REFEREE_WHEEL=path/to/referee-*.whl scripts/test_live.sh [NAME ...] [-- pytest args]
#   (default: every folder under python/live/). scripts/test_py.sh builds the wheel and calls this.
#   REFEREE_BIN          the CLI the adapters are compared with (default target/debug/referee).
#   REFEREE_PY_OVERLAY=1 copy this checkout's python/referee/*.py over the installed wheel's
#                        (to try Python edits against a wheel built elsewhere; never in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=${REFEREE_WHEEL:?set REFEREE_WHEEL to the referee wheel to test}
names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do names+=("$1"); shift; done
[ "${1:-}" != "--" ] || shift
if [ ${#names[@]} -eq 0 ]; then
    for d in python/live/*/; do [ -f "$d/requirements.txt" ] && names+=("$(basename "$d")"); done
fi
export REFEREE_BIN="${REFEREE_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/referee}"
status=0
for name in "${names[@]}"; do
    py=$(scripts/trainer_venv.sh "$name")
    "$py" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$wheel"
    if [ "${REFEREE_PY_OVERLAY:-}" = 1 ]; then
        site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
        cp python/referee/*.py "$site/referee/"
    fi
    echo "== live: $name ($("$py" -c 'import sys; print(sys.prefix)'))"
    # importlib mode: a test folder named like a package never shadows the real package.
    "$py" -m pytest -q -p no:cacheprovider --import-mode=importlib "python/live/$name" "$@" || status=1
done
exit "$status"
