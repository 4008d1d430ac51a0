#!/usr/bin/env python3
"""Baseline: a fresh interpreter per test, the way LiveCodeBench-style loops and open-r1's
generated evaluation script grade code (`subprocess.run` per test case, no isolation).

For each rollout (row of benches/code/gen_problems.py output):
  1. extract the last fenced block tagged python/py/python3 or untagged (code_exec's
     `extract: last_block`); no block -> every test fails (reward 0, note no_code);
  2. write it to sol.py in a fresh temp directory (call style: the solution plus a small driver
     that reads the JSON argument list on stdin, calls the function, or the method of
     `class Solution`, and prints `json.dumps(result)`, like verl's wrapper script);
  3. for each test: `subprocess.run([python, "sol.py"], input=..., capture_output=True,
     timeout=...)`, timed with perf_counter (this is the per-test latency);
  4. verdict: timeout, runtime_error (non-zero exit), else stdio: line-wise comparison (trailing
     spaces per line and trailing blank lines ignored, all lines compared: code_exec's `lines`
     mode); call: json.loads(stdout) == expected.
Rollouts are spread over --workers threads (default: the number of cores); the tests of one
rollout run one after another, as in those loops.

Isolation variants (--isolate), to show what per-test isolation costs when each test spawns:
  none     `python sol.py` (the default; what LCB/open-r1's loop does)
  unshare  `unshare --user --map-root-user --net --mount --pid --fork --ipc --uts --mount-proc
           python sol.py`: fresh namespaces per test, no limits, no syscall filter
  bwrap    `bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc
           --tmpfs /tmp --ro-bind DIR /tmp/sandbox --chdir /tmp/sandbox python sol.py`

Reports tests/second (all tests / wall time of the whole run, pool start-up included), per-test
p50/p99 latency, the verdict counts, and agreement with the generator's `expected` verdicts.
Stdlib only. Usage:
  python3 benches/code/subprocess_harness.py ROWS.jsonl [--workers 2] [--isolate none]
      [--python /usr/bin/python3] [--timeout 6] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+#.-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
PY_TAGS = {"", "python", "py", "python3"}

CALL_DRIVER = """

# ---- harness driver (appended, the way verl's sandbox_fusion wrapper does it) ----
if __name__ == "__main__":
    import json as _json, sys as _sys
    _args = _json.loads(_sys.stdin.read())
    _fn = globals().get({fn!r})
    if _fn is None:
        _fn = getattr(globals()["Solution"](), {fn!r})
    print(_json.dumps(_fn(*_args)))
"""


def extract_last_block(text: str) -> str | None:
    code = None
    for m in FENCE.finditer(text):
        if m.group(1).lower() in PY_TAGS:
            code = m.group(2)
    return code


def norm_lines(s: str):
    lines = [ln.rstrip() for ln in s.replace("\r\n", "\n").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def percentile(sorted_vals, q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted list."""
    if not sorted_vals:
        return float("nan")
    k = max(1, math.ceil(q / 100.0 * len(sorted_vals)))
    return sorted_vals[k - 1]


def isolation_prefix(mode: str, workdir: str) -> tuple[list[str], str]:
    """-> (argv prefix, directory the solution is seen at inside)."""
    if mode == "none":
        return [], workdir
    if mode == "unshare":
        return ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork",
                "--ipc", "--uts", "--mount-proc"], workdir
    if mode == "bwrap":
        return ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
                "--proc", "/proc", "--tmpfs", "/tmp", "--ro-bind", workdir, "/tmp/sandbox",
                "--chdir", "/tmp/sandbox"], "/tmp/sandbox"
    raise ValueError(mode)


def check_isolation(mode: str, python: str) -> str | None:
    """None if `mode` works here, else the reason it does not."""
    if mode == "none":
        return None
    tool = {"unshare": "unshare", "bwrap": "bwrap"}[mode]
    if shutil.which(tool) is None:
        return f"{tool} not installed"
    with tempfile.TemporaryDirectory() as d:
        prefix, inside = isolation_prefix(mode, d)
        try:
            r = subprocess.run(prefix + [python, "-c", "print(7)"], capture_output=True, timeout=20)
        except Exception as e:  # noqa: BLE001
            return f"{tool} failed: {e}"
        if r.returncode != 0 or r.stdout.strip() != b"7":
            return f"{tool} failed: rc={r.returncode} {r.stderr.decode(errors='replace')[:200]}"
    return None


def grade_rollout(row: dict, python: str, timeout: float, isolate: str, lat_out: list) -> dict:
    item = row["item"]
    tests = item["tests"]
    code = extract_last_block(row["sample"]["output_text"])
    if code is None:
        return {"id": row["id"], "verdicts": ["no_code"] * len(tests), "reward": 0.0}
    call = "fn_name" in item
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="lcbh-") as d:
        src = code + (CALL_DRIVER.format(fn=item["fn_name"]) if call else "")
        with open(os.path.join(d, "sol.py"), "w", encoding="utf-8") as f:
            f.write(src)
        prefix, inside = isolation_prefix(isolate, d)
        argv = prefix + [python, os.path.join(inside, "sol.py")]
        for t in tests:
            stdin = json.dumps(t["args"]) if call else t["input"]
            t0 = time.perf_counter()
            try:
                r = subprocess.run(argv, input=stdin.encode(), capture_output=True, timeout=timeout, cwd=d)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            lat_out.append((time.perf_counter() - t0) * 1000.0)
            if timed_out:
                verdicts.append("timeout")
            elif r.returncode != 0:
                verdicts.append("runtime_error")
            elif call:
                try:
                    ok = json.loads(r.stdout.decode()) == t["expected"]
                except ValueError:
                    ok = False
                verdicts.append("passed" if ok else "wrong_answer")
            else:
                ok = norm_lines(r.stdout.decode(errors="replace")) == norm_lines(t["output"])
                verdicts.append("passed" if ok else "wrong_answer")
    return {"id": row["id"], "verdicts": verdicts, "reward": verdicts.count("passed") / len(verdicts)}


def run(rows: list[dict], workers: int, python: str, timeout: float, isolate: str) -> dict:
    lat_lists: list[list] = []
    local = threading.local()

    def job(row):
        if not hasattr(local, "lat"):
            local.lat = []
            lat_lists.append(local.lat)  # list.append is atomic under the GIL
        return grade_rollout(row, python, timeout, isolate, local.lat)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        results = list(ex.map(job, rows))
    wall = time.perf_counter() - t0
    lat = sorted(x for lst in lat_lists for x in lst)
    n_tests = sum(len(r["item"]["tests"]) for r in rows)
    counts = Counter(v for r in results for v in r["verdicts"])
    mismatched_tests = 0
    mismatched_rows = []
    for row, res in zip(rows, results):
        exp = row.get("expected", {}).get("verdicts")
        if exp is None:
            continue
        bad = sum(1 for a, b in zip(exp, res["verdicts"]) if a != b)
        if bad:
            mismatched_tests += bad
            mismatched_rows.append(row["id"])
    return {
        "harness": "subprocess" + ("" if isolate == "none" else f"+{isolate}"),
        "isolate": isolate,
        "workers": workers,
        "python": python,
        "rollouts": len(rows),
        "tests": n_tests,
        "wall_s": wall,
        "tests_per_s": n_tests / wall,
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "max_ms": lat[-1] if lat else float("nan"),
        "verdicts": dict(counts),
        "mean_reward": sum(r["reward"] for r in results) / len(results),
        "verdict_mismatches": mismatched_tests,
        "mismatched_rows": mismatched_rows[:20],
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


def load_rows(path: str, limit: int | None = None) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
                if limit and len(rows) >= limit:
                    break
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="subprocess-per-test baseline (the LiveCodeBench way)")
    ap.add_argument("rows", help="JSONL from benches/code/gen_problems.py")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--timeout", type=float, default=6.0, help="wall seconds per test (LCB: 6)")
    ap.add_argument("--isolate", choices=["none", "unshare", "bwrap"], default="none")
    ap.add_argument("--limit", type=int, default=None, help="only the first N rollouts")
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    a = ap.parse_args(argv)

    why = check_isolation(a.isolate, a.python)
    if why:
        msg = {"harness": f"subprocess+{a.isolate}", "error": why}
        print(json.dumps(msg) if a.json else f"isolation {a.isolate!r} unavailable: {why}")
        return 2
    rows = load_rows(a.rows, a.limit)
    s = run(rows, a.workers, a.python, a.timeout, a.isolate)
    if a.json:
        print(json.dumps(s))
    else:
        print(f"{s['harness']}: {s['tests']} tests ({s['rollouts']} rollouts) in {s['wall_s']:.2f} s "
              f"with {s['workers']} workers = {s['tests_per_s']:.1f} tests/s; per test p50 "
              f"{s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, max {s['max_ms']:.1f} ms")
        print(f"  verdicts: {s['verdicts']}; mean reward {s['mean_reward']:.4f}; "
              f"verdicts differing from the generator's: {s['verdict_mismatches']}"
              + (f" (rows {', '.join(s['mismatched_rows'])})" if s["mismatched_rows"] else ""))
        print(f"  loadavg {' '.join(s['loadavg'])}")
    return 0 if s["verdict_mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
