#!/usr/bin/env python3
"""Writes the process-reward benchmark's rows: N completions of 8 to 30 steps each (blank-line
paragraphs, "Step k: ..."), about one in five with a step that says it is wrong and one in ten
with a repeated step, each with a small item. Seeded: the same file on every machine.

Usage: python3 benches/steps/gen.py [--rows 100000] -o benches/data/steps_100k.jsonl
"""

from __future__ import annotations

import argparse
import json
import random

PHRASES = [
    "We add {a} and {b} to get {c}.",
    "Multiplying {a} by {b} gives {c}.",
    "So the remaining amount is {c}, since {a} minus {b} is that.",
    "Check: {a} + {b} = {c}, which matches.",
    "Therefore the total after this step is {c}.",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    rng = random.Random(0)
    with open(a.output, "w") as out:
        for i in range(a.rows):
            n = rng.randint(8, 30)
            steps = []
            for k in range(n):
                x, y = rng.randint(1, 999), rng.randint(1, 999)
                steps.append(f"Step {k + 1}: " + rng.choice(PHRASES).format(a=x, b=y, c=x + y))
            if rng.random() < 0.2:
                steps[rng.randrange(n)] += " Wait, that is wrong."
            if rng.random() < 0.1:
                j = rng.randrange(n - 1)
                steps[j + 1] = steps[j]
            steps.append(f"The answer is \\boxed{{{rng.randint(1, 2000)}}}.")
            row = {"id": i, "item": {"answer": str(rng.randint(1, 2000))},
                   "sample": {"output_text": "\n\n".join(steps)}}
            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
