#!/usr/bin/env python3
"""The trajectory checks of benches/trajectory/spec.yaml written plainly in Python (stdlib only,
no Referee): what an RL engineer writes today over the same JSONL. One reward per row, 1 or 0:

  patch audit   no file written outside src/, no test file, conftest or CI config touched, no
                skip/xfail marker added, no sys.exit / os._exit added
  tool rules    authenticate succeeded before book_table; book_table succeeded; no call to
                delete_account; at most 12 calls; no identical call (name + arguments) twice;
                at most one call whose result was an error
  final state   every field of item.expected_state equals the state's (bookings element by
                element, the list lengths equal; booking ids and timestamps ignored)

Usage: python3 benches/trajectory/plain.py DATA [-o OUT]   (prints rows/s on stderr)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

TEST_PATH = re.compile(r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.py$|conftest\.py$|pytest\.ini$|tox\.ini$|setup\.cfg$|\.github/)")
SKIP = re.compile(r"@pytest\.mark\.(skip|skipif|xfail)|pytest\.skip\(|unittest\.skip|skipTest\(")
EXIT = re.compile(r"\b(sys\.exit|os\._exit)\s*\(")
AUTH_BEFORE = {"book_table", "cancel_booking", "update_profile"}


def patch_ok(diff: str) -> bool:
    path = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            path = path[2:] if path.startswith("b/") else path
            if path != "/dev/null" and (not path.startswith("src/") or ".." in path or TEST_PATH.search(path)):
                return False
        elif line.startswith("--- "):
            p = line[4:].strip()
            p = p[2:] if p.startswith("a/") else p
            if p != "/dev/null" and TEST_PATH.search(p):
                return False
        elif line.startswith("+") and not line.startswith("+++"):
            if SKIP.search(line) or EXIT.search(line):
                return False
    return True


def tools_ok(messages: list) -> bool:
    calls, results = [], {}
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                f = c.get("function", c)
                calls.append((c.get("id"), f.get("name"), f.get("arguments", "{}")))
        elif m.get("role") == "tool":
            results.setdefault(m.get("tool_call_id"), bool(m.get("is_error")))
    if len(calls) > 12:
        return False
    seen, authed, booked, errors = set(), False, False, 0
    for cid, name, args in calls:
        try:
            key = (name, json.dumps(json.loads(args), sort_keys=True))
        except ValueError:
            key = (name, args)
        if key in seen:
            return False
        seen.add(key)
        ok = cid in results and not results[cid]
        errors += cid in results and results[cid]
        if name == "delete_account":
            return False
        if name in AUTH_BEFORE and not authed:
            return False
        authed |= name == "authenticate" and ok
        booked |= name == "book_table" and ok
    return booked and errors <= 1


IGNORED = {"id", "created_at"}


def matches(want, got) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and matches(v, got[k]) for k, v in want.items() if k not in IGNORED)
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(matches(w, g) for w, g in zip(want, got))
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    return want == got


def reward(row: dict) -> float:
    s, item = row["sample"], row["item"]
    state = s.get("state") or {}
    if not patch_ok(state.get("diff", "")):
        return 0.0
    if not tools_ok(s.get("messages") or []):
        return 0.0
    return float(matches(item["expected_state"], state))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("-o", "--output", default="/dev/null")
    a = ap.parse_args()
    t0 = time.perf_counter()
    n = 0
    with open(a.data) as f, open(a.output, "w") as out:
        for line in f:
            row = json.loads(line)
            out.write(json.dumps({"id": row.get("id"), "reward": reward(row)}) + "\n")
            n += 1
    dt = time.perf_counter() - t0
    print(f"{n} rows in {dt:.3f}s: {n / dt:,.0f} rows/s", file=sys.stderr)


if __name__ == "__main__":
    main()
