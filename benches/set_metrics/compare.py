#!/usr/bin/env python3
"""Referee's set and ranking graders against plain-Python reference implementations
(py_reference.py: SQuAD v1.1's evaluate script, a set F1, a standard NDCG@k and MRR) on the
same seeded rows: every reward must agree to 1e-9, and throughput is reported per core.

  python           py_reference.py's reward loop over rows already in memory (reading and
                   parsing the file excluded). One core (the GIL).
  referee -j 1     `referee score SPEC ROWS -o FILE --summary-json -j 1`: the CLI's own
                   samples/second, *including* reading and parsing every row and writing every
                   result, so its ratio is a lower bound.
  referee scoring  n / (CPU(spec) - CPU(const spec)), CPU being user + system of the child:
                   the scoring-only rate, like for like with `python` (the const spec does all
                   the CLI's work except grading). Median of the per-run differences.
Runs are interleaved; figures are medians over --runs; ratios are of medians from this run.

Rows come from gen_rows.py (seeded), written to benches/data/ (git-ignored). No packages
beyond the standard library are needed.

Usage: python3 benches/set_metrics/compare.py [--n 100000] [--runs 3] [--build auto|never]
       [--referee PATH] [--only set_casefold,ndcg10,...]
"""
import argparse, json, os, resource, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "benches", "data")
# (spec name, row kind): the spec is specs/<name>.yaml, py_reference.py knows the name.
CASES = [("set_casefold", "set"), ("set_squad", "set"), ("ndcg10", "ranking"), ("mrr", "ranking"),
         ("squad_f1", "squad"), ("squad_em", "squad")]


def referee(binary, spec, rows, out):
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
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", choices=["auto", "never"], default="auto")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap.add_argument("--referee", default=os.path.join(target, "release", "referee"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    if a.build == "auto":
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "referee-cli"], cwd=ROOT, check=True)
    os.makedirs(DATA, exist_ok=True)
    const = os.path.join(DATA, "const.yaml")
    with open(const, "w") as f:
        f.write("type: const\nvalue: 1\n")
    only = set(filter(None, a.only.split(",")))
    rows_of = {}
    failed = False
    print("%d rows per case, %d runs, python %s, load average %s" % (
        a.n, a.runs, sys.version.split()[0], " ".join("%.1f" % x for x in os.getloadavg())))
    print("%-14s %14s %16s %16s %9s %9s  %s" % (
        "case", "python rows/s", "referee -j1 /s", "scoring (CPU)/s", "ratio -j1", "ratio", "agreement"))
    results = {}
    for name, kind in CASES:
        if only and name not in only:
            continue
        if kind not in rows_of:
            rows = os.path.join(DATA, "set_metrics_%s_rows.jsonl" % kind)
            subprocess.run([sys.executable, os.path.join(HERE, "gen_rows.py"), "--kind", kind,
                            "--n", str(a.n), "--out", rows], check=True)
            with open(rows) as f:
                f.read()  # warm the page cache for every side
            rows_of[kind] = rows
        rows = rows_of[kind]
        spec = os.path.join(HERE, "specs", name + ".yaml")
        out = os.path.join(DATA, "set_metrics_%s_out.jsonl" % name)
        py_t, py_cpu, rate, cpu, base_cpu = [], [], [], [], []
        py_rewards = None
        for _ in range(a.runs):
            res = json.loads(subprocess.run([sys.executable, os.path.join(HERE, "py_reference.py"), rows, name],
                                            capture_output=True, text=True, check=True).stdout)
            py_t.append(res["seconds"])
            py_cpu.append(res["cpu_seconds"])
            py_rewards = res["rewards"]
            s, _, c = referee(a.referee, spec, rows, out)
            rate.append(s["samples_per_second"])
            cpu.append(c)
            _, _, c = referee(a.referee, const, rows, "/dev/null")
            base_cpu.append(c)
        ours = [json.loads(l) for l in open(out)]
        bad = [(i, o.get("reward"), o.get("status"), p) for i, (o, p) in enumerate(zip(ours, py_rewards))
               if o.get("status") != "ok" or o.get("reward") is None or abs(o["reward"] - p) > 1e-9]
        if len(ours) != len(py_rewards):
            bad.append(("count", len(ours), None, len(py_rewards)))
        med = statistics.median
        py_rate = a.n / med(py_cpu)
        scoring = [a.n / (c - b) for c, b in zip(cpu, base_cpu) if c > b]
        sc = med(scoring) if scoring else float("nan")
        print("%-14s %14.0f %16.0f %16.0f %8.1fx %8.1fx  %d/%d" % (
            name, py_rate, med(rate), sc, med(rate) / py_rate, sc / py_rate, a.n - len(bad), a.n))
        for i, o, st, p in bad[:10]:
            print("  row %s: referee %s (%s), python %s" % (i, o, st, p))
        failed |= bool(bad)
        results[name] = {"python_cpu_rate": py_rate, "referee_cli_rate": med(rate),
                         "referee_scoring_cpu_rate": sc, "disagreements": bad[:100]}
    with open(os.path.join(DATA, "set_metrics_compare.json"), "w") as f:
        json.dump(results, f, indent=1)
    if failed:
        sys.exit("disagreements with the Python reference")


if __name__ == "__main__":
    main()
