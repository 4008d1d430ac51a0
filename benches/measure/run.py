#!/usr/bin/env python3
"""measure throughput: a small numeric verifier against today's code_exec on the same programs.

Rows (generated here, seed --seed): a stdin program that sums the numbers it reads, right or off
by one, as a chat answer with one fenced block. Three specs score the same rows:

  code_exec        one stdin/stdout test per row (the program's output against the sum): one
                   sandboxed run per row, the verdict compared outside the sandbox.
  measure          the program runs with the numbers on stdin, then a verifier (the spec's
                   Python) reads its stdout from the outcome and reports the absolute error,
                   mapped by thresholds: one sandboxed run per row holding both processes.
  measure, text    no program: the verifier reads the answer text itself (the number).

Each spec is scored by `target/release/referee score SPEC ROWS -o /dev/null` (REFEREE_SANDBOX_SLOTS
= --slots, default the number of cores), --rounds interleaved rounds; the figure is rows per
second of the whole command's wall clock (start-up included, the same for all three), median
over rounds, and the ratio to code_exec is of the medians of this one invocation. One extra run
per spec checks the rewards: every right program must score 1 and every wrong one 0, on all three.

Usage: python3 benches/measure/run.py [--n 400] [--rounds 5] [--slots N] [--referee-bin PATH]
(build first: cargo build --release -p referee-cli). Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """Read the numbers and print their sum.

```python
import sys
nums = [int(x) for x in sys.stdin.read().split()]
print(sum(nums){off})
```
"""

def verifier(source: str) -> str:
    """A verifier reporting the absolute error of the number at the end of `source`."""
    return ("import json, sys\n"
            "data = json.load(sys.stdin)\n"
            "try:\n"
            f"    got = int({source}.split()[-1])\n"
            "except (ValueError, IndexError):\n"
            "    print('null')\n"
            "else:\n"
            "    print(abs(got - data['item']['sum']))\n")


EXACT = {"thresholds": {"better": "lower", "steps": [[0, 1.0]]}}

SPECS = {
    "code_exec": {
        "type": "code_exec",
        "language": "python",
        "tests": "{{item.tests}}",
        "limits": {"time": 2},
    },
    "measure": {
        "type": "measure",
        "program": {"language": "python", "stdin": "{{item.stdin}}"},
        "verifier": verifier("data['program']['stdout']"),
        "reward": EXACT,
        "limits": {"time": 2},
    },
    "measure, text": {
        "type": "measure",
        "verifier": verifier("data['output']"),
        "reward": EXACT,
        "limits": {"time": 2},
    },
}


def rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        nums = [rng.randint(-1000, 1000) for _ in range(rng.randint(3, 30))]
        right = rng.random() < 0.5
        stdin = " ".join(map(str, nums)) + "\n"
        total = sum(nums)
        out.append({
            "id": f"r{i}",
            "right": right,
            "item": {"stdin": stdin, "sum": total,
                     "tests": [{"input": stdin, "output": f"{total}\n"}]},
            "text": f"The sum is {total if right else total + 1}",
            "code": PROGRAM.format(off="" if right else " + 1"),
        })
    return out


def write_rows(rs: list[dict], kind: str, path: str) -> None:
    with open(path, "w") as f:
        for r in rs:
            text = r["text"] if kind == "measure, text" else r["code"]
            f.write(json.dumps({"id": r["id"], "item": r["item"],
                                "sample": {"output_text": text}}) + "\n")


def score(binary: str, spec: str, data: str, slots: int, out: str = "/dev/null") -> float:
    env = dict(os.environ, REFEREE_SANDBOX_SLOTS=str(slots))
    t0 = time.perf_counter()
    subprocess.run([binary, "score", spec, data, "-o", out, "--quiet"], env=env, check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--slots", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--referee-bin", default=os.path.join(ROOT, "target", "release", "referee"))
    a = ap.parse_args()
    if not os.path.exists(a.referee_bin):
        print(f"no {a.referee_bin}: cargo build --release -p referee-cli", file=sys.stderr)
        return 2
    rs = rows(a.n, a.seed)
    tmp = tempfile.mkdtemp(prefix="referee-measure-bench-")
    paths = {}
    for kind, spec in SPECS.items():
        slug = kind.replace(", ", "_")
        sp, dp = os.path.join(tmp, f"{slug}.json"), os.path.join(tmp, f"{slug}.jsonl")
        with open(sp, "w") as f:
            json.dump(spec, f)
        write_rows(rs, kind, dp)
        paths[kind] = (sp, dp)
    # Agreement first: every right answer 1, every wrong one 0, on every spec.
    for kind, (sp, dp) in paths.items():
        out = os.path.join(tmp, "out.jsonl")
        score(a.referee_bin, sp, dp, a.slots, out)
        got = [json.loads(l) for l in open(out)]
        bad = [(r["id"], g.get("reward"), g.get("status")) for r, g in zip(rs, got)
               if g.get("status") != "ok" or g.get("reward") != (1.0 if r["right"] else 0.0)]
        if len(got) != len(rs) or bad:
            print(f"{kind}: {len(bad)} rows disagree, e.g. {bad[:3]}", file=sys.stderr)
            return 1
    walls = {k: [] for k in paths}
    for i in range(a.rounds):
        kinds = list(paths)
        kinds = kinds[i % len(kinds):] + kinds[:i % len(kinds)]
        for kind in kinds:
            walls[kind].append(score(a.referee_bin, *paths[kind], a.slots))
    base = statistics.median(walls["code_exec"])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{a.n} rows, {a.rounds} rounds, {a.slots} slots")
    print("| spec | rows/s (median) | range | wall vs code_exec |")
    print("|---|---|---|---|")
    for kind, w in walls.items():
        m = statistics.median(w)
        print(f"| {kind} | {a.n / m:.0f} | {a.n / max(w):.0f}–{a.n / min(w):.0f} | {m / base:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
