#!/usr/bin/env python3
"""SandboxFusion (bytedance) on the code_exec problem set: one /run_code request per test, the
way verl's sandbox_fusion client calls it, in `isolation: none` (SandboxFusion's default
config, `local.yaml`, which its Docker image also runs).

SandboxFusion is not installable as a server from PyPI: `pip download sandbox-fusion` (0.1.0 to
0.3.7) gives the HTTP client only (sandbox_fusion/{client,async_client,models,...}.py, no
`sandbox/server`, no runners). The server needs a source tree of the repository. This script
takes one with --src (default ~/.cache/referee/sandboxfusion-src, or $SANDBOXFUSION_SRC): a
checkout of bytedance/SandboxFusion, or the copy assembled from the public code index that the
Referee benchmarks used (its PROVENANCE.md lists what is verbatim). With no source tree it says
so and prints the figures measured in the research notes, labelled "from notes, not this run".

What it does:
  1. a virtualenv at ~/.cache/referee/sandboxfusion-venv (created once, /usr/bin/python3) with the
     server's dependencies from PyPI, pinned inside the ranges of SandboxFusion's pyproject.toml
     (fastapi ^0.103.1, uvicorn[standard] 0.25.0, pydantic >=2.4,<2.7, structlog ^23.1, psutil
     ^5.9.8, pyyaml);
  2. the conda stand-in: SandboxFusion's python runner finds a conda root by walking up from
     sys.executable to a directory holding `condabin/`, then runs `source ROOT/bin/activate
     sandbox-runtime && which python`. The venv gets a `condabin/` marker and an `activate` that
     puts `sandbox-runtime/bin` (whose `python` is a symlink to /usr/bin/python3) first on PATH,
     so solutions run under the same interpreter as the subprocess harness;
  3. the server: `python -m uvicorn sandbox.server.server:app --host 127.0.0.1 --port P
     [--workers W]` in the source tree, SANDBOX_CONFIG=local, HOME set to an empty directory
     (uvloop hands the child a socket as stdin, and bash then sources ~/.bashrc: on this
     machine that would put the pyenv shim in front of the runtime python), logs to a file;
  4. for each --concurrency C: C client threads, each with a keep-alive HTTP connection, take
     the next test and POST {"code", "stdin", "language": "python", "run_timeout": 10,
     "compile_timeout": 10, "memory_limit_MB": 1024} (verl's defaults) to /run_code. Call-style
     tests send the solution plus the same JSON driver as the subprocess harness. Verdict:
     run_result TimeLimitExceeded -> timeout, non-zero return code -> runtime_error, SandboxError
     -> error, else the same comparison as the other harnesses.
  5. reports tests/s (all tests / wall time of the client loop), per-request p50/p99, verdicts
     and agreement with the generator's `expected`; stops the server (its process group).

Usage: python3 benches/code/sandboxfusion_bench.py ROWS.jsonl [--concurrency 1,8] [--workers 1]
           [--src DIR] [--limit N] [--json] [--skip-install]
Exit status: 0 ok, 1 verdicts differ from `expected`, 3 SandboxFusion not runnable here.
Stdlib only on the client side; the server's packages live in the venv.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from subprocess_harness import CALL_DRIVER, extract_last_block, load_rows, norm_lines, percentile  # noqa: E402

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "referee")
VENV = os.path.join(CACHE, "sandboxfusion-venv")
DEFAULT_SRC = os.environ.get("SANDBOXFUSION_SRC", os.path.join(CACHE, "sandboxfusion-src"))
REQUIREMENTS = [
    "pydantic==2.6.4",
    "fastapi==0.103.2",
    "uvicorn[standard]==0.25.0",
    "structlog==23.3.0",
    "psutil==5.9.8",
    "pyyaml==6.0.2",
]
RUNTIME_PYTHON = "/usr/bin/python3"

# From /work/shared/notes/code-anchors.md §4 (2 vCPU, shared box, load 3-18; aiohttp client,
# a+b with stdin "3 4", 60 requests at concurrency 1 and 180 at 8; 3 interleaved rounds).
NOTES_FIGURES = [
    {"harness": "sandboxfusion-none", "concurrency": 1, "tests_per_s": 28, "p50_ms": 36},
    {"harness": "sandboxfusion-none", "concurrency": 8, "tests_per_s": 37, "p50_ms": 217},
    {"harness": "sandboxfusion-lite", "concurrency": 1, "tests_per_s": 3.1, "p50_ms": 329},
    {"harness": "sandboxfusion-lite", "concurrency": 8, "tests_per_s": 5.0, "p50_ms": 1564},
]

NOT_RUNNABLE = """SandboxFusion: not runnable here: no source tree at {src}.
  PyPI has the client only: `pip download --no-deps sandbox-fusion` (0.3.7; 0.1.0 too) holds
  sandbox_fusion/{{__init__,async_client,client,common,config,models}}.py and no server
  (no sandbox/server/server.py, no sandbox/runners). The server needs a checkout of
  bytedance/SandboxFusion (pass --src DIR or set SANDBOXFUSION_SRC)."""


def have_source(src: str) -> bool:
    return all(os.path.isfile(os.path.join(src, p)) for p in
               ("sandbox/server/server.py", "sandbox/server/sandbox_api.py", "sandbox/runners/base.py",
                "sandbox/runners/major.py", "sandbox/configs/run_config.py"))


def ensure_venv(skip_install: bool) -> str:
    py = os.path.join(VENV, "bin", "python")
    marker = os.path.join(VENV, ".referee-requirements")
    want = "\n".join(REQUIREMENTS)
    if not skip_install:
        if not os.path.exists(py):
            subprocess.run([RUNTIME_PYTHON, "-m", "venv", VENV], check=True)
        if not os.path.exists(marker) or open(marker).read() != want:
            subprocess.run([py, "-m", "pip", "install", "-q", *REQUIREMENTS], check=True)
            with open(marker, "w") as f:
                f.write(want)
    # the conda stand-in (see the module docstring, step 2)
    os.makedirs(os.path.join(VENV, "condabin"), exist_ok=True)
    rt_bin = os.path.join(VENV, "sandbox-runtime", "bin")
    os.makedirs(rt_bin, exist_ok=True)
    link = os.path.join(rt_bin, "python")
    if not os.path.islink(link) or os.readlink(link) != RUNTIME_PYTHON:
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(RUNTIME_PYTHON, link)
    activate = os.path.join(VENV, "bin", "activate")
    shim = ("# Referee bench: conda stand-in for SandboxFusion's get_python_rt_env\n"
            f'export PATH="{rt_bin}:$PATH"\n')
    if not os.path.exists(activate) or open(activate).read() != shim:
        if os.path.exists(activate) and not os.path.exists(activate + ".venv"):
            os.rename(activate, activate + ".venv")
        with open(activate, "w") as f:
            f.write(shim)
    return py


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, py: str, src: str, workers: int):
        self.port = free_port()
        self.tmp = tempfile.mkdtemp(prefix="sfbench-")
        home = os.path.join(self.tmp, "home")
        os.makedirs(home)
        env = dict(os.environ, SANDBOX_CONFIG="local", HOME=home)
        cmd = [py, "-m", "uvicorn", "sandbox.server.server:app", "--host", "127.0.0.1", "--port", str(self.port)]
        if workers > 1:
            cmd += ["--workers", str(workers)]
        self.log_path = os.path.join(self.tmp, "server.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, cwd=src, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {open(self.log_path, errors='replace').read()[-2000:]}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/v1/ping")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError("server did not answer /v1/ping within 60 s")

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        self.log.close()
        subprocess.run(["rm", "-rf", self.tmp])


def build_requests(rows):
    """-> list of (row index, test index, request body, test)."""
    reqs = []
    for ri, row in enumerate(rows):
        code = extract_last_block(row["sample"]["output_text"])
        item = row["item"]
        for ti, t in enumerate(item["tests"]):
            if code is None:
                reqs.append((ri, ti, None, t))
                continue
            call = "fn_name" in item
            body = {
                "code": code + (CALL_DRIVER.format(fn=item["fn_name"]) if call else ""),
                "stdin": json.dumps(t["args"]) if call else t["input"],
                "language": "python",
                "compile_timeout": 10,
                "run_timeout": 10,
                "memory_limit_MB": 1024,
            }
            reqs.append((ri, ti, json.dumps(body).encode(), t))
    return reqs


def verdict_of(resp: dict, t: dict) -> str:
    if resp.get("status") == "SandboxError":
        return "error"
    rr = resp.get("run_result") or {}
    if rr.get("status") == "TimeLimitExceeded":
        return "timeout"
    if rr.get("status") != "Finished":
        return "error"
    if rr.get("return_code") != 0:
        return "runtime_error"
    out = rr.get("stdout") or ""
    if "expected" in t:
        try:
            return "passed" if json.loads(out) == t["expected"] else "wrong_answer"
        except ValueError:
            return "wrong_answer"
    return "passed" if norm_lines(out) == norm_lines(t["output"]) else "wrong_answer"


def tree_cpu(pid: int | None) -> float:
    """User + system CPU seconds of a process and its reaped children (the server and the
    bash/python of every finished run), or 0 when it cannot be read."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return 0.0


def drive(port: int, rows, reqs, concurrency: int, server_pid: int | None = None) -> dict:
    verdicts = [[None] * len(r["item"]["tests"]) for r in rows]
    lat = []
    lock = threading.Lock()
    nxt = [0]
    local = threading.local()

    def conn():
        if getattr(local, "c", None) is None:
            local.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        return local.c

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(reqs):
                return
            ri, ti, body, t = reqs[i]
            if body is None:
                verdicts[ri][ti] = "no_code"
                continue
            t0 = time.perf_counter()
            for attempt in range(2):
                try:
                    c = conn()
                    c.request("POST", "/run_code", body, {"Content-Type": "application/json"})
                    resp = json.loads(c.getresponse().read())
                    break
                except (OSError, http.client.HTTPException):
                    local.c = None
                    if attempt:
                        resp = {"status": "SandboxError"}
            dt = (time.perf_counter() - t0) * 1000.0
            v = verdict_of(resp, t)
            with lock:
                lat.append(dt)
            verdicts[ri][ti] = v

    cpu0 = tree_cpu(server_pid)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as ex:
        for f in [ex.submit(worker) for _ in range(concurrency)]:
            f.result()
    wall = time.perf_counter() - t0
    cpu = tree_cpu(server_pid) - cpu0
    lat.sort()
    counts = Counter(v for vs in verdicts for v in vs)
    mism, bad_rows = 0, []
    for row, vs in zip(rows, verdicts):
        exp = row.get("expected", {}).get("verdicts")
        if exp:
            b = sum(1 for a, c in zip(exp, vs) if a != c)
            if b:
                mism += b
                bad_rows.append(row["id"])
    n = len(reqs)
    return {
        "harness": "sandboxfusion-none",
        "concurrency": concurrency,
        "rollouts": len(rows),
        "tests": n,
        "wall_s": wall,
        "tests_per_s": n / wall,
        **({"cpu_s": cpu, "cpu_ms_per_test": cpu * 1000.0 / n} if server_pid and cpu > 0 else {}),
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "max_ms": lat[-1] if lat else float("nan"),
        "verdicts": dict(counts),
        "verdict_mismatches": mism,
        "mismatched_rows": bad_rows[:20],
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="SandboxFusion /run_code on the code_exec problem set")
    ap.add_argument("rows", help="JSONL from benches/code/gen_problems.py")
    ap.add_argument("--concurrency", default="1,8", help="comma-separated client concurrencies")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn workers (SandboxFusion's default: 1)")
    ap.add_argument("--src", default=DEFAULT_SRC, help="SandboxFusion source tree")
    ap.add_argument("--limit", type=int, default=None, help="only the first N rollouts")
    ap.add_argument("--skip-install", action="store_true")
    ap.add_argument("--json", action="store_true", help="one JSON object per concurrency on stdout")
    a = ap.parse_args(argv)

    if not have_source(a.src):
        if a.json:
            print(json.dumps({"harness": "sandboxfusion-none", "available": False,
                              "reason": NOT_RUNNABLE.format(src=a.src),
                              "from_notes": NOTES_FIGURES}))
        else:
            print(NOT_RUNNABLE.format(src=a.src))
            print("Figures from notes, not this run (shared/notes/code-anchors.md §4, a+b runs):")
            for f in NOTES_FIGURES:
                print(f"  {f['harness']} concurrency {f['concurrency']}: {f['tests_per_s']} runs/s, "
                      f"median {f['p50_ms']} ms")
        return 3

    py = ensure_venv(a.skip_install)
    rows = load_rows(a.rows, a.limit)
    reqs = build_requests(rows)
    server = Server(py, a.src, a.workers)
    worst = 0
    try:
        # one warm-up request: the first call caches get_python_rt_env (a bash + which)
        drive(server.port, rows[:1], reqs[:1], 1)
        for c in [int(x) for x in a.concurrency.split(",") if x]:
            s = drive(server.port, rows, reqs, c, server.proc.pid)
            s["uvicorn_workers"] = a.workers
            worst = max(worst, s["verdict_mismatches"])
            if a.json:
                print(json.dumps(s), flush=True)
            else:
                print(f"sandboxfusion none, concurrency {c}, {a.workers} uvicorn worker(s): {s['tests']} tests "
                      f"in {s['wall_s']:.2f} s = {s['tests_per_s']:.1f} tests/s; per request p50 "
                      f"{s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, max {s['max_ms']:.1f} ms")
                print(f"  verdicts: {s['verdicts']}; differing from the generator's: {s['verdict_mismatches']}"
                      + (f" (rows {', '.join(s['mismatched_rows'])})" if s["mismatched_rows"] else "")
                      + f"; loadavg {' '.join(s['loadavg'])}", flush=True)
    finally:
        server.stop()
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
