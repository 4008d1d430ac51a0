#!/usr/bin/env bash
# The Python tools the Rust tests use: pyarrow (Parquet files as verl writes them) and Playwright
# (the report's browser test), in a venv under ~/.cache/referee/ made on first use. Prints the
# venv's python.
set -euo pipefail
venv="${REFEREE_TOOLS_VENV:-${REFEREE_CACHE_DIR:-$HOME/.cache/referee}/tools-venv}"
if ! "$venv/bin/python" -c "import playwright, pyarrow" >/dev/null 2>&1; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "playwright>=1.40,<2" "pyarrow>=14" >&2
fi
echo "$venv/bin/python"
