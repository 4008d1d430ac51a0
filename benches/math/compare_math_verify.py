#!/usr/bin/env python3
"""referee-math vs HuggingFace Math-Verify on the same generated pairs: speed, memory, agreement.

Steps (each can be skipped, see the flags):
  1. a virtualenv at ~/.cache/referee/math-verify-venv with math-verify==0.9.0 from PyPI, its
     ANTLR runtime pinned to 4.13.2 (what its antlr4-13-2 extra selects) and sympy 1.14.0
     (created once; a marker file records what was installed);
  2. `cargo build --release -p referee-math --example verify_jsonl` (the repo's default target
     dir: CARGO_TARGET_DIR is removed from the build's environment);
  3. `benches/math/gen_pairs.py -n N --seed S` -> benches/data/math_pairs.jsonl;
  4. --runs times, interleaved, each pinned to one core with `taskset -c 0`:
       Math-Verify  a child process of the venv's Python running this file in worker mode over
                    every NON-hostile pair (the hostile nested powers hang it forever, issue
                    #65): per pair `verify(parse("\\boxed{" + gold + "}"), parse(completion))`
                    with default configs and timeouts (gold wrapped in \\boxed{} as verl does),
                    timed with time.process_time_ns() (CPU time) and perf_counter_ns() (wall).
                    The import and one warm-up call (ANTLR set-up, ~66 ms) happen before timing
                    and are reported on their own.
       referee-math `target/release/examples/verify_jsonl` over ALL pairs: the file is read and
                    parsed first, then each `Verifier::new(Options::default()).verify(Gold(g),
                    Answer(c))` call is timed with Instant (wall time of the call, pinned). Its
                    statistics are reported on the same non-hostile pairs as Math-Verify (the
                    like-for-like numbers) and separately for the hostile ones.
     Peak RSS of each child comes from os.wait4() on that child (ru_maxrss), so neither the
     cargo build nor the other side pollutes it; both children hold all their pairs in memory.
  5. Report, as markdown on stdout and JSON in benches/data/math_compare.json (the markdown is
     also saved as benches/data/math_compare.md): pairs per CPU-second on one core, p50/p99/max
     latency, peak RSS, agreement of each with the generator's `expected` label (referee-math's
     semantics), agreement between the two, the throughput ratio, and EVERY pair on which the
     two disagree, grouped by category (gold, completion tail, both verdicts).

Timing notes. Math-Verify's per-pair figure is CPU time, referee-math's is the wall time of the
call on a pinned core; wall >= CPU, so on a busy machine the ratio understates referee-math.
All timing figures are medians over --runs; the ratio is given both as the ratio of the medians
and as the median of the per-run ratios. Verdicts are taken from the first run (and the runs are
checked to agree; a Math-Verify 5 s timeout under load can flip a verdict).

Usage: python3 benches/math/compare_math_verify.py [--n 10000] [--seed 12345] [--runs 3]
           [--skip-install] [--rust-bin PATH] [--cpu 0] [--max-listed K]
Stdlib only; math-verify lives in the venv and is imported only in worker mode.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA_DIR = os.path.join(ROOT, "benches", "data")
VENV = os.path.join(os.path.expanduser("~"), ".cache", "referee", "math-verify-venv")
# math-verify's `antlr4-13-2` extra, spelled out: through the extra pip only warns that
# latex2sympy2_extended "does not provide the extra 'antlr4_13_2'" and leaves the runtime to the
# range `>=4.9.3,<=4.13.2`. sympy is pinned to the version the notes measured.
MV_REQUIREMENTS = ["math-verify==0.9.0", "antlr4-python3-runtime==4.13.2", "sympy==1.14.0"]
RUST_BIN = os.path.join(ROOT, "target", "release", "examples", "verify_jsonl")

# ---------------------------------------------------------------- worker mode (runs in the venv)


def mv_worker(in_path: str, out_path: str) -> None:
    """Runs Math-Verify over `in_path` (JSONL gold/completion), one result line per pair."""
    t0 = time.perf_counter()
    from math_verify import parse, verify  # noqa: PLC0415 (only the venv has it)

    import_s = time.perf_counter() - t0
    from importlib.metadata import version  # noqa: PLC0415

    pairs = []
    with open(in_path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                pairs.append(("\\boxed{" + row["gold"] + "}", row["completion"]))
    t0 = time.perf_counter()
    verify(parse("\\boxed{\\frac{1}{2}}"), parse("so $\\boxed{0.5}$"))  # warm-up, untimed
    first_call_s = time.perf_counter() - t0
    rss_ready = vmhwm_kib()
    cpu = time.process_time_ns
    wall = time.perf_counter_ns
    errors = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for gold, completion in pairs:
            err = None
            c0, w0 = cpu(), wall()
            try:
                gp = parse(gold)
                pp = parse(completion)
                v = verify(gp, pp)
            except Exception as e:  # noqa: BLE001 (raise_on_error=False should make this rare)
                v, gp, pp, err = False, [], [], repr(e)[:200]
            c1, w1 = cpu(), wall()
            if err:
                errors += 1
            rec = {"v": 1 if v else 0, "cpu_ns": c1 - c0, "wall_ns": w1 - w0,
                   "pred": str(pp[-1])[:200] if pp else None, "gold_ok": bool(gp)}
            if err:
                rec["error"] = err
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            out.flush()  # progress is visible if a pair ever hangs
    summary = {
        "mv_summary": True,
        "version": version("math-verify"),
        "python": platform.python_version(),
        "import_s": import_s,
        "first_call_s": first_call_s,
        "rss_ready_kib": rss_ready,
        "peak_rss_kib": vmhwm_kib(),
        "errors": errors,
        "n": len(pairs),
    }
    print(json.dumps(summary), file=sys.stderr, flush=True)


def vmhwm_kib():
    """Peak RSS of this process (VmHWM). Not ru_maxrss: after fork+exec that still holds the
    high-water mark of the forking parent's image (here, a Python that has loaded all pairs)."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# ---------------------------------------------------------------- set-up


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ensure_venv(skip_install: bool) -> str:
    py = os.path.join(VENV, "bin", "python")
    marker = os.path.join(VENV, ".referee-installed")
    installed = open(marker).read().strip() if os.path.exists(marker) else None
    want = " ".join(MV_REQUIREMENTS)
    if installed == want and os.path.exists(py):
        return py
    if skip_install:
        if os.path.exists(py):
            return py
        sys.exit(f"--skip-install, but there is no venv at {VENV}")
    if not os.path.exists(py):
        log(f"creating venv {VENV}")
        os.makedirs(os.path.dirname(VENV), exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    log(f"installing {want} into {VENV}")
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *MV_REQUIREMENTS],
                   check=True)
    subprocess.run([py, "-c", "import math_verify"], check=True)
    with open(marker, "w") as f:
        f.write(want + "\n")
    return py


def build_rust() -> str | None:
    env = dict(os.environ)
    env.pop("CARGO_TARGET_DIR", None)
    cmd = ["cargo", "build", "--release", "-p", "referee-math", "--example", "verify_jsonl"]
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        tail = "\n".join(p.stderr.strip().splitlines()[-15:])
        log(f"cargo build failed (exit {p.returncode}); continuing with Math-Verify alone:\n{tail}")
        return None
    return RUST_BIN


def run_child(cmd, stdout_path, stderr_path, timeout_s):
    """Runs `cmd` with stdout/stderr to files; returns (rc, wall_s, rusage of that child only)."""
    with open(stdout_path, "w") as out, open(stderr_path, "w") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout_s:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                p.returncode = -9
                return None, time.perf_counter() - t0, ru
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        return p.returncode, wall, ru


def run_rust(rust_bin, pin, path, n, repeat, tag):
    """One run of the example; (records, summary, wall_s, rusage) or None on failure."""
    out = os.path.join(DATA_DIR, f"math_referee_{tag}_out.jsonl")
    err = os.path.join(DATA_DIR, f"math_referee_{tag}_err.txt")
    rc, wall, ru = run_child(pin + [rust_bin, path, "--repeat", str(repeat)], out, err, 600 + 0.1 * n * repeat)
    recs = [json.loads(line) for line in open(out, encoding="utf-8") if line.strip()]
    if rc != 0 or len(recs) != n:
        log(f"referee-math run failed (exit {rc}, {len(recs)}/{n} lines); continuing with Math-Verify "
            f"alone:\n{tail_text(err)}")
        return None
    return recs, last_json_line(err, "n") or {}, wall, ru


def last_json_line(path, key=None):
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if key is None or key in d:
                return d
    return None


def tail_text(path, n=10):
    try:
        return "\n".join(open(path, errors="replace").read().splitlines()[-n:])
    except OSError:
        return ""


# ---------------------------------------------------------------- statistics


def pct(sorted_vals, q):
    if not sorted_vals:
        return float("nan")
    k = min(len(sorted_vals) - 1, max(0, int(round(q / 100 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


def lat_stats(ns_list):
    s = sorted(ns_list)
    total = sum(s)
    return {
        "n": len(s),
        "sum_s": total / 1e9,
        "pairs_per_s": len(s) / (total / 1e9) if total else float("inf"),
        "p50_us": pct(s, 50) / 1e3,
        "p90_us": pct(s, 90) / 1e3,
        "p99_us": pct(s, 99) / 1e3,
        "max_us": (s[-1] / 1e3) if s else float("nan"),
        "mean_us": (total / len(s) / 1e3) if s else float("nan"),
    }


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def med_dict(dicts):
    keys = dicts[0].keys()
    return {k: med([d[k] for d in dicts]) for k in keys if isinstance(dicts[0][k], (int, float))}


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "crates/referee-math"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return {"cpu": model, "nproc": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "commit": commit + ("+dirty referee-math" if dirty else ""),
            "loadavg_start": os.getloadavg()}


# ---------------------------------------------------------------- markdown helpers


def md_cell(s, limit=None):
    s = "" if s is None else str(s)
    if limit and len(s) > limit:
        s = "…" + s[-limit:]
    # Cells are code spans: backslashes stay as written, only the table's `|` needs escaping.
    s = s.replace("|", "\\|").replace("\n", "⏎").replace("`", "'")
    return s


def fmt_rate(x):
    return "n/a" if x is None else f"{x:,.0f}"


def fmt_us(x):
    if x is None:
        return "n/a"
    return f"{x / 1000:.2f} ms" if x >= 1000 else f"{x:.1f} µs"


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="pairs to generate (default 10000)")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs of each side (default 3)")
    ap.add_argument("--skip-install", action="store_true", help="use the existing venv, never pip")
    ap.add_argument("--rust-bin", help="use this verify_jsonl binary instead of building it")
    ap.add_argument("--no-rust", action="store_true", help="Math-Verify alone")
    ap.add_argument("--rust-repeat", type=int, default=5,
                    help="passes of referee-math over the pairs per run; per-pair time is the median of "
                         "the passes, CPU time is the loop's over all passes (default 5)")
    ap.add_argument("--cpu", default="0", help="core to pin both sides to (taskset -c), default 0")
    ap.add_argument("--data", default=os.path.join(DATA_DIR, "math_pairs.jsonl"))
    ap.add_argument("--json-out", default=os.path.join(DATA_DIR, "math_compare.json"))
    ap.add_argument("--max-listed", type=int, default=0,
                    help="list at most K disagreements per category in the markdown (0 = all, the default)")
    ap.add_argument("--mv-max-seconds", type=float, default=None,
                    help="kill a Math-Verify run after this long (default 60 + 0.5 s per pair)")
    ap.add_argument("--worker-mv", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_mv:
        mv_worker(*args.worker_mv)
        return

    venv_py = ensure_venv(args.skip_install)
    rust_bin = None
    if not args.no_rust:
        rust_bin = args.rust_bin or build_rust()
        if rust_bin and not os.path.exists(rust_bin):
            log(f"no binary at {rust_bin}; continuing with Math-Verify alone")
            rust_bin = None

    os.makedirs(DATA_DIR, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_pairs.py"), "-n", str(args.n), "--seed",
                    str(args.seed), "-o", args.data, "-q"], check=True)
    pairs = [json.loads(line) for line in open(args.data, encoding="utf-8") if line.strip()]
    n_all = len(pairs)
    mv_idx = [i for i, p in enumerate(pairs) if not p["hostile"]]
    host_idx = [i for i, p in enumerate(pairs) if p["hostile"]]
    mv_in = os.path.join(DATA_DIR, "math_pairs_mv.jsonl")
    with open(mv_in, "w", encoding="utf-8") as f:
        for i in mv_idx:
            f.write(json.dumps({"gold": pairs[i]["gold"], "completion": pairs[i]["completion"]},
                               ensure_ascii=False) + "\n")
    mv_max = args.mv_max_seconds or (60 + 0.5 * len(mv_idx))
    pin = ["taskset", "-c", args.cpu]
    info = machine()
    log(f"{n_all:,} pairs ({len(host_idx)} hostile, kept out of Math-Verify); {args.runs} runs; "
        f"pinned to core {args.cpu}; rust: {rust_bin or 'none'}")

    mv_runs, rust_runs = [], []
    mv_verdicts = rust_verdicts = mv_preds = None
    mv_flips = rust_flips = 0
    for run in range(args.runs):
        # ---- Math-Verify
        out = os.path.join(DATA_DIR, "math_mv_out.jsonl")
        err = os.path.join(DATA_DIR, "math_mv_err.txt")
        rc, wall, ru = run_child(pin + [venv_py, os.path.abspath(__file__), "--worker-mv", mv_in, out], out,
                                 err, mv_max)
        recs = [json.loads(line) for line in open(out, encoding="utf-8") if line.strip()]
        if rc != 0 or len(recs) != len(mv_idx):
            stuck = pairs[mv_idx[len(recs)]] if len(recs) < len(mv_idx) else None
            sys.exit(f"Math-Verify run failed (exit {rc}, {len(recs)}/{len(mv_idx)} pairs done"
                     + (f", stuck on {stuck['id']} {stuck['category']} gold={stuck['gold']!r}" if stuck else "")
                     + f"):\n{tail_text(err)}")
        summ = last_json_line(err, "mv_summary") or {}
        st = lat_stats([r["cpu_ns"] for r in recs])
        stw = lat_stats([r["wall_ns"] for r in recs])
        mv_runs.append({
            "pairs_per_cpu_s": st["pairs_per_s"], "pairs_per_wall_s": stw["pairs_per_s"],
            "p50_us": st["p50_us"], "p90_us": st["p90_us"], "p99_us": st["p99_us"], "max_us": st["max_us"],
            "mean_us": st["mean_us"], "sum_cpu_s": st["sum_s"],
            "process_wall_s": wall, "process_cpu_s": ru.ru_utime + ru.ru_stime,
            "peak_rss_mib": (summ.get("peak_rss_kib") or 0) / 1024, "ru_maxrss_mib": ru.ru_maxrss / 1024,
            "import_s": summ.get("import_s"),
            "first_call_s": summ.get("first_call_s"), "rss_ready_mib": (summ.get("rss_ready_kib") or 0) / 1024,
            "errors": summ.get("errors"),
        })
        v = [r["v"] for r in recs]
        if mv_verdicts is None:
            mv_verdicts, mv_preds, mv_info = v, [r.get("pred") for r in recs], summ
        else:
            mv_flips += sum(a != b for a, b in zip(mv_verdicts, v))
        log(f"  run {run + 1}/{args.runs}: Math-Verify {st['pairs_per_s']:,.1f} pairs/CPU-s, "
            f"p50 {fmt_us(st['p50_us'])}, p99 {fmt_us(st['p99_us'])}, {mv_runs[-1]['peak_rss_mib']:.0f} MiB, "
            f"{wall:.1f} s wall")
        # ---- referee-math: timed over the Math-Verify pairs, then once over all pairs for verdicts
        if rust_bin:
            r = run_rust(rust_bin, pin, mv_in, len(mv_idx), args.rust_repeat, "timed")
            full = run_rust(rust_bin, pin, args.data, n_all, 1, "all") if r else None
            if not r or not full:
                rust_bin, rust_runs, rust_verdicts = None, [], None
                continue
            recs, summ, wall, ru = r
            st = lat_stats([x["ns"] for x in recs])
            cpu_ns = summ.get("loop_cpu_ns")
            cpu_rate = (len(recs) * args.rust_repeat / (cpu_ns / 1e9)) if cpu_ns and cpu_ns >= 1e8 else None
            frecs, fsumm, fwall, _ = full
            fns = [x["ns"] for x in frecs]
            sth = lat_stats([fns[i] for i in host_idx]) if host_idx else None
            rust_runs.append({
                "pairs_per_cpu_s": cpu_rate or st["pairs_per_s"], "cpu_from": "thread CPU of the loop" if cpu_rate
                else "sum of per-call wall", "pairs_per_s_calls": st["pairs_per_s"],
                "p50_us": st["p50_us"], "p90_us": st["p90_us"], "p99_us": st["p99_us"], "max_us": st["max_us"],
                "mean_us": st["mean_us"], "sum_s": st["sum_s"], "loop_cpu_s": (cpu_ns or 0) / 1e9,
                "all_pairs_per_s_calls": n_all / (sum(fns) / 1e9) if sum(fns) else None,
                "all_max_us": max(fns) / 1e3,
                "hostile_max_us": sth["max_us"] if sth else None,
                "hostile_mean_us": sth["mean_us"] if sth else None,
                "process_wall_s": fwall, "process_cpu_s": ru.ru_utime + ru.ru_stime,
                "peak_rss_mib": (fsumm.get("peak_rss_kib") or 0) / 1024,
                "peak_rss_timed_mib": (summ.get("peak_rss_kib") or 0) / 1024,
                "ru_maxrss_mib": ru.ru_maxrss / 1024,
                "unstable": summ.get("unstable", 0),
            })
            s_all = [x["status"] for x in frecs]
            timed_vs_all = sum(1 for k, i in enumerate(mv_idx) if recs[k]["status"] != s_all[i])
            rust_runs[-1]["timed_vs_all_status_diff"] = timed_vs_all
            if rust_verdicts is None:
                rust_verdicts = s_all
            else:
                rust_flips += sum(a != b for a, b in zip(rust_verdicts, s_all))
            log(f"  run {run + 1}/{args.runs}: referee-math {rust_runs[-1]['pairs_per_cpu_s']:,.0f} pairs/CPU-s "
                f"({rust_runs[-1]['cpu_from']}), p50 {fmt_us(st['p50_us'])}, p99 {fmt_us(st['p99_us'])}, "
                f"{rust_runs[-1]['peak_rss_mib']:.1f} MiB")

    info["loadavg_end"] = os.getloadavg()
    report = analyse(args, info, pairs, mv_idx, host_idx, mv_runs, rust_runs, mv_verdicts, mv_preds,
                     rust_verdicts, mv_flips, rust_flips, mv_info)
    with open(args.json_out, "w", encoding="utf-8") as f:
        json.dump(report["json"], f, indent=1, ensure_ascii=False)
    md = "\n".join(report["md"]) + "\n"
    with open(os.path.splitext(args.json_out)[0] + ".md", "w", encoding="utf-8") as f:
        f.write(md)
    sys.stdout.write(md)


def analyse(args, info, pairs, mv_idx, host_idx, mv_runs, rust_runs, mv_v, mv_preds, rust_s, mv_flips,
            rust_flips, mv_info):
    md = []
    have_rust = bool(rust_runs) and rust_s is not None
    n_all, n_mv = len(pairs), len(mv_idx)
    mv_m = med_dict(mv_runs)
    rs_m = med_dict(rust_runs) if have_rust else None
    runs = len(mv_runs)

    md.append("# referee-math vs Math-Verify 0.9.0")
    md.append("")
    md.append(f"{n_all:,} pairs (`gen_pairs.py -n {args.n} --seed {args.seed}`), {len(set(p['category'] for p in pairs))} "
              f"categories; {len(host_idx)} hostile pairs kept out of Math-Verify; {runs} interleaved runs, medians; "
              f"both sides pinned with `taskset -c {args.cpu}`.")
    md.append(f"Machine: {info['cpu']}, {info['nproc']} cores, Linux {info['kernel']}, load average "
              f"{info['loadavg_start'][0]:.2f} at start, {info['loadavg_end'][0]:.2f} at end; commit {info['commit']}.")
    md.append(f"Math-Verify {mv_info.get('version')} on CPython {mv_info.get('python')}: per pair "
              "`verify(parse('\\boxed{' + gold + '}'), parse(completion))`, default configs, CPU time. "
              "referee-math: `Verifier::new(Options::default()).verify(Gold(gold), Answer(completion))`, "
              "timed per call on the pinned core.")
    md.append("")

    # ---- speed table
    md.append("## Speed and memory (the same non-hostile pairs, one core)")
    md.append("")
    md.append("| | Math-Verify | referee-math | ratio |")
    md.append("|---|---:|---:|---:|")
    ratio = per_run_ratio = None
    if have_rust:
        ratio = rs_m["pairs_per_cpu_s"] / mv_m["pairs_per_cpu_s"]
        per_run = [r["pairs_per_cpu_s"] / m["pairs_per_cpu_s"] for r, m in zip(rust_runs, mv_runs)]
        per_run_ratio = med(per_run)

    def row(label, a, b, fmt, ratio_fn=None):
        r = ratio_fn(a, b) if (ratio_fn and a and b) else ""
        md.append(f"| {label} | {fmt(a)} | {fmt(b) if have_rust else 'n/a'} | {r} |")

    def speedup(a, b):
        return f"{b / a:,.0f}×"

    def slowdown(a, b):
        return f"{a / b:,.0f}×"

    row(f"**pairs per CPU-second** ({n_mv:,} pairs)", mv_m["pairs_per_cpu_s"], rs_m and rs_m["pairs_per_cpu_s"],
        fmt_rate, lambda a, b: f"**{b / a:,.0f}×**")
    row("pairs per second from per-pair times (MV: wall; referee: median-of-passes wall)", mv_m["pairs_per_wall_s"],
        rs_m and rs_m["pairs_per_s_calls"], fmt_rate, speedup)
    for q in ("p50", "p90", "p99", "max", "mean"):
        row(f"latency {q}", mv_m[f"{q}_us"], rs_m and rs_m[f"{q}_us"], fmt_us, slowdown)
    row("peak RSS (VmHWM of the process)", mv_m["peak_rss_mib"], rs_m and rs_m["peak_rss_mib"],
        lambda x: f"{x:.1f} MiB", lambda a, b: f"{a / b:.1f}×")
    row("whole process, wall (start-up, reading, verifying)", mv_m["process_wall_s"], rs_m and rs_m["process_wall_s"],
        lambda x: f"{x:.2f} s", slowdown)
    md.append("")
    md.append(f"- Math-Verify per pair: CPU time (`time.process_time_ns`). Import {mv_m['import_s'] * 1000:.0f} ms and "
              f"the first call {mv_m['first_call_s'] * 1000:.0f} ms are outside the per-pair figures; "
              f"RSS {mv_m['rss_ready_mib']:.0f} MiB before the first pair; {mv_m['errors'] or 0} exceptions. "
              f"Whole process for {n_mv:,} pairs: {mv_m['process_cpu_s']:.1f} CPU-s.")
    if have_rust:
        src = rust_runs[0]["cpu_from"]
        md.append(f"- referee-math per pair: wall time of each call on the pinned core, median of {args.rust_repeat} "
                  f"passes; pairs per CPU-second from {src} over all passes. The RSS and process wall are from a "
                  f"separate single pass over all {n_all:,} pairs (which also gives the verdicts).")
        if host_idx:
            md.append(f"- hostile pairs ({len(host_idx)}, referee-math only): mean {fmt_us(rs_m['hostile_mean_us'])}, "
                      f"max {fmt_us(rs_m['hostile_max_us'])}; statuses {dict(Counter(rust_s[i] for i in host_idx))}.")
        md.append(f"- **throughput ratio {ratio:,.0f}×** (ratio of the medians); median of the per-run ratios "
                  f"{per_run_ratio:,.0f}× (range {min(per_run):,.0f}–{max(per_run):,.0f}×).")
        unstable = sum(r.get("unstable", 0) + r.get("timed_vs_all_status_diff", 0) for r in rust_runs)
        if unstable:
            md.append(f"- referee-math statuses differed between passes on {unstable} pair-passes.")
    else:
        md.append("- referee-math: not measured (build or run failed; see stderr).")
    if mv_flips or rust_flips:
        md.append(f"- verdicts changed between runs: Math-Verify {mv_flips}, referee-math {rust_flips} "
                  "(first run's verdicts used).")
    md.append("")

    # ---- agreement
    exp = [p["expected"] for p in pairs]
    mv_ok = {i: mv_v[k] for k, i in enumerate(mv_idx)}
    mv_pred = {i: mv_preds[k] for k, i in enumerate(mv_idx)}
    rs_ok = {i: (1 if rust_s[i] == "correct" else 0) for i in range(n_all)} if have_rust else {}

    def conf(idx, got):
        tp = sum(1 for i in idx if exp[i] and got[i])
        tn = sum(1 for i in idx if not exp[i] and not got[i])
        fp = sum(1 for i in idx if not exp[i] and got[i])
        fn = sum(1 for i in idx if exp[i] and not got[i])
        return {"n": len(idx), "agree": tp + tn, "fp": fp, "fn": fn}

    nonpol = [i for i in mv_idx if not pairs[i]["policy"]]
    md.append("## Agreement")
    md.append("")
    md.append("`expected` is the label under referee-math's default semantics (see `benches/math/gen_pairs.py`). `*_policy` "
              "categories are where Math-Verify legitimately decides otherwise.")
    md.append("")
    md.append("| | pairs | agree | FP | FN |")
    md.append("|---|---:|---:|---:|---:|")
    agreement = {}
    for label, idx, got in [("Math-Verify vs expected", mv_idx, mv_ok),
                            ("Math-Verify vs expected, non-policy categories", nonpol, mv_ok)] + (
            [("referee-math vs expected (same pairs)", mv_idx, rs_ok),
             ("referee-math vs expected, non-policy categories", nonpol, rs_ok),
             ("referee-math vs expected (all pairs, hostile included)", list(range(n_all)), rs_ok)] if have_rust else []):
        c = conf(idx, got)
        agreement[label] = c
        md.append(f"| {label} | {c['n']:,} | {c['agree']:,} ({100 * c['agree'] / max(1, c['n']):.2f}%) | {c['fp']} | {c['fn']} |")
    both = None
    if have_rust:
        both = sum(1 for i in mv_idx if mv_ok[i] == rs_ok[i])
        agreement["Math-Verify vs referee-math"] = {"n": n_mv, "agree": both}
        md.append(f"| **Math-Verify vs referee-math** | {n_mv:,} | {both:,} ({100 * both / n_mv:.2f}%) | | |")
        md.append("")
        md.append(f"referee-math statuses: {dict(Counter(rust_s).most_common())}")
    md.append("")

    # ---- per category
    sys.path.insert(0, HERE)
    from gen_pairs import CATEGORIES  # noqa: PLC0415 (same directory, stdlib only)

    present = set(p["category"] for p in pairs)
    cats = [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))
    by_cat = defaultdict(list)
    for i, p in enumerate(pairs):
        by_cat[p["category"]].append(i)
    md.append("## Per category")
    md.append("")
    md.append("| category | pairs | expected=1 | Math-Verify agrees with expected | referee-math agrees | MV ≠ referee |")
    md.append("|---|---:|---:|---:|---:|---:|")
    per_cat = {}
    for c in cats:
        idx = by_cat[c]
        midx = [i for i in idx if i in mv_ok]
        e1 = sum(exp[i] for i in idx)
        mva = sum(1 for i in midx if mv_ok[i] == exp[i])
        rsa = sum(1 for i in idx if rs_ok.get(i) == exp[i]) if have_rust else None
        dis = sum(1 for i in midx if mv_ok[i] != rs_ok[i]) if have_rust else None
        per_cat[c] = {"n": len(idx), "expected_1": e1, "mv_n": len(midx), "mv_agree": mva, "referee_agree": rsa,
                      "mv_vs_referee_disagree": dis,
                      "referee_statuses": dict(Counter(rust_s[i] for i in idx)) if have_rust else None}
        mvs = f"{mva}/{len(midx)}" if midx else "not run"
        md.append(f"| {c} | {len(idx)} | {e1} | {mvs} | {f'{rsa}/{len(idx)}' if have_rust else 'n/a'} | "
                  f"{dis if have_rust else 'n/a'} |")
    md.append("")

    # ---- every disagreement
    dis_rows = []
    if have_rust:
        md.append("## Every disagreement between Math-Verify and referee-math, by category")
        md.append("")
        groups = defaultdict(list)
        for i in mv_idx:
            if mv_ok[i] != rs_ok[i]:
                groups[pairs[i]["category"]].append(i)
        if not groups:
            md.append("None.")
        for c in sorted(groups, key=lambda c: (-len(groups[c]), c)):
            idx = groups[c]
            mv_right = sum(1 for i in idx if mv_ok[i] == exp[i])
            md.append(f"### {c}: {len(idx)} pairs (Math-Verify matches expected on {mv_right}, referee-math on "
                      f"{len(idx) - mv_right})")
            md.append("")
            md.append("| id | gold | completion tail | expected | Math-Verify (its extraction) | referee-math |")
            md.append("|---|---|---|---:|---|---|")
            listed = idx if not args.max_listed else idx[:args.max_listed]
            for i in listed:
                p = pairs[i]
                md.append(f"| {p['id']} | `{md_cell(p['gold'])}` | `{md_cell(p['completion'], 90)}` | {exp[i]} | "
                          f"{mv_ok[i]} (`{md_cell(mv_pred[i], 60)}`) | {rust_s[i]} |")
            if len(listed) < len(idx):
                md.append(f"| … | {len(idx) - len(listed)} more in the JSON | | | | |")
            md.append("")
        for i in mv_idx:
            if mv_ok[i] != rs_ok[i]:
                p = pairs[i]
                dis_rows.append({"id": p["id"], "category": p["category"], "gold": p["gold"], "answer": p["answer"],
                                 "completion_tail": p["completion"][-200:], "expected": exp[i],
                                 "math_verify": mv_ok[i], "math_verify_pred": mv_pred[i], "referee": rust_s[i]})

    def mism(ok, verdict, idx):
        return [{"id": pairs[i]["id"], "category": pairs[i]["category"], "gold": pairs[i]["gold"],
                 "answer": pairs[i]["answer"], "expected": exp[i], "got": verdict(i)}
                for i in idx if ok[i] != exp[i]]

    out_json = {
        "config": {"n": args.n, "seed": args.seed, "runs": runs, "cpu": args.cpu, "data": args.data,
                   "math_verify": MV_REQUIREMENTS, "venv": VENV},
        "machine": info,
        "math_verify": {"median": mv_m, "runs": mv_runs, "info": mv_info, "verdict_flips_between_runs": mv_flips},
        "referee": ({"median": rs_m, "runs": rust_runs, "verdict_flips_between_runs": rust_flips,
                     "statuses": dict(Counter(rust_s))} if have_rust else None),
        "throughput_ratio": {"ratio_of_medians": ratio, "median_of_per_run_ratios": per_run_ratio},
        "agreement": agreement,
        "per_category": per_cat,
        "disagreements_mv_vs_referee": dis_rows,
        "math_verify_vs_expected_mismatches": mism(mv_ok, mv_ok.get, mv_idx),
        "referee_vs_expected_mismatches": mism(rs_ok, rust_s.__getitem__, range(n_all)) if have_rust else None,
    }
    return {"md": md, "json": out_json}


if __name__ == "__main__":
    main()
