#!/usr/bin/env python3
"""Process-reward benchmark: segmentation and aggregation of 100,000 completions of 8 to 31
steps (benches/steps/gen.py) by Referee's each_step spec (benches/steps/spec.yaml: paragraphs,
short steps merged, repeats 0, a per-step rule, min, step_rewards written) against the same
work written plainly in Python (benches/steps/plain.py), each timed as the whole command
(start, read, parse, segment, score, write the results with their step rewards), interleaved,
medians over --runs; then one untimed run compares rewards and step rewards row by row.

Usage: python3 benches/steps/run.py [--rows 100000] [--runs 5] [--referee target/release/referee]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA_DIR = os.path.join(ROOT, "benches", "data")


def timed(cmd: list[str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode() if p.stderr else ""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err}")
    return wall, ru.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--referee", default=os.path.join(ROOT, "target", "release", "referee"))
    a = ap.parse_args()
    os.makedirs(DATA_DIR, exist_ok=True)
    data = os.path.join(DATA_DIR, f"steps_{a.rows // 1000}k.jsonl")
    if not os.path.exists(data):
        subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "--rows", str(a.rows), "-o", data], check=True)
    with open(data, "rb") as f:
        while f.read(1 << 24):
            pass
    spec = os.path.join(HERE, "spec.yaml")
    sides = {
        "python": [sys.executable, os.path.join(HERE, "plain.py"), data],
        "referee -j 1": [a.referee, "score", spec, data, "-o", "/dev/null", "-j", "1"],
        "referee -j 2": [a.referee, "score", spec, data, "-o", "/dev/null", "-j", "2"],
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
    n_steps = 0
    with open(data) as f:
        for line in f:
            n_steps += json.loads(line)["sample"]["output_text"].count("\n\n") + 1
    print(f"\n{a.rows:,} completions, {n_steps:,} steps, {os.path.getsize(data) / 1e6:.0f} MB, median of {a.runs} runs")
    print(f"  {'side':<14} {'wall s':>8} {'rows/s':>10} {'max RSS MiB':>12} {'× python':>9} {'× python per core':>18}")
    for k in sides:
        cores = 2 if k.endswith(" 2") else 1
        x = med["python"] / med[k]
        print(f"  {k:<14} {med[k]:8.2f} {a.rows / med[k]:10,.0f} {statistics.median(rss[k]):12.0f} {x:9.1f} {x / cores:18.1f}")
    out_py = os.path.join(DATA_DIR, "steps_python_out.jsonl")
    out_rf = os.path.join(DATA_DIR, "steps_referee_out.jsonl")
    subprocess.run(sides["python"][:3] + ["-o", out_py], check=True)
    subprocess.run([a.referee, "score", spec, data, "-o", out_rf], check=True, capture_output=True)
    same_reward = same_steps = 0
    with open(out_py) as fp, open(out_rf) as fr:
        for lp, lr in zip(fp, fr):
            p, r = json.loads(lp), json.loads(lr)
            same_reward += r["reward"] is not None and abs(p["reward"] - r["reward"]) < 1e-9
            same_steps += [(s["start"], s["end"], s["value"]) for s in p["step_rewards"]] == [
                (s["start"], s["end"], s["value"]) for s in r["step_rewards"]]
    print(f"  agreement: rewards {same_reward:,} of {a.rows:,} rows, step rewards {same_steps:,} of {a.rows:,}")


if __name__ == "__main__":
    main()
