#!/usr/bin/env python3
"""Referee's `json_schema` vs Python's `jsonschema` package on the same structured-output rows:
throughput on one core and per-row agreement.

  python rewards   py_anchor.py's reward loop (thinking strip, json.loads or the fenced block,
                   a cached Draft202012Validator per schema, is_valid) over rows already in
                   memory: reading and parsing the rows is excluded. One core (the GIL).
  referee -j 1     `referee score spec.yaml ROWS -o /dev/null --summary-json -j 1`: the CLI's
                   own samples/second, which *includes* reading and parsing every row and
                   writing every result, so its ratio is a lower bound.
  referee scoring  n / (wall(spec, -j 1) - wall(const spec, -j 1)): the scoring-only rate,
                   like for like with `python rewards` (the const spec does all the CLI's work
                   except grading). Median of the per-run differences.
  ... (CPU)        the same two figures from CPU time (user + system of the child; the anchor's
                   process_time) instead of wall time: on a machine shared with other jobs the
                   wall-time difference swings with the load, CPU time much less.
Runs are interleaved; figures are medians over --runs; ratios are of medians from this run.

The anchor runs in a venv under ~/.cache/referee/bench-venv (created here with the pinned
`jsonschema` from PyPI when missing). Rows come from gen_rows.py (seeded), written to
benches/data/ (git-ignored).

Usage: python3 benches/json_schema/compare.py [--n 20000] [--runs 5] [--build auto|never]
"""
import argparse, json, os, resource, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "benches", "data")
VENV = os.path.expanduser("~/.cache/referee/bench-venv")
PIN = "jsonschema==4.23.0"


def venv_python():
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    ok = subprocess.run([py, "-c", "import jsonschema"], capture_output=True).returncode == 0
    if not ok:
        subprocess.run([py, "-m", "pip", "install", "-q", PIN], check=True)
    return py


def referee(binary, spec, rows, out="/dev/null"):
    cmd = [binary, "score", spec, rows, "-o", out, "--summary-json", "-j", "1"]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        sys.exit("referee failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return json.loads(p.stderr.strip().splitlines()[-1]), wall, cpu


def main():
    ap = argparse.ArgumentParser()
    # 100,000 rows: at 20,000 the scoring is ~25 ms of a ~220 ms process, and the difference of
    # two such runs swung from 32x to 53x between rounds on a quiet machine.
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", choices=["auto", "never"], default="auto")
    ap.add_argument("--referee", default=os.path.join(ROOT, "target", "release", "referee"))
    a = ap.parse_args()
    if a.build == "auto":
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "referee-cli"], cwd=ROOT, check=True)
    os.makedirs(DATA, exist_ok=True)
    const = os.path.join(DATA, "const.yaml")
    with open(const, "w") as f:
        f.write("type: const\nvalue: 1\n")
    py = venv_python()
    results = {}
    for scenario in ("item", "inline"):
        results[scenario] = scenario_run(a, py, const, scenario)
    with open(os.path.join(DATA, "json_schema_compare.json"), "w") as f:
        json.dump(results, f, indent=1)


def scenario_run(a, py, const, scenario):
    """`item`: 24 schemas, each row's in its item (validators cached on both sides).
    `inline`: one schema (the nested order family) in the spec, every row graded against it."""
    rows = os.path.join(DATA, "json_schema_%s_rows.jsonl" % scenario)
    gen = [sys.executable, os.path.join(HERE, "gen_rows.py"), "--n", str(a.n), "--out", rows]
    subprocess.run(gen + (["--single"] if scenario == "inline" else []), check=True, capture_output=True)
    spec = os.path.join(HERE, "spec.yaml")
    if scenario == "inline":
        with open(rows) as f:
            schema = json.loads(f.readline())["item"]["schema"]
        spec = os.path.join(DATA, "json_schema_inline.yaml")
        with open(spec, "w") as f:
            json.dump({"type": "json_schema", "require_all": False, "schema": schema}, f)
    anchor = [py, os.path.join(HERE, "py_anchor.py"), rows] + (["--inline"] if scenario == "inline" else [])
    with open(rows) as f:
        f.read()  # warm the page cache for every side
    py_t, py_cpu, rate, wall, base, cpu, base_cpu = [], [], [], [], [], [], []
    py_rewards = version = None
    for run in range(a.runs):
        res = json.loads(subprocess.run(anchor, capture_output=True, text=True, check=True).stdout)
        py_t.append(res["seconds"])
        py_cpu.append(res["cpu_seconds"])
        py_rewards, version = res["rewards"], res["jsonschema"]
        s, w, c = referee(a.referee, spec, rows)
        rate.append(s["samples_per_second"])
        wall.append(w)
        cpu.append(c)
        _, w, c = referee(a.referee, const, rows)
        base.append(w)
        base_cpu.append(c)
        print("  %s run %d/%d: python %.0f/s, referee -j1 %.0f/s" % (scenario, run + 1, a.runs, a.n / py_t[-1], rate[-1]), file=sys.stderr)
    out = os.path.join(DATA, "json_schema_%s_out.jsonl" % scenario)
    referee(a.referee, spec, rows, out)
    ours = [json.loads(l).get("reward") for l in open(out)]
    disagree = [(i, ours[i], py_rewards[i]) for i in range(a.n) if ours[i] != py_rewards[i]]
    med = statistics.median
    py_rate = a.n / med(py_t)
    scoring = [a.n / (w - b) for w, b in zip(wall, base) if w > b]
    scoring_cpu = [a.n / (c - b) for c, b in zip(cpu, base_cpu) if c > b]
    py_cpu_rate = a.n / med(py_cpu)
    print()
    print("scenario %s: %d rows, python jsonschema %s, %d runs, load average %s" % (
        scenario, a.n, version, a.runs, " ".join("%.1f" % x for x in os.getloadavg())))
    print("%-34s %12s %10s" % ("measurement", "rows/s", "ratio"))
    print("%-34s %12.0f %10s" % ("python jsonschema (rewards)", py_rate, "1x"))
    print("%-34s %12.0f %9.1fx" % ("referee -j 1 (CLI, parse incl.)", med(rate), med(rate) / py_rate))
    if scoring:
        print("%-34s %12.0f %9.1fx" % ("referee scoring only (est.)", med(scoring), med(scoring) / py_rate))
    print("%-34s %12.0f %10s" % ("python jsonschema (CPU)", py_cpu_rate, "1x"))
    if scoring_cpu:
        print("%-34s %12.0f %9.1fx" % ("referee scoring only (CPU)", med(scoring_cpu), med(scoring_cpu) / py_cpu_rate))
    print("agreement: %d/%d rows equal; valid by python: %d" % (
        a.n - len(disagree), a.n, sum(1 for r in py_rewards if r == 1.0)))
    for i, o, p in disagree[:20]:
        print("  row %d: referee %s, python %s" % (i, o, p))
    return {"n": a.n, "python_rate": py_rate, "referee_cli_rate": med(rate),
            "referee_scoring_rate": med(scoring) if scoring else None,
            "python_cpu_rate": py_cpu_rate,
            "referee_scoring_cpu_rate": med(scoring_cpu) if scoring_cpu else None,
            "disagreements": disagree[:100]}

if __name__ == "__main__":
    main()
