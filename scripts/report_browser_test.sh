#!/usr/bin/env bash
# The HTML report in headless Chromium (issue 10): installs Debian's chromium when missing and a
# venv with Playwright (the driver: a pip wheel, nothing to compile, clicks and console capture
# built in) under ~/.cache/referee/, makes a report from a real scored run and one from a fuzz
# output, and checks them in the browser. Screenshots land in target/report-browser/.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null; then
    echo "== installing chromium (apt-get)"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        (apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }) >/dev/null
    else
        echo "chromium is missing and cannot be installed here (needs root and apt-get)" >&2
        exit 2
    fi
fi
py=$(scripts/py_tools_venv.sh)

cargo build -q -p referee-cli --locked
target="${CARGO_TARGET_DIR:-target}"
out="$target/report-browser"
rm -rf "$out" && mkdir -p "$out"
bin="$target/debug/referee"
"$bin" score examples/grpo-group/spec.yaml examples/gsm8k/samples.jsonl -q --explain -o "$out/results.jsonl"
"$bin" report "$out/results.jsonl" -o "$out/report.html" --data examples/gsm8k/samples.jsonl 2>/dev/null
"$bin" report fixtures/report/fuzz.json -o "$out/fuzz.html" 2>/dev/null
REFEREE_CHROMIUM=$(command -v chromium) "$py" scripts/report_browser_test.py "$out"
