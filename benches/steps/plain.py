#!/usr/bin/env python3
"""The process-reward benchmark's checks written plainly in Python (stdlib only): each
completion cut at blank lines, steps shorter than 8 characters merged into their neighbour, a
step repeating an earlier one (case, spacing and its "Step k:" ignored) scored 0, a step that
says "wrong" scored 0, others 1; the reward is the minimum, with one value per step written out
as Referee's step_rewards are (char spans, value). What benches/steps/spec.yaml does.

Usage: python3 benches/steps/plain.py DATA [-o OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import sys

BREAK = re.compile(r"\n[ \t\r]*\n")
WRONG = re.compile(r"(?i)\bwrong\b")
MARKER = re.compile(r"(?i)^(?:[*#]+\s*)?(?:step\s*\d+\s*[:.)]?|\d+[.)]|\(\d+\))\s*[*#]*\s*")


def steps(text: str) -> list[tuple[int, int]]:
    spans, at = [], 0
    for m in BREAK.finditer(text):
        spans.append((at, m.start()))
        at = m.end()
    spans.append((at, len(text)))
    out: list[tuple[int, int]] = []
    carry = None
    for a, b in spans:
        seg = text[a:b]
        a += len(seg) - len(seg.lstrip())
        b = a + len(seg.strip())
        if b <= a:
            continue
        if b - a < 8:
            if out:
                out[-1] = (out[-1][0], b)
            elif carry is None:
                carry = a
            continue
        out.append((carry if carry is not None else a, b))
        carry = None
    if carry is not None:
        out.append((carry, len(text.rstrip())))
    return out


def score(text: str) -> tuple[float, list]:
    seen = set()
    values = []
    for a, b in steps(text):
        s = text[a:b]
        m = MARKER.match(s)
        key = " ".join(s[m.end():].split()).lower() if m else " ".join(s.split()).lower()
        if key and key in seen:
            v = 0.0
        else:
            seen.add(key)
            v = 0.0 if WRONG.search(s) else 1.0
        values.append({"start": a, "end": b, "value": v})
    return (min(v["value"] for v in values) if values else 0.0), values


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("-o", "--output", default="/dev/null")
    a = ap.parse_args()
    with open(a.data) as f, open(a.output, "w") as out:
        for line in f:
            row = json.loads(line)
            reward, values = score(row["sample"]["output_text"])
            out.write(json.dumps({"id": row["id"], "reward": reward, "step_rewards": values}) + "\n")


if __name__ == "__main__":
    sys.exit(main())
