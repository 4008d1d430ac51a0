#!/usr/bin/env python3
"""Trajectory benchmark: Referee's rule-only trajectory spec (benches/trajectory/spec.yaml:
patch audit, tool-trace rules, final-state match) against the same checks written plainly in
Python (benches/trajectory/plain.py) over the same JSONL of agent rollouts (gen.py: 100,000
trajectories of 20 turns and 8 tool calls).

Timed, each the wall-clock of the whole command (process start to exit, file read, JSON parsed,
results written to /dev/null), interleaved so drift on a shared machine hits every side alike,
medians over --runs:
  python         plain.py: one process, one core (the GIL)
  referee -j 1   `referee score SPEC DATA -o /dev/null -j 1`
  referee -j 2   the same on two cores
  referee const  `referee score` with a `const` spec on one core: the input path alone (start,
                 read, parse into the row tree, write), no check run; its distance from
                 `referee -j 1` is what the checks cost
Peak memory is each process's max RSS (getrusage of the finished child). Then one untimed run
compares Referee's rewards with Python's row by row. With --floor it also builds and runs
parse_floor/ (the parse alone, in memory, by serde_json and by the fastest Rust parsers) and
prints the "× python per core" each parse cost would leave as a ceiling.

Usage: python3 benches/trajectory/run.py [--rows 100000] [--runs 5] [--referee target/release/referee] [--floor]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA_DIR = os.path.join(ROOT, "benches", "data")


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one command run to completion."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode() if p.stderr else ""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{err}")
    return wall, ru.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--referee", default=os.path.join(ROOT, "target", "release", "referee"))
    ap.add_argument("--spec", default=os.path.join(HERE, "spec.yaml"))
    ap.add_argument("--floor", action="store_true", help="also measure the parse floor (parse_floor/)")
    a = ap.parse_args()
    data = os.path.join(DATA_DIR, f"trajectories_{a.rows // 1000}k.jsonl")
    if not os.path.exists(data):
        subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "--rows", str(a.rows), "-o", data], check=True)
    with open(data, "rb") as f:  # warm the page cache for every side
        while f.read(1 << 24):
            pass
    sides = {
        "python": [sys.executable, os.path.join(HERE, "plain.py"), data],
        "referee -j 1": [a.referee, "score", a.spec, data, "-o", "/dev/null", "-j", "1"],
        "referee -j 2": [a.referee, "score", a.spec, data, "-o", "/dev/null", "-j", "2"],
        "referee const": [a.referee, "score", os.path.join(HERE, "const.yaml"), data, "-o", "/dev/null", "-j", "1"],
    }
    walls = {k: [] for k in sides}
    rss = {k: [] for k in sides}
    for r in range(a.runs):
        for k, cmd in sides.items():
            w, m = timed(cmd)
            walls[k].append(w)
            rss[k].append(m)
        print(f"run {r + 1}: " + ", ".join(f"{k} {walls[k][-1]:.2f}s" for k in sides), file=sys.stderr)
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"\n{a.rows:,} trajectories, {os.path.getsize(data) / 1e6:.0f} MB, median of {a.runs} runs")
    print(f"  {'side':<14} {'wall s':>8} {'rows/s':>10} {'max RSS MiB':>12} {'× python':>9} {'× python per core':>18}")
    for k in sides:
        cores = 2 if k.endswith(" 2") else 1
        x = med["python"] / med[k]
        print(f"  {k:<14} {med[k]:8.2f} {a.rows / med[k]:10,.0f} {statistics.median(rss[k]):12.0f} {x:9.1f} {x / cores:18.1f}")
    # Agreement, row by row.
    out_py = os.path.join(DATA_DIR, "trajectories_python_out.jsonl")
    out_rf = os.path.join(DATA_DIR, "trajectories_referee_out.jsonl")
    subprocess.run([sys.executable, os.path.join(HERE, "plain.py"), data, "-o", out_py], check=True, capture_output=True)
    subprocess.run([a.referee, "score", a.spec, data, "-o", out_rf], check=True, capture_output=True)
    kinds = [json.loads(l).get("kind") for l in open(data)]
    diff = {}
    with open(out_py) as fp, open(out_rf) as fr:
        for kind, lp, lr in zip(kinds, fp, fr):
            p, r = json.loads(lp)["reward"], json.loads(lr)["reward"]
            if r is None or abs(p - r) > 1e-9:
                diff[kind] = diff.get(kind, 0) + 1
    print(f"  agreement: {a.rows - sum(diff.values()):,} of {a.rows:,} rows" + (f"; differing by kind: {diff}" if diff else ""))
    if a.floor:
        floor(data, med["python"] / a.rows * 1e6)


def floor(data: str, python_us: float) -> None:
    """The parse alone per row, and the ceiling on "× python per core" it leaves."""
    manifest = os.path.join(HERE, "parse_floor", "Cargo.toml")
    subprocess.run(["cargo", "build", "--release", "-q", "--manifest-path", manifest], check=True)
    exe = os.path.join(HERE, "parse_floor", "target", "release", "parse_floor")
    out = subprocess.run([exe, data], check=True, capture_output=True, text=True).stdout
    print(f"\nparse floor (python: {python_us:.1f} µs a row, the whole check)")
    print(f"  {'parse only':<46} {'µs/row':>7} {'ceiling × python per core':>26}")
    for line in out.splitlines()[1:]:
        name, us = line.rsplit(None, 1)
        print(f"  {name.strip():<46} {float(us):7.2f} {python_us / float(us):26.1f}")


if __name__ == "__main__":
    main()
