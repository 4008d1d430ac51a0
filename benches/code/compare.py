#!/usr/bin/env python3
"""code_exec throughput: Referee vs a subprocess-per-test harness vs SandboxFusion, same problems.

Steps:
  1. benches/code/gen_problems.py -> benches/data/code_<style>.jsonl (git-ignored; default 200
     rollouts x 10 tests, seed 20261201);
  2. the Referee binary: target/release/referee (`cargo build --release -p referee-cli` when it
     is missing, or always with --build always; CARGO_TARGET_DIR is removed from the build's
     environment so the repo's target/ is used);
  3. --rounds interleaved rounds (the order rotates each round), each running:
       referee         `REFEREE_SANDBOX_SLOTS=C target/release/referee score SPEC ROWS --explain`
                       (C = --concurrency, default: the number of cores). Wall time of the whole
                       command, process start to exit (cold start included). Per-test latency:
                       the `wall_ms` of every entry of `detail.tests` of the code_exec node in
                       each result's `trace`. Also "after 1 s": tests whose result line reached
                       this script more than 1 s after the start, divided by the time after that
                       second (the CLI writes in chunks, so this is approximate);
       subprocess      benches/code/subprocess_harness.py --workers C (fresh /usr/bin/python3 per
                       test, no isolation: the LiveCodeBench / open-r1 loop), plus, with
                       --baselines, the same with `unshare` or `bwrap` namespaces per test;
       sandboxfusion   benches/code/sandboxfusion_bench.py --concurrency 1,8 (one /run_code per
                       test, isolation none, 1 uvicorn worker), when a SandboxFusion source tree
                       is present; otherwise its figures from the notes, labelled as such;
  4. a Markdown table (stdout, and benches/data/code_compare.md; raw runs in
     benches/data/code_compare.json): tests/s median (range over rounds), per-test p50 and p99
     (medians over rounds), Referee's throughput divided by each row's (median of the
     per-round ratios), and the verdicts of every harness checked against the generator's.

If the Referee binary cannot score code_exec yet (spec rejected, every row an error, no result
lines), the Referee row reads "referee: not available" with the reason and the others still run.

Usage: python3 benches/code/compare.py [--rounds 3] [--n 200] [--tests 10] [--style stdio|call]
           [--concurrency 2] [--baselines none,unshare,bwrap] [--sf-concurrency 1,8] [--no-sf]
           [--build auto|always|never] [--referee-bin PATH]
Stdlib only.
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
import threading
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "benches", "data")
sys.path.insert(0, HERE)
from subprocess_harness import percentile  # noqa: E402

PY = sys.executable


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# ------------------------------------------------------------------ referee


def find_code_exec_tests(node):
    """The `detail.tests` list of the first code_exec node in a trace (depth-first), or None."""
    if not isinstance(node, dict):
        return None
    d = node.get("detail")
    if node.get("type") == "code_exec" or (isinstance(d, dict) and "tests" in d):
        if isinstance(d, dict) and isinstance(d.get("tests"), list):
            return d["tests"]
    for ch in node.get("children") or []:
        r = find_code_exec_tests(ch)
        if r is not None:
            return r
    return None


def ensure_referee(mode: str, binary: str) -> tuple[str | None, str]:
    """-> (binary or None, note)."""
    exists = os.path.isfile(binary) and os.access(binary, os.X_OK)
    if mode == "never" or (mode == "auto" and exists):
        return (binary, "") if exists else (None, f"{binary} missing and --build never")
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
    print("building: cargo build --release -p referee-cli", file=sys.stderr)
    r = subprocess.run(["cargo", "build", "--release", "-p", "referee-cli"], cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-3:]
        if exists:
            return binary, "cargo build failed, using the existing binary: " + " | ".join(tail)
        return None, "cargo build failed: " + " | ".join(tail)
    return binary, ""


def run_referee(binary: str, spec: str, rows_path: str, rows: list, slots: int) -> dict:
    env = dict(os.environ, REFEREE_SANDBOX_SLOTS=str(slots))
    cmd = [binary, "score", spec, rows_path, "--explain"]
    stamps = []  # (t, tests in the line)
    lines = []
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, bufsize=1)
    err_chunks = []
    t_err = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()))
    t_err.start()
    for line in p.stdout:
        t = time.perf_counter() - t0
        lines.append(line)
        stamps.append(t)
    p.wait()
    wall = time.perf_counter() - t0
    cpu = children_cpu() - cpu0
    t_err.join()
    stderr = "".join(err_chunks)
    shown = [os.path.relpath(x, ROOT) if os.path.isabs(x) else x for x in cmd]
    base = {"harness": "referee", "slots": slots, "command": f"REFEREE_SANDBOX_SLOTS={slots} " + " ".join(shown)}
    if not lines:
        return {**base, "available": False,
                "reason": f"exit {p.returncode}, no result lines: " + " | ".join(stderr.strip().splitlines()[-3:])}
    by_id = {r["id"]: r for r in rows}
    lat, verdicts, statuses, reasons = [], Counter(), Counter(), Counter()
    mism, bad_rows, late_tests, missing_detail = 0, [], 0, 0
    n_tests = 0
    for t, line in zip(stamps, lines):
        res = json.loads(line)
        statuses[res.get("status")] += 1
        if res.get("status") == "error":
            reasons[str(res.get("reason") or res.get("error") or res.get("note"))[:120]] += 1
        row = by_id.get(res.get("id"))
        k = len(row["item"]["tests"]) if row else 0
        n_tests += k
        if t > 1.0:
            late_tests += k
        tests = find_code_exec_tests(res.get("trace"))
        if tests is None:
            missing_detail += 1
            continue
        vs = [x.get("verdict") for x in tests]
        verdicts.update(vs)
        lat.extend(float(x["wall_ms"]) for x in tests if isinstance(x.get("wall_ms"), (int, float)))
        exp = row.get("expected", {}).get("verdicts") if row else None
        if exp is not None:
            b = sum(1 for a, c in zip(exp, vs) if a != c) + abs(len(exp) - len(vs))
            if b:
                mism += b
                bad_rows.append(res.get("id"))
    if statuses.get("error", 0) == len(lines):
        return {**base, "available": False,
                "reason": "every row has status error: " + "; ".join(f"{r} ({c})" for r, c in reasons.most_common(3))}
    lat.sort()
    out = {
        **base,
        "available": True,
        "exit": p.returncode,
        "rollouts": len(lines),
        "tests": n_tests,
        "wall_s": wall,
        "tests_per_s": n_tests / wall,
        "tests_per_s_after_1s": (late_tests / (wall - 1.0)) if wall > 2.0 else None,
        "cpu_s": cpu,
        "cpu_ms_per_test": cpu * 1000.0 / n_tests if n_tests else None,
        "p50_ms": percentile(lat, 50) if lat else None,
        "p99_ms": percentile(lat, 99) if lat else None,
        "max_ms": lat[-1] if lat else None,
        "statuses": dict(statuses),
        "error_reasons": dict(reasons.most_common(5)),
        "verdicts": dict(verdicts),
        "rows_without_detail_tests": missing_detail,
        "verdict_mismatches": mism if missing_detail < len(lines) else None,
        "mismatched_rows": bad_rows[:20],
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    return out


# ------------------------------------------------------------------ the other harnesses


def children_cpu() -> float:
    """User + system CPU seconds of every waited-for descendant so far (a harness's whole tree:
    the CLI, its zygotes and runs; the subprocess harness and its interpreters)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_json_lines(cmd) -> list[dict]:
    r = sh(cmd, cwd=ROOT)
    out = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    if not out:
        out.append({"harness": os.path.basename(cmd[1]), "available": False,
                    "reason": f"exit {r.returncode}: " + " | ".join(r.stderr.strip().splitlines()[-3:])})
    return out


def run_subprocess(rows_path: str, workers: int, isolate: str) -> dict:
    cmd = [PY, os.path.join(HERE, "subprocess_harness.py"), rows_path, "--workers", str(workers),
           "--isolate", isolate, "--json"]
    cpu0 = children_cpu()
    res = run_json_lines(cmd)[0]
    if res.get("tests"):
        res["cpu_s"] = children_cpu() - cpu0
        res["cpu_ms_per_test"] = res["cpu_s"] * 1000.0 / res["tests"]
    res.setdefault("available", "error" not in res)
    if "error" in res:
        res["reason"] = res["error"]
    res["command"] = " ".join(["python3"] + [os.path.relpath(x, ROOT) if os.path.isabs(x) else x for x in cmd[1:]])
    return res


def run_sandboxfusion(rows_path: str, conc: str) -> list[dict]:
    cmd = [PY, os.path.join(HERE, "sandboxfusion_bench.py"), rows_path, "--concurrency", conc, "--json"]
    out = run_json_lines(cmd)
    for o in out:
        o["command"] = " ".join(["python3"] + [os.path.relpath(x, ROOT) if os.path.isabs(x) else x for x in cmd[1:]])
    return out


# ------------------------------------------------------------------ report


def key_of(res: dict) -> str:
    h = res.get("harness", "?")
    if h.startswith("sandboxfusion"):
        return f"{h} c{res.get('concurrency', '?')}"
    return h


LABELS = {
    "referee": "**Referee** `code_exec` (isolated; slots = {c})",
    "subprocess": "subprocess per test, no isolation (LCB way), {c} workers",
    "subprocess+unshare": "subprocess per test + `unshare` namespaces, {c} workers",
    "subprocess+bwrap": "subprocess per test + `bwrap --unshare-all`, {c} workers",
}


def label(key: str, c: int) -> str:
    if key in LABELS:
        return LABELS[key].format(c=c)
    if key.startswith("sandboxfusion-none"):
        return f"SandboxFusion `none` (unisolated), 1 uvicorn worker, concurrency {key.split(' c')[-1]}"
    return key


def fmt(x, nd=1):
    if x is None:
        return "n/a"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}"


def report(runs: dict, rounds: int, args, notes_sf: list | None, machine: str) -> str:
    c = args.concurrency
    out = []
    out.append(f"## code_exec throughput: {args.n} rollouts x {args.tests} tests ({args.style}), "
               f"{rounds} interleaved rounds\n")
    out.append(machine + "\n")
    ref = runs.get("referee", [])
    ref_ok = [r for r in ref if r.get("available")]
    out.append("| harness | tests/s median (range) | p50 ms/test | p99 ms/test | Referee ÷ this | verdicts ≠ expected |")
    out.append("|---|---:|---:|---:|---:|---:|")
    ref_tps = [r["tests_per_s"] for r in ref_ok]
    for key, lst in runs.items():
        ok = [r for r in lst if r.get("available", True) and "tests_per_s" in r]
        if not ok:
            reason = next((r.get("reason") for r in lst if r.get("reason")), "not available")
            name = "referee" if key == "referee" else key
            out.append(f"| {label(key, c)} | {name}: not available ({reason.splitlines()[0][:160]}) | | | | |")
            continue
        tps = [r["tests_per_s"] for r in ok]
        p50 = [r["p50_ms"] for r in ok if r.get("p50_ms") is not None]
        p99 = [r["p99_ms"] for r in ok if r.get("p99_ms") is not None]
        if key != "referee" and ref_tps and len(ref_tps) == len(tps):
            ratios = [a / b for a, b in zip(ref_tps, tps)]
            ratio = f"{statistics.median(ratios):.1f}× ({min(ratios):.1f}–{max(ratios):.1f})"
        elif key != "referee" and ref_tps:
            ratio = f"{statistics.median(ref_tps) / statistics.median(tps):.1f}×"
        else:
            ratio = "1×" if key == "referee" else "n/a"
        mism = [r.get("verdict_mismatches") for r in ok]
        mism_s = "n/a" if any(m is None for m in mism) else str(max(mism))
        out.append(f"| {label(key, c)} | {fmt(statistics.median(tps))} ({fmt(min(tps))}–{fmt(max(tps))}) | "
                   f"{fmt(statistics.median(p50), 2) if p50 else 'n/a'} | {fmt(statistics.median(p99), 2) if p99 else 'n/a'} | "
                   f"{ratio} | {mism_s} |")
    if notes_sf:
        for f in notes_sf:
            name = f"{f['harness']} c{f['concurrency']}"
            ratio = f"{statistics.median(ref_tps) / f['tests_per_s']:.0f}×" if ref_tps else "n/a"
            out.append(f"| {name} — **from notes, not this run** (a+b runs, load 3–18) | {f['tests_per_s']} | "
                       f"{f['p50_ms']} | n/a | {ratio} | n/a |")
    out.append("")
    if ref_ok:
        after = [r["tests_per_s_after_1s"] for r in ref_ok if r.get("tests_per_s_after_1s")]
        if after:
            out.append(f"- Referee excluding its first second: {fmt(statistics.median(after))} tests/s "
                       f"(range {fmt(min(after))}–{fmt(max(after))}); wall per run: "
                       + ", ".join(f"{r['wall_s']:.2f} s" for r in ref_ok))
        st = Counter()
        for r in ref_ok:
            st.update(r.get("statuses", {}))
        out.append(f"- Referee statuses over all rounds: {dict(st)}; rows without `detail.tests`: "
                   f"{sum(r.get('rows_without_detail_tests', 0) for r in ref_ok)}")
        if ref_tps:
            best_sf = [statistics.median([r["tests_per_s"] for r in lst if "tests_per_s" in r])
                       for k, lst in runs.items() if k.startswith("sandboxfusion-none")
                       and any("tests_per_s" in r for r in lst)]
            m = statistics.median(ref_tps)
            out.append(f"- Targets: ≥ 400 isolated tests/s on {c} cores: {fmt(m)} → "
                       f"{'met' if m >= 400 else 'missed'}.")
            if best_sf:
                out.append(f"  ≥ 10× SandboxFusion `none` (its best concurrency this run, {fmt(max(best_sf))} tests/s): "
                           f"{m / max(best_sf):.1f}× → {'met' if m >= 10 * max(best_sf) else 'missed'}.")
            lite = [f for f in (notes_sf or NOTES_LITE) if "lite" in f["harness"]]
            if lite:
                best_lite = max(f["tests_per_s"] for f in lite)
                out.append(f"  ≥ 100× SandboxFusion `lite` (isolated; {best_lite} runs/s **from notes, not this run**): "
                           f"{m / best_lite:.0f}× → {'met' if m >= 100 * best_lite else 'missed'}.")
    # bwrap's sandboxed processes are not reaped through the harness's tree (its figure came
    # out at a fifth of the plain subprocess's), so it has no CPU figure here.
    cpu = {k: [r["cpu_ms_per_test"] for r in lst if r.get("cpu_ms_per_test")] for k, lst in runs.items()
           if "bwrap" not in k}
    cpu = {k: v for k, v in cpu.items() if v}
    if cpu:
        out.append("- CPU per test, user + system of each harness's whole process tree (Referee: the CLI, "
                   "its zygotes and runs; subprocess: the harness and its interpreters; SandboxFusion: the "
                   "server and its children, not the client; bwrap's runs escape this count), median over rounds: " + "; ".join(
                       f"{key} {statistics.median(v):.2f} ms" for key, v in cpu.items()) + ".")
        if "referee" in cpu:
            r = statistics.median(cpu["referee"])
            out.append("  CPU per test of each ÷ Referee's (load-independent; on an idle machine the rate is "
                       "bounded by cores ÷ CPU per test): " + "; ".join(
                           f"{key} {statistics.median(v) / r:.1f}×" for key, v in cpu.items() if key != "referee") + ".")
    out.append("- Verdicts: every harness is checked against the generator's in-process verdicts "
               "(`expected` in each row); the last column is the largest count over rounds.")
    for key, lst in runs.items():
        bad = sorted({i for r in lst for i in (r.get("mismatched_rows") or [])})
        if bad:
            out.append(f"  {key}: rows whose verdicts differ (first 20 per run): {', '.join(bad[:40])}")
    out.append("- Load average (1/5/15 min) at the end of each run: " + "; ".join(
        f"{key_of(r)} {'/'.join(r['loadavg'])}" for lst in runs.values() for r in lst if r.get("loadavg"))[:1500])
    out.append("")
    out.append("Commands (one round):")
    out.append("```sh")
    seen = set()
    for lst in runs.values():
        for r in lst:
            cmd = r.get("command")
            if cmd and cmd not in seen:
                seen.add(cmd)
                out.append(cmd)
    out.append("```")
    return "\n".join(out)


NOTES_LITE = [
    {"harness": "sandboxfusion-lite", "concurrency": 1, "tests_per_s": 3.1, "p50_ms": 329},
    {"harness": "sandboxfusion-lite", "concurrency": 8, "tests_per_s": 5.0, "p50_ms": 1564},
]


def machine_line() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = sh(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).stdout.strip()
    return (f"Machine: `nproc` {os.cpu_count()}, {cpu}, Linux {platform.release()}, /usr/bin/python3 "
            f"{sh(['/usr/bin/python3', '-c', 'import platform; print(platform.python_version())']).stdout.strip()}; "
            f"commit {commit}; load average at start {' '.join(open('/proc/loadavg').read().split()[:3])}.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="code_exec: Referee vs subprocess-per-test vs SandboxFusion")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--tests", type=int, default=10)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--style", choices=["stdio", "call"], default="stdio")
    ap.add_argument("--concurrency", type=int, default=os.cpu_count() or 2,
                    help="REFEREE_SANDBOX_SLOTS and the subprocess harness's workers")
    ap.add_argument("--baselines", default="none,unshare,bwrap",
                    help="subprocess harness isolation variants to run (none, unshare, bwrap)")
    ap.add_argument("--sf-concurrency", default="1,8")
    ap.add_argument("--no-sf", action="store_true", help="skip SandboxFusion")
    ap.add_argument("--no-referee", action="store_true")
    ap.add_argument("--build", choices=["auto", "always", "never"], default="auto")
    ap.add_argument("--referee-bin", default=os.path.join(ROOT, "target", "release", "referee"))
    a = ap.parse_args(argv)

    os.makedirs(DATA, exist_ok=True)
    rows_path = os.path.join(DATA, f"code_{a.style}.jsonl")
    gen = [PY, os.path.join(HERE, "gen_problems.py"), rows_path, "--n", str(a.n), "--tests", str(a.tests),
           "--group", str(a.group), "--seed", str(a.seed), "--style", a.style]
    r = sh(gen)
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return 2
    print(r.stderr.strip(), file=sys.stderr)
    rows = [json.loads(line) for line in open(rows_path, encoding="utf-8") if line.strip()]
    spec = os.path.join(HERE, "spec.yaml" if a.style == "stdio" else "spec_call.yaml")

    steps = []
    runs: dict[str, list] = {}
    if not a.no_referee:
        binary, note = ensure_referee(a.build, a.referee_bin)
        if note:
            print(note, file=sys.stderr)
        if binary is None:
            runs["referee"] = [{"harness": "referee", "available": False, "reason": note}]
        else:
            runs["referee"] = []
            steps.append(("referee", lambda: [run_referee(binary, spec, rows_path, rows, a.concurrency)]))
    for iso in [x for x in a.baselines.split(",") if x]:
        k = "subprocess" if iso == "none" else f"subprocess+{iso}"
        runs[k] = []
        steps.append((k, lambda iso=iso: [run_subprocess(rows_path, a.concurrency, iso)]))
    notes_sf = None
    if not a.no_sf:
        probe = run_json_lines([PY, os.path.join(HERE, "sandboxfusion_bench.py"), rows_path, "--limit", "1",
                                "--concurrency", "1", "--json"])
        if probe and probe[0].get("available") is False:
            print(probe[0].get("reason", ""), file=sys.stderr)
            notes_sf = probe[0].get("from_notes")
        else:
            for c in a.sf_concurrency.split(","):
                runs[f"sandboxfusion-none c{c}"] = []
            steps.append(("sandboxfusion", lambda: run_sandboxfusion(rows_path, a.sf_concurrency)))

    for rnd in range(a.rounds):
        order = steps[rnd % len(steps):] + steps[:rnd % len(steps)] if steps else []
        for name, fn in order:
            print(f"round {rnd + 1}/{a.rounds}: {name} ...", file=sys.stderr, flush=True)
            for res in fn():
                k = key_of(res) if name != "referee" else "referee"
                if name.startswith("subprocess"):
                    k = name
                runs.setdefault(k, []).append(res)
                if res.get("tests_per_s"):
                    print(f"  {k}: {res['tests_per_s']:.1f} tests/s, p50 {fmt(res.get('p50_ms'), 2)} ms, "
                          f"p99 {fmt(res.get('p99_ms'), 2)} ms, verdicts≠expected {res.get('verdict_mismatches')}",
                          file=sys.stderr, flush=True)
                else:
                    print(f"  {k}: not available: {res.get('reason', '')[:300]}", file=sys.stderr, flush=True)
        if "referee" in runs and runs["referee"] and not any(x.get("available") for x in runs["referee"]):
            steps = [s for s in steps if s[0] != "referee"]  # no point retrying a missing grader

    md = report(runs, a.rounds, a, notes_sf, machine_line())
    print(md)
    with open(os.path.join(DATA, "code_compare.md"), "w", encoding="utf-8") as f:
        f.write(md + "\n")
    with open(os.path.join(DATA, "code_compare.json"), "w", encoding="utf-8") as f:
        json.dump({"args": vars(a), "runs": runs, "notes_sandboxfusion": notes_sf}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
