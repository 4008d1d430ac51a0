#!/usr/bin/env bash
# TRL-shaped reward call on a GRPO batch: Referee's adapter vs the same rewards in Python
# (Math-Verify accuracy + regex format, as open-r1). Builds the `referee` wheel optimised
# (`pip install .`, maturin, release profile) into ~/.cache/referee/py-venv with
# math-verify[antlr4_13_2]==0.9.0, then runs bench_trl.py (args are passed on).
#
# Usage: benches/python/run.sh [--rollouts 1024] [--runs 7]
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${REFEREE_PY_VENV:-$HOME/.cache/referee/py-venv}
# maturin's build hook runs `maturin` from PATH.
export PATH="$VENV/bin:$PATH"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import maturin" 2>/dev/null || "$VENV/bin/pip" install -q "maturin>=1.7,<2"
"$VENV/bin/python" -c "import math_verify" 2>/dev/null \
    || "$VENV/bin/pip" install -q "math-verify[antlr4_13_2]==0.9.0"
MATURIN_PEP517_ARGS="--profile release" \
    "$VENV/bin/pip" install -q --no-build-isolation --no-deps --force-reinstall .
exec "$VENV/bin/python" benches/python/bench_trl.py "$@"
