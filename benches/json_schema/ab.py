#!/usr/bin/env python3
"""Paired CPU-time comparison of two `referee` builds on the json_schema bench rows: each round
runs both builds on the bench spec and on a const spec (`-j 1`, interleaved), and the grading
cost per row is (CPU(spec) - CPU(const)) / rows, CPU being user + system of the child. Less
noisy than compare.py's ratios for telling two builds apart, since no Python run sits between.

Usage: python3 benches/json_schema/ab.py OLD_BINARY NEW_BINARY [--rounds 9] [--scenario item|inline]
(run compare.py once first: it writes the rows and specs under benches/data/).
"""
import argparse, os, resource, statistics, subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "data")


def cpu(binary, spec, rows):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, "score", spec, rows, "-o", "/dev/null", "--summary-json", "-j", "1"],
                   capture_output=True, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--scenario", choices=["item", "inline"], default="item")
    a = ap.parse_args()
    rows = os.path.join(DATA, "json_schema_%s_rows.jsonl" % a.scenario)
    spec = os.path.join(HERE, "spec.yaml") if a.scenario == "item" else os.path.join(DATA, "json_schema_inline.yaml")
    const = os.path.join(DATA, "const.yaml")
    n = sum(1 for _ in open(rows))
    per_row = {"old": [], "new": []}
    for _ in range(a.rounds):
        for name in ("old", "new"):
            b = getattr(a, name)
            per_row[name].append((cpu(b, spec, rows) - cpu(b, const, rows)) / n * 1e6)
    for name in ("old", "new"):
        v = per_row[name]
        print("%s: grading %.3f us/row CPU (median of %d rounds; min %.3f, max %.3f)" % (
            name, statistics.median(v), len(v), min(v), max(v)))


if __name__ == "__main__":
    main()
