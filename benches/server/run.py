#!/usr/bin/env python3
"""Load test: `referee serve` against a FastAPI reward server doing the same rule (issue 9).

    python3 benches/server/run.py [--seconds 10] [--rounds 3] [--connections 16] [--batch 32]

Builds the release CLI and the load generator (`cargo bench -p referee-server --bench load`,
not a test), creates ~/.cache/referee/server-bench-venv (fastapi, uvicorn, pinned) once, then for
each round starts each server on a free loopback port, drives its `/get_reward` with the same
closed-loop load (same requests, every answer checked), stops it, and prints a Markdown table
of medians over the rounds. Referee runs with its defaults; uvicorn with --workers equal to the
number of CPUs (its best case on this machine).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("REFEREE_CACHE_DIR", Path.home() / ".cache/referee"))
VENV = CACHE / "server-bench-venv"
PINS = ["fastapi==0.121.3", "uvicorn==0.38.0"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, path="/healthz", method="GET"):
    for _ in range(300):
        try:
            if method == "GET":
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1)
            else:
                req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=b'{"query": []}',
                                             headers={"Content-Type": "application/json"})
                urllib.request.urlopen(req, timeout=1)
            return
        except Exception:
            time.sleep(0.1)
    raise SystemExit(f"server on {port} did not come up")


def ensure_venv():
    py = VENV / "bin/python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", *PINS], check=True)
    return py


def load(url, args):
    env = dict(os.environ, REFEREE_LOAD_URL=url, REFEREE_LOAD_CONNECTIONS=str(args.connections),
               REFEREE_LOAD_BATCH=str(args.batch), REFEREE_LOAD_SECONDS=str(args.seconds))
    out = subprocess.run(["cargo", "bench", "-q", "-p", "referee-server", "--bench", "load"], cwd=ROOT, env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "referee-cli"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "bench", "-q", "-p", "referee-server", "--bench", "load", "--no-run"], cwd=ROOT, check=True)
    py = ensure_venv()
    ncpu = os.cpu_count() or 2
    rows = {"referee": [], "fastapi": []}
    for _ in range(args.rounds):
        port = free_port()
        srv = subprocess.Popen([ROOT / "target/release/referee", "serve", "--port", str(port), "--spec",
                                f"default={ROOT / 'benches/server/spec.yaml'}"], stdout=subprocess.DEVNULL)
        try:
            wait_ready(port)
            rows["referee"].append(load(f"http://127.0.0.1:{port}/get_reward", args))
        finally:
            srv.terminate()
            srv.wait()
        port = free_port()
        srv = subprocess.Popen([VENV / "bin/uvicorn", "fastapi_app:app", "--host", "127.0.0.1", "--port", str(port),
                                "--workers", str(ncpu), "--log-level", "warning"], cwd=ROOT / "benches/server",
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, "/get_reward", "POST")
            rows["fastapi"].append(load(f"http://127.0.0.1:{port}/get_reward", args))
        finally:
            srv.terminate()
            srv.wait()
    print(json.dumps(rows, indent=1))
    med = {k: {m: statistics.median(r[m] for r in v) for m in ["samples_per_s", "requests_per_s", "p50_ms", "p99_ms"]}
           for k, v in rows.items()}
    wrong = {k: sum(r["answers_with_wrong_rewards"] for r in v) for k, v in rows.items()}
    print(f"\n{args.connections} connections, {args.batch} samples per request, {args.seconds:.0f} s per run, "
          f"{args.rounds} rounds (medians)\n")
    print("| server | samples/s | requests/s | p50 ms | p99 ms | answers with a wrong reward |\n|---|---:|---:|---:|---:|---:|")
    for k in ["referee", "fastapi"]:
        m = med[k]
        print(f"| {k} | {m['samples_per_s']:,.0f} | {m['requests_per_s']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {wrong[k]} |")
    print(f"\nReferee ÷ FastAPI: {med['referee']['samples_per_s'] / med['fastapi']['samples_per_s']:.1f}× samples/s")


if __name__ == "__main__":
    main()
