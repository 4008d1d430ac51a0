#!/usr/bin/env python3
"""PRM requests: batching, client overhead against a raw HTTP loop, cache and dedup. Stdlib only.

    python3 benches/steps/prm.py [--samples 1000,10000] [--delay 0.02] [--runs 3] [--rounds 5]
                                 [--referee target/release/referee] [--build auto|always|never]
                                 [--only batching,overhead,grpo] [--json FILE]

Starts two loopback PRMs (`scripts/fault_server.py --mode prm`, one answering at once, one after
--delay seconds; both serve vLLM's `/pooling` and Math-Shepherd's `/v1/completions` echo
logprobs), and stops them at the end. Rows come from `benches/steps/gen.py` (8 to 30 steps and a
final answer each), written to benches/data/ (git-ignored) on first use.

1. Batching: `referee score` (the whole command) on a `prm` spec for each API, each batch
   setting (the endpoint's defaults and a few others), both servers, 1,000 and 10,000 samples:
   HTTP requests the server received, texts per request (mean, max), requests per 1,000 samples,
   wall time (median of --runs, interleaved).
2. Overhead: `cargo bench -p referee-judge --bench prm` (crates/referee-judge/benches/prm.rs):
   the same 1,000 samples through a raw reqwest loop replaying Referee's recorded request bodies
   (same requests in flight), the `Pool`, and `score::samples`, interleaved rounds, medians.
3. GRPO batch: 64 prompts x 8 rollouts where 208 rollouts repeat another of their prompt, cache
   off, file cache cold (in-batch dedup) and warm (the next step's identical batch): requests
   and texts sent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DATA = ROOT / "benches" / "data"

# (label, endpoint keys beyond base_url/model): the defaults are max_batch 32,
# batch_wait_ms 5, max_concurrency 8.
SETTINGS = [
    ("defaults", {}),
    ("max_batch 8", {"max_batch": 8}),
    ("max_batch 128", {"max_batch": 128}),
    ("batch_wait_ms 0", {"batch_wait_ms": 0}),
    ("max_concurrency 32", {"max_concurrency": 32}),
]
# The settings also run at 10,000 samples (the others at 1,000 only, to keep the run short).
BIG = {"defaults", "max_batch 128"}
APIS = ["pooling", "math_shepherd"]


def start_server(delay: float) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, str(ROOT / "scripts/fault_server.py"), "--mode", "prm", "--delay", str(delay)],
                         stdout=subprocess.PIPE, text=True)
    info = json.loads(p.stdout.readline())
    return p, info["base_url"]


def http(method: str, url: str) -> dict:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def root_of(base: str) -> str:
    return base.rstrip("/").removesuffix("/v1")


def spec_text(base: str, api: str, endpoint: dict, cache: str = "{backend: off}") -> str:
    ep = ", ".join([f'base_url: "{base}"', "model: prm", "max_retries: 0"] + [f"{k}: {v}" for k, v in endpoint.items()])
    return f"""judges: {{default: {{{ep}}}}}
judge_cache: {cache}
grader:
  type: prm
  name: process
  api: {api}
  steps: {{split: paragraphs, min_chars: 8}}
  aggregate: min
  context: "Question {{{{item.answer}}}}: what is the total?\\n"
"""


def data_file(n: int) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"prm_{n}.jsonl"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "gen.py"), "--rows", str(n), "-o", str(path)], check=True)
    return path


def score(referee: str, spec: Path, data: Path) -> tuple[float, dict]:
    """One `referee score` run: wall seconds and its summary."""
    t = time.perf_counter()
    p = subprocess.run([referee, "score", str(spec), str(data), "-o", "/dev/null", "--summary-json"],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"referee score failed ({p.returncode}):\n{p.stderr}")
    summary = json.loads(p.stderr.strip().splitlines()[-1])
    return wall, summary


def batching(referee: str, servers: dict, sizes: list[int], runs: int, tmp: Path) -> list[dict]:
    cases = []
    for n in sizes:
        data = data_file(n)
        for api in APIS:
            for label, ep in SETTINGS:
                if n > min(sizes) and label not in BIG:
                    continue
                for delay, base in servers.items():
                    spec = tmp / f"b_{len(cases)}.yaml"
                    spec.write_text(spec_text(base, api, ep))
                    cases.append({"samples": n, "api": api, "setting": label, "delay_ms": delay,
                                  "spec": spec, "data": data, "base": base, "walls": [], "reqs": [], "batches": None})
    for r in range(runs):
        for c in cases:
            root = root_of(c["base"])
            http("POST", root + "/reset")
            wall, summary = score(referee, c["spec"], c["data"])
            stats = http("GET", root + "/stats")
            if summary["errors"]:
                sys.exit(f"{c['api']} {c['setting']}: {summary['errors']} errors: {summary['reasons']}")
            c["walls"].append(wall)
            c["reqs"].append(stats["requests"])
            c["texts"] = sum(stats["batches"])
            if r == 0:
                c["batches"] = stats["batches"]
        print(f"batching run {r + 1}/{runs} done", file=sys.stderr)
    out = []
    for c in cases:
        b = c["batches"]
        reqs = statistics.median(c["reqs"])
        out.append({"samples": c["samples"], "api": c["api"], "setting": c["setting"], "delay_ms": c["delay_ms"],
                    "requests": reqs, "requests_runs": c["reqs"], "texts": c["texts"],
                    "texts_per_request_mean": sum(b) / len(b), "texts_per_request_max": max(b),
                    "texts_per_request_min": min(b),
                    "requests_per_1000_samples": reqs * 1000 / c["samples"],
                    "wall_s": statistics.median(c["walls"]), "wall_runs": c["walls"]})
    return out


def overhead(servers: dict, n: int, rounds: int) -> dict:
    env = dict(os.environ, REFEREE_BENCH_PRM_SERVERS=json.dumps({f"{d}ms": b for d, b in servers.items()}),
               REFEREE_BENCH_DATA=str(data_file(n)), REFEREE_BENCH_SAMPLES=str(n),
               REFEREE_BENCH_ROUNDS=str(rounds))
    env.setdefault("CARGO_BUILD_JOBS", "1")
    cmd = ["cargo", "bench", "-q", "-p", "referee-judge", "--bench", "prm"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out[out.index("{"):])


def grpo_rows() -> list[dict]:
    """64 prompts x 8 rollouts of 8-30 steps: rollouts 5-7 repeat rollouts 0-2 of their prompt,
    and every 4th prompt's rollout 4 repeats its rollout 0 (early-training duplication)."""
    rng = random.Random(1)
    rows = []
    for p in range(64):
        sols = []
        for _ in range(5):
            steps = []
            for k in range(rng.randint(8, 30)):
                a, b = rng.randint(1, 999), rng.randint(1, 999)
                steps.append(f"Step {k + 1}: Check: {a} + {b} = {a + b if rng.random() > 0.05 else a + b + 1}.")
            steps.append(f"The answer is \\boxed{{{rng.randint(1, 2000)}}}.")
            sols.append("\n\n".join(steps))
        for r in range(8):
            k = r - 5 if r >= 5 else r
            k = 0 if (p % 4 == 0 and r == 4) else k
            rows.append({"id": f"{p}-{r}", "group": f"p{p}", "item": {"answer": str(p)},
                         "sample": {"output_text": sols[k]}})
    return rows


def grpo(referee: str, servers: dict, delay: int, tmp: Path) -> dict:
    rows = grpo_rows()
    data = tmp / "grpo.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    distinct = len({r["sample"]["output_text"] for r in rows})
    base = servers[delay]
    root = root_of(base)
    out = {"samples": len(rows), "distinct_completions": distinct, "delay_ms": delay, "runs": {}}
    for api in APIS:
        cache_file = tmp / f"grpo_{api}.redb"
        res = {}
        for label, cache in [("cache off", "{backend: off}"),
                             ("file cache, cold (in-batch dedup)", f'{{backend: file, path: "{cache_file}"}}'),
                             ("file cache, warm (next step, same batch)", f'{{backend: file, path: "{cache_file}"}}')]:
            spec = tmp / f"grpo_{api}.yaml"
            spec.write_text(spec_text(base, api, {}, cache))
            http("POST", root + "/reset")
            wall, summary = score(referee, spec, data)
            stats = http("GET", root + "/stats")
            j = summary.get("judge") or {}
            res[label] = {"requests": stats["requests"], "texts_sent": sum(stats["batches"]),
                          "judge_calls": j.get("judge_calls"), "cache_hits": j.get("cache_hits"), "wall_s": wall}
        out["runs"][api] = res
    return out


def tables(res: dict) -> str:
    lines = []
    if "batching" in res:
        lines += ["", "| samples | API | batch setting | server delay ms | requests | texts/request mean (max) | requests per 1,000 samples | wall s |",
                  "|---:|---|---|---:|---:|---:|---:|---:|"]
        for c in res["batching"]:
            lines.append(f"| {c['samples']:,} | {c['api']} | {c['setting']} | {c['delay_ms']} | {c['requests']:.0f} | "
                         f"{c['texts_per_request_mean']:.1f} ({c['texts_per_request_max']}) | {c['requests_per_1000_samples']:.1f} | {c['wall_s']:.2f} |")
    if "overhead" in res:
        lines += ["", "| server | API | path | median ms (whole batch) | requests | ms/sample | ms/request | × raw | added ms/sample |",
                  "|---|---|---|---:|---:|---:|---:|---:|---:|"]
        for key, o in res["overhead"].items():
            server, api = key.split("/")
            n = o["samples"]
            raw = o["raw"]["ms"]
            for p, name in [("raw", "raw reqwest loop (Referee's bodies)"), ("pool", "`Pool::step_rewards`"),
                            ("score", "`score::samples` (whole prm spec)")]:
                ms, rq = o[p]["ms"], o[p]["requests"]
                lines.append(f"| {server} | {api} | {name} | {ms:.1f} | {rq:.0f} | {ms / n:.4f} | {ms / max(rq, 1):.2f} | "
                             f"{ms / raw:.2f} | {(ms - raw) / n:+.4f} |")
    if "grpo" in res:
        g = res["grpo"]
        lines += ["", f"GRPO batch: {g['samples']} samples, {g['distinct_completions']} distinct completions, server delay {g['delay_ms']} ms",
                  "", "| API | cache | requests | texts sent | judge calls | cache hits | wall s |", "|---|---|---:|---:|---:|---:|---:|"]
        for api, runs in g["runs"].items():
            for label, r in runs.items():
                lines.append(f"| {api} | {label} | {r['requests']} | {r['texts_sent']} | {r['judge_calls']} | {r['cache_hits']} | {r['wall_s']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default="1000,10000")
    ap.add_argument("--delay", type=float, default=0.02)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--referee", default=str(target / "release" / "referee"))
    ap.add_argument("--build", choices=["auto", "always", "never"], default="auto")
    ap.add_argument("--only", default="batching,overhead,grpo")
    ap.add_argument("--json")
    a = ap.parse_args()
    only = set(a.only.split(","))
    sizes = [int(s) for s in a.samples.split(",")]
    if a.build == "always" or (a.build == "auto" and not os.path.exists(a.referee)):
        subprocess.run(["cargo", "build", "--release", "-p", "referee-cli"], cwd=ROOT, check=True)
    procs, servers = [], {}
    try:
        for d in [0.0, a.delay]:
            p, base = start_server(d)
            procs.append(p)
            servers[round(d * 1000)] = base
        res = {"load_average_start": os.getloadavg(), "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()}
        with tempfile.TemporaryDirectory(prefix="referee-prm-bench-") as tmp:
            tmp = Path(tmp)
            if "batching" in only:
                res["batching"] = batching(a.referee, servers, sizes, a.runs, tmp)
            if "overhead" in only:
                res["overhead"] = overhead(servers, min(sizes), a.rounds)
            if "grpo" in only:
                res["grpo"] = grpo(a.referee, servers, round(a.delay * 1000), tmp)
        res["load_average_end"] = os.getloadavg()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))
    print(tables(res))
    print(f"\nload average: start {res['load_average_start']}, end {res['load_average_end']}")


if __name__ == "__main__":
    main()
