#!/usr/bin/env python3
"""Referee vs plain-Python rewards on the same GSM8K-like rows: throughput and agreement.

The Python anchor is what a TRL/verl user writes today, stdlib only and no Referee import:
TRL's `think_format_reward` (regex `^<think>(?!.*<think>)(.*?)</think>.*$`, DOTALL) plus
verl's gsm8k `compute_score` in strict mode (last `#### N` in the last 300 characters, commas
removed, string equality with the ground truth). Referee scores the same rows with
`benches/specs/rule_only.yaml` (format + correct, plain sum), through its CLI.

What is timed, and how (the numbers are not all measured the same way, so they are all shown):
  python rewards   the two reward functions over lists already in memory: JSON loading is
                   excluded (the anchor at its most favourable). One core, the GIL.
  python e2e       read the file + json.loads per line + the rewards: what the CLI does,
                   minus writing results.
  referee -j N     `referee score SPEC DATA -o /dev/null --summary-json -j N`: the CLI's own
                   samples/second (read, parse JSON, map rows, score, serialize results; no
                   process start-up or spec compile) and the wall-clock of the whole command
                   (process start to exit). Parsing is *not* excluded, so the ratio against
                   `python rewards` is a lower bound on Referee's scoring-only advantage (see
                   also `spec/rule_only/score_seq` in crates/referee-core/benches/score.rs).
  referee scoring  an estimate of Referee's scoring-only rate on the same rows, in the same
                   run: n / (wall(rule_only, -j 1) - wall(const, -j 1)), where the `const`
                   spec (`{type: const, value: 1}`) does all the CLI's work except grading.
                   This is the like-for-like match for `python rewards` (JSON excluded on
                   both sides); median of the per-run differences.
Runs are interleaved (python, referee -j1, referee -j2, ...) so drift on a shared machine hits
every side alike; every figure is the median over --runs runs, every ratio is of medians taken
in this one invocation (the median of the per-run ratios is printed too). The data file is read once before timing, so the page cache is warm
for every side. Then one untimed run keeps Referee's per-row results and compares them with
Python's, row by row, listing every disagreement by category.

Files written next to the data file (git-ignored under benches/data/): const.yaml (the
baseline spec) and referee_rule_only_out.jsonl (the per-row results).

Usage: python3 benches/compare_python.py [--data benches/data/gsm8k_100k.jsonl]
           [--spec benches/specs/rule_only.yaml] [--referee target/release/referee] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------- the Python anchor, plainly

THINK_PATTERN = re.compile(r"^<think>(?!.*<think>)(.*?)</think>.*$", re.DOTALL | re.MULTILINE)


def think_format_reward(completions, **kwargs):
    """TRL's `trl.rewards.think_format_reward`: 1.0 when the completion opens with one
    `<think>` block that is closed, else 0.0. Accepts plain strings or chat messages."""
    contents = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if THINK_PATTERN.match(c) else 0.0 for c in contents]


_SOLUTION_CLIP_CHARS = 300
STRICT_PATTERN = re.compile(r"#### (\-?[0-9\.\,]+)")


def extract_solution(solution_str):
    """verl gsm8k, strict: the last `#### N` (in the last 300 characters), commas removed."""
    if len(solution_str) > _SOLUTION_CLIP_CHARS:
        solution_str = solution_str[-_SOLUTION_CLIP_CHARS:]
    solutions = STRICT_PATTERN.findall(solution_str)
    if len(solutions) == 0:
        return None
    return solutions[-1].replace(",", "").replace("$", "")


def compute_score(solution_str, ground_truth, format_score=0.0, score=1.0):
    """verl gsm8k `compute_score`: 1.0 when the extracted answer equals the ground truth."""
    answer = extract_solution(solution_str)
    if answer is None:
        return 0.0
    return score if answer == ground_truth else format_score


def python_rewards(completions, solutions, times=None):
    t0 = time.perf_counter()
    fmt = think_format_reward(completions)
    t1 = time.perf_counter()
    acc = [compute_score(c, s) for c, s in zip(completions, solutions)]
    t2 = time.perf_counter()
    total = [f + a for f, a in zip(fmt, acc)]
    if times is not None:
        times.append((t1 - t0, t2 - t1))
    return fmt, acc, total


def python_e2e(path):
    completions, solutions = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            completions.append(row["completion"])
            solutions.append(row["solution"])
    return python_rewards(completions, solutions)


# ---------------------------------------------------------------- Referee through its CLI


def run_referee(binary, spec, data, threads, out="/dev/null"):
    """Runs the CLI once: its JSON summary, the command's wall-clock, and its CPU seconds."""
    cmd = [binary, "score", spec, data, "-o", out, "--summary-json", "-j", str(threads)]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"referee failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    summary = json.loads(p.stderr.strip().splitlines()[-1])
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return summary, wall, cpu


# ---------------------------------------------------------------- agreement


def classify(text, field):
    """A disagreement's category, from the completion text alone."""
    tail = text[-_SOLUTION_CLIP_CHARS:]
    markers = re.findall(r"^#### ?(.*)$", text, re.MULTILINE)
    if field == "format":
        if not text.startswith("<think>"):
            return "format: text before <think>"
        if text.count("<think>") > 1:
            return "format: second <think> block"
        if "</think>" not in text:
            return "format: <think> never closed"
        return "format: other"
    if not markers:
        return "correct: no `####` line (answer in \\boxed{} or prose)"
    if re.search(r"#### \S+ or \S+", tail):
        return "correct: `#### a or b` (two answers)"
    if re.search(r"#### -?\d[\d.]*,\s*\d", tail) and not re.fullmatch(r"-?\d{1,3}(,\d{3})+", markers[-1].strip()):
        return "correct: `#### a, b, c` (answer list)"
    if len(markers) > 1:
        return "correct: several `####` lines"
    if len(markers) == 1 and "," in markers[0]:
        return "correct: thousands separator"
    if "####" in text and "####" not in tail:
        return "correct: `####` more than 300 chars before the end"
    return "correct: other"


def agreement(rows, fmt, acc, total, out_path):
    n = len(rows)
    cats = Counter()
    examples = defaultdict(list)
    statuses = Counter()
    agree = 0
    with open(out_path, encoding="utf-8") as f:
        results = [json.loads(line) for line in f]
    if len(results) != n:
        sys.exit(f"referee wrote {len(results)} results for {n} rows")
    for i, (row, r) in enumerate(zip(rows, results)):
        statuses[r["status"] if r["status"] != "error" else f"error:{r.get('reason')}"] += 1
        rf = r["components"].get("format")
        rc = r["components"].get("correct")
        rr = r["reward"]
        same = rr is not None and abs(rr - total[i]) < 1e-9
        if same:
            agree += 1
            continue
        text = row["completion"]
        for field, mine, theirs in (("format", fmt[i], rf), ("correct", acc[i], rc)):
            if theirs is None or abs(theirs - mine) > 1e-9:
                cat = classify(text, field) if theirs is not None else f"{field}: referee {r['status']} {r.get('reason')}"
                key = f"{cat} [python {mine:g}, referee {theirs}]"
                cats[key] += 1
                if len(examples[key]) < 2:
                    examples[key].append((row["id"], row["solution"], text[-90:]))
    return agree, cats, examples, statuses


# ---------------------------------------------------------------- main


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"nproc {os.cpu_count()}, {model}, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(HERE, "data", "gsm8k_100k.jsonl"))
    ap.add_argument("--spec", default=os.path.join(HERE, "specs", "rule_only.yaml"))
    ap.add_argument("--referee", default=os.path.join(ROOT, "target", "release", "referee"))
    ap.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median reported)")
    ap.add_argument("--threads", default="1,2", help="referee -j values to time (default 1,2)")
    args = ap.parse_args()
    for p, hint in ((args.data, "python3 benches/gen_data.py"), (args.referee, "cargo build --release -p referee-cli")):
        if not os.path.exists(p):
            sys.exit(f"{p} not found: run `{hint}` first")
    threads = [int(t) for t in args.threads.split(",")]

    print(f"machine: {machine()}")
    print(f"data: {args.data}; spec: {args.spec}; {args.runs} runs each, medians")
    with open(args.data, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    n = len(rows)
    completions = [r["completion"] for r in rows]
    solutions = [r["solution"] for r in rows]

    py_t, e2e_t, parts = [], [], []
    cli = {j: {"rate": [], "wall": [], "cpu": []} for j in threads}
    const_spec = os.path.join(os.path.dirname(os.path.abspath(args.data)), "const.yaml")
    with open(const_spec, "w", encoding="utf-8") as f:
        f.write("# baseline for compare_python.py: every CLI cost except grading\ntype: const\nvalue: 1\n")
    base_wall = []
    for run in range(args.runs):
        t0 = time.perf_counter()
        fmt, acc, total = python_rewards(completions, solutions, parts)
        py_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        python_e2e(args.data)
        e2e_t.append(time.perf_counter() - t0)
        for j in threads:
            summary, wall, cpu = run_referee(args.referee, args.spec, args.data, j)
            if summary["samples"] != n:
                sys.exit(f"referee scored {summary['samples']} samples, expected {n}")
            cli[j]["rate"].append(summary["samples_per_second"])
            cli[j]["wall"].append(wall)
            cli[j]["cpu"].append(cpu)
        base_wall.append(run_referee(args.referee, const_spec, args.data, 1)[1])
        print(f"  run {run + 1}/{args.runs}: python {n / py_t[-1]:,.0f}/s, "
              + ", ".join(f"referee -j{j} {cli[j]['rate'][-1]:,.0f}/s ({cli[j]['wall'][-1]:.3f}s wall)" for j in threads),
              file=sys.stderr)

    med = statistics.median
    py_rate = n / med(py_t)
    e2e_rate = n / med(e2e_t)
    print()
    print(f"{'measurement':<44} {'samples/s':>12} {'vs python rewards':>18} {'vs python e2e':>14}")
    print(f"{'python rewards only (1 core, JSON excluded)':<44} {py_rate:>12,.0f} {'1.0x':>18} {py_rate / e2e_rate:>13.1f}x")
    print(f"{'python e2e (1 core, read + json.loads)':<44} {e2e_rate:>12,.0f} {e2e_rate / py_rate:>17.2f}x {'1.0x':>14}")
    for j in threads:
        r = med(cli[j]["rate"])
        w = med(cli[j]["wall"])
        print(f"{f'referee CLI -j {j} (own summary)':<44} {r:>12,.0f} {r / py_rate:>17.1f}x {r / e2e_rate:>13.1f}x")
        print(f"{f'referee CLI -j {j} (wall-clock of the command)':<44} {n / w:>12,.0f} {n / w / py_rate:>17.1f}x {n / w / e2e_rate:>13.1f}x")
    if 1 in threads:
        diffs = [w - b for w, b in zip(cli[1]["wall"], base_wall)]
        d = med(diffs)
        if d > 0:
            print(f"{'referee scoring only, 1 thread (estimate)':<44} {n / d:>12,.0f} {n / d / py_rate:>17.1f}x {'':>14}")
            print(f"  = n / (wall rule_only -j 1 - wall const -j 1); const baseline median {med(base_wall):.3f}s, "
                  f"grading median {d:.3f}s ({1e6 * d / n:.2f} us/sample)")
    print()
    for j in threads:
        per_run = [r / (n / t) for r, t in zip(cli[j]["rate"], py_t)]
        print(f"referee -j {j} / python rewards, median of the {args.runs} per-run ratios: "
              f"{med(per_run):.1f}x (min {min(per_run):.1f}x, max {max(per_run):.1f}x)")
    for j in threads:
        w = cli[j]["wall"]
        print(f"wall-clock, {n:,} samples, -j {j}: median {med(w):.3f}s (min {min(w):.3f}s, max {max(w):.3f}s)")
    print(f"python rewards: median {med(py_t):.3f}s (min {min(py_t):.3f}s, max {max(py_t):.3f}s); "
          f"think_format_reward {1e6 * med(p[0] for p in parts) / n:.2f} us/sample, "
          f"compute_score {1e6 * med(p[1] for p in parts) / n:.2f} us/sample")
    for j in threads:
        print(f"referee -j {j}: CPU time / wall-clock = {med(cli[j]['cpu']) / med(cli[j]['wall']):.2f} cores busy")
    if 1 in threads:
        ratio = med(cli[1]["rate"]) / py_rate
        d = med([w - b for w, b in zip(cli[1]["wall"], base_wall)])
        only = n / d / py_rate if d > 0 else float("nan")
        print(f"target >= 50x python on one core: CLI {ratio:.1f}x, scoring only {only:.1f}x -> "
              f"{'MET' if max(ratio, only) >= 50 else 'MISSED'}")
    if 2 in threads:
        w = med(cli[2]["wall"])
        print(f"target whole file < 1 s on two cores: {w:.3f}s -> {'MET' if w < 1.0 else 'MISSED'}")

    # Agreement: one more (untimed) run that keeps the per-row results.
    out_path = os.path.join(os.path.dirname(os.path.abspath(args.data)), "referee_rule_only_out.jsonl")
    print(f"\nreferee: {subprocess.run([args.referee, '--version'], capture_output=True, text=True).stdout.strip()} ({args.referee})")
    run_referee(args.referee, args.spec, args.data, max(threads), out=out_path)
    agree, cats, examples, statuses = agreement(rows, fmt, acc, total, out_path)
    print(f"agreement (reward equal): {agree:,}/{n:,} = {100 * agree / n:.2f}% "
          f"({'>= 99%: OK' if agree >= 0.99 * n else 'BELOW 99%'}); referee statuses: {dict(statuses)}")
    unexplained = sum(c for k, c in cats.items() if k.split(" [")[0].endswith("other") or "referee" in k.split(" [")[0])
    print(f"  disagreements by category (a row can count under both components); "
          f"uncategorised: {unexplained}")
    for key, count in cats.most_common():
        print(f"  {count:>6}  {key}")
        for rid, sol, tail in examples[key]:
            print(f"          e.g. {rid} (solution {sol}): ...{tail!r}")


if __name__ == "__main__":
    main()
