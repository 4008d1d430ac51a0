#!/usr/bin/env python3
"""Judge-call overhead, scaling and cache effect (issue 6). Stdlib only.

    python3 benches/judge/run.py [--rounds 5] [--delay 0.05] [--build auto|always|never]

Starts llama-server with the tiny model (scripts/judge_server.py) and scripts/fault_server.py
(`ok` mode: answers `{"result": 1}` after --delay seconds, calls handled concurrently), runs the
Rust bench `crates/referee-judge/benches/judge.rs` against them, stops both, and prints the JSON
plus a Markdown summary. See benches/judge/README.md.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--build", choices=["auto", "always", "never"], default="auto")
    args = ap.parse_args()
    subprocess.run([sys.executable, ROOT / "scripts/judge_server.py", "ensure"], check=True, stdout=subprocess.DEVNULL)
    llama = json.loads(subprocess.run([sys.executable, ROOT / "scripts/judge_server.py", "start", "--model", "tiny"],
                                      check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    slow = subprocess.Popen([sys.executable, ROOT / "scripts/fault_server.py", "--mode", "ok", "--delay", str(args.delay)],
                            stdout=subprocess.PIPE, text=True)
    slow_info = json.loads(slow.stdout.readline())
    try:
        env = dict(os.environ, REFEREE_BENCH_LLAMA=llama["base_url"], REFEREE_BENCH_SLOW=slow_info["base_url"],
                   REFEREE_BENCH_ROUNDS=str(args.rounds))
        cmd = ["cargo", "bench", "-q", "-p", "referee-judge", "--bench", "judge"]
        out = subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
        res = json.loads(out[out.index("{"):])
    finally:
        slow.kill()
        subprocess.run([sys.executable, ROOT / "scripts/judge_server.py", "stop", "--pid", str(llama["pid"])])
    print(json.dumps(res, indent=2))
    o = res["overhead"]
    print(f"\n| path | median ms/call | added over raw HTTP |\n|---|---:|---:|")
    print(f"| raw reqwest POST | {o['raw_ms']:.3f} | - |")
    print(f"| Referee `Client::chat` | {o['client_ms']:.3f} | {o['client_overhead_ms']:+.3f} |")
    print(f"| Referee `Pool` (the graders' path) | {o['pool_ms']:.3f} | {o['pool_overhead_ms']:+.3f} |")
    print(f"| a whole `score_model` sample | {o['score_model_sample_ms']:.3f} | {o['score_model_overhead_ms']:+.3f} |")
    base = res["scaling"][0]["calls_per_s"]
    print(f"\n| max_concurrency | Referee calls/s | speed-up over 1 | raw loop, same calls in flight | Referee ÷ raw |\n|---:|---:|---:|---:|---:|")
    for s in res["scaling"]:
        print(f"| {s['max_concurrency']} | {s['calls_per_s']:.1f} | {s['calls_per_s'] / base:.1f}× | {s['raw_calls_per_s']:.1f} | {s['calls_per_s'] / s['raw_calls_per_s']:.2f} |")
    g = res["grpo_batch"]
    print(f"\nGRPO batch: {g['samples']} samples, {g['distinct_completions']} distinct completions")
    print("| cache | judge calls | cache hits | seconds |\n|---|---:|---:|---:|")
    for k in ["cache_off", "cache_cold_in_batch_dedup", "cache_warm_next_step"]:
        print(f"| {k} | {g[k]['judge_calls']} | {g[k]['cache_hits']} | {g[k]['seconds']:.2f} |")


if __name__ == "__main__":
    main()
