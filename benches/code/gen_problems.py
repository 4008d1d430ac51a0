#!/usr/bin/env python3
"""Deterministic generator of a code-execution problem set for the code_exec benchmarks.

Writes JSONL rows in Referee's row format, one row per rollout (policy output):

    {"id": "r0000", "group": "p000",
     "item":   {"kind": "aplusb", "tests": [...], "fn_name": "add"  (call style only)},
     "sample": {"output_text": "...```python\\n<code>\\n```\\n"},
     "expected": {"variant": "aplusb/correct_sys", "verdicts": ["passed", ...], "reward": 1.0}}

- Problems: 5 kinds (a+b, sum of a list, sorting, a string op, coin-change DP). Each problem
  instance has --tests seeded tests and is answered by --group rollouts (a GRPO group).
- Rollouts: ~75% correct solutions (several styles each), ~25% wrong ones: wrong on every test,
  wrong on some tests only (partial credit), or crashing (runtime_error). About 10% of outputs
  carry an earlier draft block before the final one (extraction takes the LAST block).
- --style stdio: tests `[{"input": "...", "output": "..."}]`, the program reads stdin.
  --style call:  tests `[{"args": [...], "expected": ...}]` + item.fn_name; the code defines a
  function (or a `class Solution` method) of that name.
- `expected` holds the true per-test verdicts, computed here by running every distinct
  (solution, test) pair once in-process (trusted generator code: no sandbox needed) with the
  code_exec comparison rules (stdio: line-wise, trailing spaces and trailing blank lines
  ignored; call: JSON-structural equality). Harnesses check their verdicts against it.
  Timeouts are never generated: they would make every harness measure its time limit.

Same seed and flags -> byte-identical file. Stdlib only.

Usage: python3 benches/code/gen_problems.py OUT.jsonl [--n 200] [--tests 10] [--group 8]
           [--seed 20261201] [--style stdio|call] [--wrong-rate 0.25]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
from collections import Counter

# ------------------------------------------------------------------ test generators (seeded)


def tests_aplusb(rng: random.Random, k: int):
    out = []
    for i in range(k):
        if i < k // 2:  # half non-negative: the abs() variant passes those
            a, b = rng.randint(0, 10**9), rng.randint(0, 10**9)
        else:
            a, b = rng.randint(-(10**9), 10**9), rng.randint(-(10**9), -1)
        out.append(((a, b), a + b))
    return out


def tests_sumlist(rng: random.Random, k: int):
    out = []
    for i in range(k):
        n = rng.randint(1, 200)
        if i < k // 2:  # all positive: the "sum of positives" variant passes those
            xs = [rng.randint(1, 10**6) for _ in range(n)]
        else:
            xs = [rng.randint(-(10**6), 10**6) for _ in range(n)]
            xs[rng.randrange(n)] = -rng.randint(1, 10**6)
        out.append(((xs,), sum(xs)))
    return out


def tests_sort(rng: random.Random, k: int):
    out = []
    for i in range(k):
        n = rng.randint(2, 300)
        xs = [rng.randint(-1000, 1000) for _ in range(n)]
        if i < k // 3:  # already sorted: the "print as is" variant passes those
            xs.sort()
        out.append(((xs,), sorted(xs)))
    return out


VOWELS = "aeiouAEIOU"


def tests_strops(rng: random.Random, k: int):
    out = []
    lower = "abcdefghijklmnopqrstuvwxyz"
    for i in range(k):
        n = rng.randint(1, 80)
        alphabet = lower if i < k // 2 else lower + lower.upper()  # lower only: "aeiou" variant passes
        s = "".join(rng.choice(alphabet) for _ in range(n))
        out.append(((s,), [s[::-1], sum(c in VOWELS for c in s)]))
    return out


def _coin_change(coins, amount):
    inf = float("inf")
    best = [0] + [inf] * amount
    for a in range(1, amount + 1):
        for c in coins:
            if c <= a and best[a - c] + 1 < best[a]:
                best[a] = best[a - c] + 1
    return -1 if best[amount] == inf else best[amount]


def tests_coins(rng: random.Random, k: int):
    out = []
    for i in range(k):
        amount = rng.randint(1, 600)
        if i < k // 2:  # canonical coin system: greedy is right
            coins = [1, 5, 10, 25]
        else:
            coins = sorted(rng.sample(range(2, 40), rng.randint(2, 5)))
        out.append(((coins, amount), _coin_change(coins, amount)))
    return out


# stdio encodings of (args, expected)


def stdio_aplusb(args, exp):
    return f"{args[0]} {args[1]}\n", f"{exp}\n"


def stdio_list(args, exp):
    xs = args[0]
    return f"{len(xs)}\n{' '.join(map(str, xs))}\n", (
        f"{exp}\n" if not isinstance(exp, list) else f"{' '.join(map(str, exp))}\n"
    )


def stdio_strops(args, exp):
    return f"{args[0]}\n", f"{exp[0]}\n{exp[1]}\n"


def stdio_coins(args, exp):
    coins, amount = args
    return f"{len(coins)} {amount}\n{' '.join(map(str, coins))}\n", f"{exp}\n"


# ------------------------------------------------------------------ solutions
# Each kind: fn_name, test generator, stdio encoder, correct variants, wrong variants.
# Variants are (name, stdio_code, call_code).

KINDS = {
    "aplusb": {
        "fn": "add",
        "tests": tests_aplusb,
        "stdio": stdio_aplusb,
        "correct": [
            ("input", "a, b = map(int, input().split())\nprint(a + b)",
             "def add(a, b):\n    return a + b"),
            ("sys", "import sys\n\na, b = map(int, sys.stdin.read().split())\nsys.stdout.write(str(a + b) + '\\n')",
             "class Solution:\n    def add(self, a: int, b: int) -> int:\n        return a + b"),
            ("main", "def main():\n    line = input()\n    a, b = (int(t) for t in line.split())\n    print(a + b)\n\n\nif __name__ == '__main__':\n    main()",
             "from typing import List\n\n\ndef add(a: int, b: int) -> int:\n    total = a\n    total += b\n    return total"),
        ],
        "wrong": [
            ("sub", "a, b = map(int, input().split())\nprint(a - b)",
             "def add(a, b):\n    return a - b"),
            ("abs", "a, b = map(int, input().split())\nprint(abs(a) + abs(b))",
             "def add(a, b):\n    return abs(a) + abs(b)"),
            ("crash", "a, b = map(int, input().split(','))\nprint(a + b)",
             "def add(a, b):\n    return int(str(a) + ',' + str(b))"),
        ],
    },
    "sumlist": {
        "fn": "sum_list",
        "tests": tests_sumlist,
        "stdio": stdio_list,
        "correct": [
            ("builtin", "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs))",
             "def sum_list(xs):\n    return sum(xs)"),
            ("loop", "import sys\ndata = sys.stdin.read().split()\nn = int(data[0])\ntotal = 0\nfor tok in data[1:1 + n]:\n    total += int(tok)\nprint(total)",
             "def sum_list(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total"),
        ],
        "wrong": [
            ("positives", "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(x for x in xs if x > 0))",
             "def sum_list(xs):\n    return sum(x for x in xs if x > 0)"),
            ("skip_first", "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs[1:]))",
             "def sum_list(xs):\n    return sum(xs[1:])"),
        ],
    },
    "sort": {
        "fn": "sort_list",
        "tests": tests_sort,
        "stdio": stdio_list,
        "correct": [
            ("sorted", "n = int(input())\nxs = list(map(int, input().split()))\nprint(*sorted(xs))",
             "def sort_list(xs):\n    return sorted(xs)"),
            ("inplace", "import sys\n\n\ndef solve():\n    data = sys.stdin.read().split()\n    xs = [int(t) for t in data[1:]]\n    xs.sort()\n    print(' '.join(map(str, xs)))\n\n\nsolve()",
             "class Solution:\n    def sort_list(self, xs):\n        ys = list(xs)\n        ys.sort()\n        return ys"),
        ],
        "wrong": [
            ("as_is", "n = int(input())\nxs = list(map(int, input().split()))\nprint(*xs)",
             "def sort_list(xs):\n    return xs"),
            ("reversed", "n = int(input())\nxs = list(map(int, input().split()))\nprint(*sorted(xs, reverse=True))",
             "def sort_list(xs):\n    return sorted(xs, reverse=True)"),
            ("repr", "n = int(input())\nxs = list(map(int, input().split()))\nprint(sorted(xs))",
             "def sort_list(xs):\n    return str(sorted(xs))"),
        ],
    },
    "strops": {
        "fn": "rev_vowels",
        "tests": tests_strops,
        "stdio": stdio_strops,
        "correct": [
            ("slice", "s = input().strip()\nprint(s[::-1])\nprint(sum(c in 'aeiouAEIOU' for c in s))",
             "def rev_vowels(s):\n    return [s[::-1], sum(c in 'aeiouAEIOU' for c in s)]"),
            ("loop", "s = input().strip()\nr = ''\nv = 0\nfor c in s:\n    r = c + r\n    if c.lower() in 'aeiou':\n        v += 1\nprint(r)\nprint(v)",
             "def rev_vowels(s):\n    v = len([c for c in s if c.lower() in 'aeiou'])\n    return [''.join(reversed(s)), v]"),
        ],
        "wrong": [
            ("lower_only", "s = input().strip()\nprint(s[::-1])\nprint(sum(c in 'aeiou' for c in s))",
             "def rev_vowels(s):\n    return [s[::-1], sum(c in 'aeiou' for c in s)]"),
            ("one_line", "s = input().strip()\nprint(s[::-1])",  # the second line is missing
             "def rev_vowels(s):\n    return s[::-1]"),
        ],
    },
    "coins": {
        "fn": "coin_change",
        "tests": tests_coins,
        "stdio": stdio_coins,
        "correct": [
            ("dp", "n, amount = map(int, input().split())\ncoins = list(map(int, input().split()))\nINF = float('inf')\nbest = [0] + [INF] * amount\nfor a in range(1, amount + 1):\n    for c in coins:\n        if c <= a and best[a - c] + 1 < best[a]:\n            best[a] = best[a - c] + 1\nprint(best[amount] if best[amount] != INF else -1)",
             "def coin_change(coins, amount):\n    INF = float('inf')\n    best = [0] + [INF] * amount\n    for a in range(1, amount + 1):\n        for c in coins:\n            if c <= a and best[a - c] + 1 < best[a]:\n                best[a] = best[a - c] + 1\n    return best[amount] if best[amount] != INF else -1"),
            ("memo", "import sys\nfrom functools import lru_cache\nsys.setrecursionlimit(10000)\nn, amount = map(int, input().split())\ncoins = tuple(map(int, input().split()))\n\n\n@lru_cache(maxsize=None)\ndef f(a):\n    if a == 0:\n        return 0\n    best = -1\n    for c in coins:\n        if c <= a:\n            r = f(a - c)\n            if r >= 0 and (best < 0 or r + 1 < best):\n                best = r + 1\n    return best\n\n\nfor a in range(amount + 1):\n    f(a)\nprint(f(amount))",
             "from functools import lru_cache\n\n\ndef coin_change(coins, amount):\n    cs = tuple(coins)\n\n    @lru_cache(maxsize=None)\n    def f(a):\n        if a == 0:\n            return 0\n        best = -1\n        for c in cs:\n            if c <= a:\n                r = f(a - c)\n                if r >= 0 and (best < 0 or r + 1 < best):\n                    best = r + 1\n        return best\n\n    for a in range(amount + 1):\n        f(a)\n    return f(amount)"),
        ],
        "wrong": [
            ("greedy", "n, amount = map(int, input().split())\ncoins = sorted(map(int, input().split()), reverse=True)\ncount = 0\nfor c in coins:\n    count += amount // c\n    amount %= c\nprint(count if amount == 0 else -1)",
             "def coin_change(coins, amount):\n    count = 0\n    for c in sorted(coins, reverse=True):\n        count += amount // c\n        amount %= c\n    return count if amount == 0 else -1"),
            ("no_minus_one", "n, amount = map(int, input().split())\ncoins = list(map(int, input().split()))\nbest = [0] + [10**9] * amount\nfor a in range(1, amount + 1):\n    for c in coins:\n        if c <= a:\n            best[a] = min(best[a], best[a - c] + 1)\nprint(best[amount])",
             "def coin_change(coins, amount):\n    best = [0] + [10**9] * amount\n    for a in range(1, amount + 1):\n        for c in coins:\n            if c <= a:\n                best[a] = min(best[a], best[a - c] + 1)\n    return best[amount]"),
        ],
    },
}

KIND_ORDER = ["aplusb", "sumlist", "sort", "strops", "coins"]

PREAMBLES = [
    "Let me think about the input format first.\n\nHere is my solution:\n\n",
    "We read the input, compute the answer and print it.\n\n",
    "",
    "Approach: straightforward simulation.\n\n",
]

# ------------------------------------------------------------------ ground truth (in-process)


def compare_lines(got: str, want: str) -> bool:
    """code_exec `compare: {mode: lines}`: trailing spaces per line and trailing blank lines
    ignored; all lines compared (never stops at the shorter output)."""

    def norm(s: str):
        lines = [ln.rstrip() for ln in s.replace("\r\n", "\n").split("\n")]
        while lines and lines[-1] == "":
            lines.pop()
        return lines

    return norm(got) == norm(want)


def run_stdio_inproc(code: str, stdin: str) -> tuple[str, str]:
    """-> (verdict, stdout). Trusted code only (the generator's own variants)."""
    out = io.StringIO()
    old_in = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(code, "<sol>", "exec"), {"__name__": "__main__"})
            except SystemExit as e:
                if e.code not in (None, 0):
                    return "runtime_error", out.getvalue()
            except Exception:  # noqa: BLE001
                return "runtime_error", out.getvalue()
    finally:
        sys.stdin = old_in
    return "ok", out.getvalue()


def canon(v):
    return json.loads(json.dumps(v))


def run_call_inproc(code: str, fn: str, args) -> tuple[str, object]:
    g = {"__name__": "__sol__"}
    try:
        exec(compile(code, "<sol>", "exec"), g)
        f = g.get(fn)
        if f is None and "Solution" in g:
            f = getattr(g["Solution"](), fn)
        res = f(*json.loads(json.dumps(args)))
        return "ok", canon(res)
    except Exception:  # noqa: BLE001
        return "runtime_error", None


# ------------------------------------------------------------------ main


def fence(code: str) -> str:
    return f"```python\n{code}\n```"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="output JSONL path (generated data: never commit it)")
    ap.add_argument("--n", type=int, default=200, help="rollouts (rows)")
    ap.add_argument("--tests", type=int, default=10, help="tests per problem")
    ap.add_argument("--group", type=int, default=8, help="rollouts per problem (GRPO group)")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--style", choices=["stdio", "call"], default="stdio")
    ap.add_argument("--wrong-rate", type=float, default=0.25)
    a = ap.parse_args(argv)

    rng = random.Random(a.seed)
    n_problems = (a.n + a.group - 1) // a.group
    problems = []
    for p in range(n_problems):
        kind = KIND_ORDER[p % len(KIND_ORDER)]
        spec = KINDS[kind]
        cases = spec["tests"](random.Random(rng.getrandbits(64)), a.tests)
        if a.style == "stdio":
            tests = []
            for args, exp in cases:
                i, o = spec["stdio"](args, exp)
                tests.append({"input": i, "output": o})
        else:
            tests = [{"args": list(args), "expected": canon(exp)} for args, exp in cases]
        problems.append((kind, tests))

    cache: dict = {}  # (problem, variant) -> verdicts

    def verdicts_for(pi: int, kind: str, tests, vname: str, code: str):
        key = (pi, vname)
        if key not in cache:
            vs = []
            for t in tests:
                if a.style == "stdio":
                    st, got = run_stdio_inproc(code, t["input"])
                    vs.append(st if st != "ok" else ("passed" if compare_lines(got, t["output"]) else "wrong_answer"))
                else:
                    st, got = run_call_inproc(code, KINDS[kind]["fn"], t["args"])
                    vs.append(st if st != "ok" else ("passed" if got == t["expected"] else "wrong_answer"))
            cache[key] = vs
        return cache[key]

    counts = Counter()
    verdict_counts = Counter()
    with open(a.out, "w", encoding="utf-8") as f:
        for r in range(a.n):
            pi = r // a.group
            kind, tests = problems[pi]
            spec = KINDS[kind]
            wrong = rng.random() < a.wrong_rate
            pool = spec["wrong"] if wrong else spec["correct"]
            vname, stdio_code, call_code = pool[rng.randrange(len(pool))]
            code = stdio_code if a.style == "stdio" else call_code
            full_name = f"{kind}/{'wrong' if wrong else 'correct'}_{vname}"
            vs = verdicts_for(pi, kind, tests, full_name, code)
            text = PREAMBLES[rng.randrange(len(PREAMBLES))]
            if rng.random() < 0.10:  # an earlier draft block; the last block is the answer
                d = spec["wrong"][rng.randrange(len(spec["wrong"]))]
                text += "First attempt:\n\n" + fence(d[1] if a.style == "stdio" else d[2])
                text += "\n\nWait, that is not right. Fixed version:\n\n"
            text += fence(code) + "\n"
            item = {"kind": kind, "tests": tests}
            if a.style == "call":
                item["fn_name"] = spec["fn"]
            row = {
                "id": f"r{r:04d}",
                "group": f"p{pi:03d}",
                "item": item,
                "sample": {"output_text": text},
                "expected": {"variant": full_name, "verdicts": vs,
                             "reward": round(vs.count("passed") / len(vs), 6)},
            }
            f.write(json.dumps(row, separators=(",", ":")) + "\n")
            counts["wrong" if wrong else "correct"] += 1
            verdict_counts.update(vs)

    total_tests = sum(verdict_counts.values())
    print(
        f"wrote {a.n} rollouts x {a.tests} tests = {total_tests} tests ({a.style}) to {a.out}: "
        f"{counts['correct']} correct / {counts['wrong']} wrong solutions; verdicts "
        + ", ".join(f"{k} {v}" for k, v in sorted(verdict_counts.items())),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
